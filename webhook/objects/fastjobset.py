"""The typed reader of a JobSet's JSON text: a well-formed JobSet decoded straight into structs.

``webhook.objects.workload.parse_jobset`` reads a JobSet from plain JSON (dicts and lists)
and turns every odd shape into a ``jobset-malformed`` finding. Most submissions have no
odd shape, and for them msgspec can do the type checks while it reads the bytes, skipping
every field no rule looks at (images, commands, env) instead of building dicts for them,
and ``read_typed_jobset`` builds the ``Workload`` from the structs. In pure Python that
saves ~5 µs of a JobSet request's 18-31 µs of decoding, deciding and answering
(``python bench/run.py --only reader`` measures it).

The structs type each field at least as tightly as ``parse_jobset`` requires it (a string
map is ``dict[str, str]``, a count is ``int``; tighter still, a quantity is a string or an
integer and a name or a restart policy a string, so no float or boolean is ever in them),
and ``read_typed_jobset`` gives up (returns ``None``) wherever ``parse_jobset`` would
report a problem, reads something a struct cannot tell apart (``{}`` versus
``{"x": null}``) or meets a value typed tighter than it requires. Giving up is always safe: the
caller, ``webhook.objects.readers.read_workload`` (the only one), then decodes the same
bytes to plain JSON for ``parse_jobset``. So this reader answers only what the general
one would answer identically; ``tests/test_objects_fastjobset.py`` compares the two on the
fixtures, hostile bodies and the fuzz corpus.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from webhook.kube.fieldpaths import FieldPath
from webhook.objects.jsontext import plain_json
from webhook.objects.kinds import JOBSET
from webhook.objects.workload import Container, PodSet, Workload, container_paths, controller_is_jobset, jobset_paths
from webhook.policy.config import Policy

#: A quantity as the structs take it: a JSON string or integer. A float (``4.0``, ``1e400``)
#: or anything else is left to ``parse_jobset``, so no float is in the structs, and the
#: podSets' JSON text (``_Text.podsets_text``) says exactly what was read.
_Quantity = str | int


class _Resources(Struct, omit_defaults=True):
    requests: dict[str, _Quantity] | None = None
    limits: dict[str, _Quantity] | None = None


class _Container(Struct, rename="camel", omit_defaults=True):
    name: str | None = None
    resources: _Resources | None = None
    restart_policy: str | None = None


#: a field the text did not have: ``placement_text``'s ``b""``
_ABSENT = msgspec.Raw()


class _PodSpec(Struct, rename="camel", omit_defaults=True):
    containers: list[_Container] | None = None
    init_containers: list[_Container] | None = None
    node_selector: dict[str, str] | None = None
    priority_class_name: str | None = None
    #: kept as text: the cluster rules read them (``PodSet.placement_text``), most requests never decode them
    tolerations: msgspec.Raw = _ABSENT
    affinity: msgspec.Raw = _ABSENT


class _Annotated(Struct, omit_defaults=True):
    annotations: dict[str, str] | None = None


class _PodTemplate(Struct, omit_defaults=True):
    metadata: _Annotated | None = None
    spec: _PodSpec | None = None


class _JobSpec(Struct, omit_defaults=True):
    parallelism: int | None = None
    completions: int | None = None
    template: _PodTemplate | None = None


class _JobTemplate(Struct, omit_defaults=True):
    metadata: _Annotated | None = None
    spec: _JobSpec | None = None


class _ReplicatedJob(Struct, omit_defaults=True):
    name: str | None = None
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


_DECODER = msgspec.json.Decoder(_JobSet)


_ENCODER = msgspec.json.Encoder()


class _Text:
    """The JobSet's JSON text, decoded to plain JSON the first time a rule asks for a part
    the structs skipped (``spec``, a pod spec's tolerations): most requests never ask. And
    the replicatedJobs as the structs hold them, for ``podsets_text``."""

    __slots__ = ("_plain", "jobs", "text")

    def __init__(self, text: bytes, jobs: list[_ReplicatedJob]) -> None:
        self.text = text
        self.jobs = jobs
        self._plain: Any = None

    def podsets_text(self) -> bytes:
        """The replicatedJobs as the structs hold them, as JSON text: every field the podSets
        are built from (names, counts, annotations, selectors, container requests, limits and
        restart policies, tolerations and affinity as written) and none the structs skip
        (images, commands, env). The podSets are a function of it and the policy, and it is
        exact: the structs hold no float (whose text could round), a field at its default
        is left out (``omit_defaults``: an absent ``tolerations`` is no text at all), and
        what is written is one JSON document, which reads back as the same structs. So
        equal texts, equal podSets, and jobs of one template share it (a key of remembered
        answers, ``webhook.rules.cluster.recall_key``). Writing it cannot fail: the decoder
        refuses a lone surrogate, so every string it gave is UTF-8 again."""
        return _ENCODER.encode(self.jobs)

    def plain(self) -> Any:
        if self._plain is None:
            self._plain = plain_json(self.text)
        return self._plain

    def pod_spec(self, index: int) -> dict[str, Any]:
        """``spec.replicatedJobs[index]``'s pod spec (``{}`` when it is not an object).

        Only asked of a JobSet ``read_typed_jobset`` accepted, whose shape up to there is known."""
        spec = self.plain()["spec"]["replicatedJobs"][index]["template"]["spec"]["template"].get("spec")
        return spec if isinstance(spec, dict) else {}


def read_typed_jobset(text: bytes, policy: Policy, namespace: str) -> Workload | None:
    """The ``Workload`` ``parse_jobset`` would read from ``text``, or ``None`` to leave it to ``parse_jobset``."""
    try:
        obj = _DECODER.decode(text)
    except msgspec.DecodeError:  # not of the structs' types (ValidationError), or JSON msgspec refuses
        return None
    metadata = obj.metadata or _Metadata()
    spec = obj.spec
    if spec is None or spec.replicated_jobs is UNSET:
        return None  # "replicatedJobs is missing"
    name = metadata.name
    generated_suffix = 0
    if not isinstance(name, str) or not name:
        generate = metadata.generate_name
        name = generate if isinstance(generate, str) else ""
        generated_suffix = 5 if name else 0
    ns = metadata.namespace
    jobs = spec.replicated_jobs or []
    source = _Text(text, jobs)
    workload = Workload(
        namespace=ns if isinstance(ns, str) and ns else namespace,
        name=name,
        labels=metadata.labels if metadata.labels is not None else {},
        annotations=metadata.annotations if metadata.annotations is not None else {},
        raw_spec=None,
        kind=JOBSET,
        generated_suffix=generated_suffix,
        has_labels_map=metadata.labels is not None,
        has_metadata=obj.metadata is not None,
        controlled_by_jobset=controller_is_jobset(metadata.owner_references),
        suspend=spec.suspend,
        source=source,
    )
    tpu = policy.tpu
    limits = policy.limits
    if len(jobs) > limits.max_replicated_jobs:
        return None  # over policy.limits: parse_jobset refuses it without walking the list
    containers = 0
    for index, job in enumerate(jobs):
        podset = _podset(job, index, tpu.resource_name, tpu.slice_topology_annotation, tpu.accelerator_label)
        if podset is None:
            return None
        podset.source = source
        workload.podsets.append(podset)
        if podset.is_tpu:
            workload.tpu_podsets.append(podset)
        containers += len(podset.containers) + len(podset.init_containers)
    if containers > limits.max_containers:
        return None  # over policy.limits.maxContainers: parse_jobset words it
    return workload


def _podset(job: _ReplicatedJob, index: int, resource: str, slice_annotation: str, accelerator: str) -> PodSet | None:
    name = job.name
    template = job.template
    if not isinstance(name, str) or not name or template is None:
        return None
    job_spec = template.spec
    if job_spec is None:
        return None
    pod_template = job_spec.template
    if pod_template is None or (pod_template.metadata is None and pod_template.spec is None):
        return None  # a missing or empty pod template: parse_jobset words it
    replicas, parallelism, completions = job.replicas, job_spec.parallelism, job_spec.completions
    if (
        (replicas is not None and replicas < 0)
        or (parallelism is not None and parallelism < 0)
        or (completions is not None and completions < 0)
    ):
        return None
    pod_spec = pod_template.spec
    paths = jobset_paths(index)
    containers = _containers(pod_spec.containers if pod_spec is not None else None, paths.containers)
    init_containers = _containers(pod_spec.init_containers if pod_spec is not None else None, paths.init_containers)
    annotations = (pod_template.metadata.annotations if pod_template.metadata is not None else None) or {}
    node_selector = (pod_spec.node_selector if pod_spec is not None else None) or {}
    job_annotations = (template.metadata.annotations if template.metadata is not None else None) or {}
    return PodSet(
        index=index,
        name=name,
        paths=paths,
        replicas=(replicas if replicas is not None else 1) or 0,
        parallelism=parallelism,
        completions=completions,
        job_annotations=job_annotations,
        annotations=annotations,
        node_selector=node_selector,
        priority_class_name=pod_spec.priority_class_name if pod_spec is not None else None,
        containers=containers,
        init_containers=init_containers,
        placement=(bytes(pod_spec.tolerations), bytes(pod_spec.affinity)) if pod_spec is not None else (b"", b""),
        is_tpu=(  # as parse_pod_template: the two lookups first
            slice_annotation in annotations
            or accelerator in node_selector
            or any(c.requests_resource(resource) for c in containers)
        ),
    )


def _containers(items: list[_Container] | None, path: FieldPath) -> list[Container]:
    out = []
    for position, item in enumerate(items or ()):
        item_path = container_paths(path, position)[0]
        resources = item.resources
        name = item.name
        out.append(
            Container(
                name=name if isinstance(name, str) else f"#{position}",
                path=item_path,
                requests=(resources.requests if resources is not None else None) or {},
                limits=(resources.limits if resources is not None else None) or {},
                restartable=item.restart_policy == "Always",
            )
        )
    return out
