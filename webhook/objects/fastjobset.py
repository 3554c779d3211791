"""The typed fast path of ``parse_jobset``: a well-formed JobSet decoded straight into structs.

``parse_jobset`` reads a JobSet from plain JSON (dicts and lists) and turns every odd
shape into a ``jobset-malformed`` finding. Most submissions have no odd shape, and for
them msgspec can do the type checks while it reads the bytes, skipping every field no
rule looks at (images, commands, env) instead of building dicts for them.

The structs below type each field exactly as tightly as ``parse_jobset`` requires it
(a string map is ``dict[str, str]``, a count is ``int``), and ``webhook.objects.fastbuild.build``
gives up (returns ``None``) wherever ``parse_jobset`` would report a problem or reads
something a struct cannot tell apart (``{}`` versus ``{"x": null}``). Giving up is always safe:
the caller then decodes the same bytes to plain JSON and runs ``parse_jobset``. So the
fast path answers only what the general path would answer identically;
``tests/test_fastjobset.py`` compares the two on the fixtures and the fuzz corpus.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType


class _Resources(Struct):
    requests: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None


class _Container(Struct, rename="camel"):
    name: Any = None
    resources: _Resources | None = None
    restart_policy: Any = None


class _PodSpec(Struct, rename="camel"):
    containers: list[_Container] | None = None
    init_containers: list[_Container] | None = None
    node_selector: dict[str, str] | None = None
    priority_class_name: Any = None


class _Annotated(Struct):
    annotations: dict[str, str] | None = None


class _PodTemplate(Struct):
    metadata: _Annotated | None = None
    spec: _PodSpec | None = None


class _JobSpec(Struct):
    parallelism: int | None = None
    completions: int | None = None
    template: _PodTemplate | None = None


class _JobTemplate(Struct):
    metadata: _Annotated | None = None
    spec: _JobSpec | None = None


class _ReplicatedJob(Struct):
    name: Any = None
    replicas: int | None = None
    template: _JobTemplate | None = None


class _Spec(Struct, rename="camel"):
    replicated_jobs: list[_ReplicatedJob] | UnsetType | None = UNSET
    suspend: Any = None


class _Metadata(Struct, rename="camel"):
    name: Any = None
    generate_name: Any = None
    namespace: Any = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: Any = None


class _JobSet(Struct):
    metadata: _Metadata | None = None
    spec: _Spec | None = None


#: the typed JobSet, for the review decoder that reads it in the same pass as its review
JobSetStruct = _JobSet


class _ObjectBytes(Struct):
    object: msgspec.Raw = msgspec.Raw()


class _ReviewObjectBytes(Struct):
    request: _ObjectBytes


_DECODER = msgspec.json.Decoder(_JobSet)
_PLAIN = msgspec.json.Decoder()
#: a review's ``request.object`` as bytes, everything else skipped
_OBJECT_IN_REVIEW = msgspec.json.Decoder(_ReviewObjectBytes)


class TypedJobSet:
    """A JobSet's bytes, with the typed decode when it succeeded; plain JSON on demand.

    Read with its review in one pass (``read_with_review``), it keeps the review's bytes
    instead, and finds its own in them the first time they are asked for: most requests
    never ask (only ``plain`` does, when ``build`` gave up or a rule wants a pod spec).
    """

    __slots__ = ("_plain", "_raw", "_review", "typed")

    def __init__(self, raw: bytes | memoryview | None, typed: _JobSet | None, review: bytes = b"") -> None:
        #: the object's bytes; ``None`` until asked for when it was read with its review
        self._raw = raw
        self._review = review
        self.typed = typed
        self._plain: Any = None

    @classmethod
    def read_with_review(cls, typed: _JobSet, review: bytes) -> TypedJobSet:
        """A JobSet the review decoder read in the same pass as its review (``review``, the body)."""
        return cls(None, typed, review)

    @property
    def raw(self) -> bytes | memoryview:
        """The object's JSON, as the review holds it."""
        if self._raw is None:
            self._raw = _OBJECT_IN_REVIEW.decode(self._review).request.object
        return self._raw

    @classmethod
    def decode(cls, raw: bytes | memoryview) -> TypedJobSet:
        """Raises ``msgspec.DecodeError`` when the bytes are not JSON msgspec accepts."""
        try:
            typed: _JobSet | None = _DECODER.decode(raw)
        except msgspec.ValidationError:
            typed = None
            _PLAIN.decode(raw)  # still JSON msgspec reads? (else the caller's general path)
        return cls(raw, typed)

    def plain(self) -> Any:
        """The object as ``json.loads`` would give it (decoded once, on first use).

        The typed decode skips fields no rule reads without range-checking their
        numbers, so a ``1e400`` there reaches this point: ``json.loads`` reads it (as
        ``inf``), as the general path would have.
        """
        if self._plain is None:
            try:
                self._plain = _PLAIN.decode(self.raw)
            except msgspec.DecodeError:
                self._plain = json.loads(bytes(self.raw))
        return self._plain

    def pod_spec(self, index: int) -> dict[str, Any]:
        """``spec.replicatedJobs[index]``'s pod spec as plain JSON (``{}`` when absent).

        Only asked of a JobSet ``build`` accepted, whose shape up to there is known."""
        spec = self.plain()["spec"]["replicatedJobs"][index]["template"]["spec"]["template"].get("spec")
        return spec if isinstance(spec, dict) else {}

    def ownership(self) -> Any:
        """Enough of the object for ``controlled_by_jobset``: its ``metadata.ownerReferences``."""
        metadata = self.typed.metadata if self.typed is not None else None
        if metadata is None:
            return self.plain()
        if metadata.owner_references is None:
            return None  # nothing owns it (the usual case): nothing to build
        return {"metadata": {"ownerReferences": metadata.owner_references}}

    @property
    def name(self) -> str:
        """``metadata.name`` or ``generateName``, as the decision log names the object."""
        metadata = self.typed.metadata if self.typed is not None else None
        if metadata is None:
            plain = self.plain()
            metadata = plain.get("metadata") if isinstance(plain, dict) else None
            if not isinstance(metadata, dict):
                return ""
            name = metadata.get("name") or metadata.get("generateName")
        else:
            name = metadata.name or metadata.generate_name
        return name if isinstance(name, str) else ""
