"""Field paths into a submitted object, rendered the way people read them.

A path is an immutable tuple of steps. ``child`` adds a field name, ``index`` a list
position and ``key`` a map key (rendered ``["..."]`` because label and annotation keys
contain dots and slashes). ``pointer`` renders the same path as an RFC 6901 JSON
pointer for patches and for locating the node in a YAML file.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, Union

from webhook.kube.textcache import CACHED_CHARS

Step = Union[str, int, "MapKey"]


class MapKey:
    """A key of a string map (labels, annotations, nodeSelector, resources)."""

    # A plain class rather than a frozen dataclass: a dataclass's generated __init__ and
    # __hash__ run as Python even under mypyc, and a denial makes and hashes several paths.
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name: Final = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MapKey) and self.name == other.name

    def __hash__(self) -> int:
        return hash((MapKey, self.name))

    def __repr__(self) -> str:
        return f"MapKey(name={self.name!r})"


class FieldPath:
    """Immutable (``steps`` is final); equal and hashed by its steps. A plain class for the
    same reason as ``MapKey``."""

    __slots__ = ("steps",)

    def __init__(self, steps: tuple[Step, ...] = ()) -> None:
        self.steps: Final = steps

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldPath) and self.steps == other.steps

    def __hash__(self) -> int:
        return hash(self.steps)

    def __repr__(self) -> str:
        return f"FieldPath(steps={self.steps!r})"

    def child(self, *names: str) -> FieldPath:
        return FieldPath(self.steps + names)

    def index(self, position: int) -> FieldPath:
        return FieldPath((*self.steps, position))

    def key(self, name: str) -> FieldPath:
        return FieldPath((*self.steps, MapKey(name)))

    def __str__(self) -> str:
        steps = self.steps
        for step in steps:
            if isinstance(step, MapKey) and len(step.name) > CACHED_CHARS:
                return _render.__wrapped__(steps)  # a key from the object, and a long one: not kept
        return _render(steps)

    def pointer(self) -> str:
        """The RFC 6901 JSON pointer of this path (``~`` → ``~0``, ``/`` → ``~1``)."""
        parts = []
        for step in self.steps:
            text = step.name if isinstance(step, MapKey) else str(step)
            parts.append(text.replace("~", "~0").replace("/", "~1"))
        return "".join("/" + part for part in parts)

    def parts(self) -> tuple[str | int, ...]:
        """Plain steps (map keys unwrapped), for walking a parsed document."""
        return tuple(s.name if isinstance(s, MapKey) else s for s in self.steps)


@lru_cache(maxsize=4096)  # a denial renders the same few paths request after request
def _render(steps: tuple[Step, ...]) -> str:
    out: list[str] = []
    for step in steps:
        if isinstance(step, int):
            out.append(f"[{step}]")
        elif isinstance(step, MapKey):
            out.append(f'["{step.name}"]')
        else:
            out.append(f".{step}" if out else step)
    return "".join(out) or "(object)"


ROOT: Final = FieldPath()
METADATA: Final = ROOT.child("metadata")
LABELS: Final = METADATA.child("labels")
ANNOTATIONS: Final = METADATA.child("annotations")
SPEC: Final = ROOT.child("spec")
REPLICATED_JOBS: Final = SPEC.child("replicatedJobs")
