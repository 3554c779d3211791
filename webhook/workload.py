"""A JobSet as the rules see it: metadata plus one ``PodSet`` per replicatedJob.

Parsing never raises. Real submissions are messy (a string where a map belongs, a
missing template, ``replicas: -1``); every such problem becomes a ``jobset-malformed``
finding with its path and the parse carries on with what it could read, so the user
gets all of their mistakes in one answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.config import Policy
from webhook.fieldpaths import ANNOTATIONS, LABELS, METADATA, REPLICATED_JOBS, FieldPath
from webhook.findings import Finding
from webhook.quantity import QuantityError, parse_quantity

MALFORMED = "jobset-malformed"


class _Reader:
    """Typed access to untrusted JSON that records what was not the expected type."""

    def __init__(self) -> None:
        self.problems: list[Finding] = []

    def bad(self, path: FieldPath, problem: str, fix: str) -> None:
        self.problems.append(Finding(MALFORMED, path, problem, fix))

    def mapping(self, value: Any, path: FieldPath) -> dict[str, Any]:
        if value is None:
            return {}
        if isinstance(value, dict):
            return value
        self.bad(path, f"must be an object, got {_type(value)}", "write it as a YAML mapping")
        return {}

    def string_map(self, value: Any, path: FieldPath) -> dict[str, str]:
        raw = self.mapping(value, path)
        out: dict[str, str] = {}
        for key, item in raw.items():
            if isinstance(item, str):
                out[str(key)] = item
            else:
                self.bad(path.key(str(key)), f"must be a string, got {_type(item)}", "quote the value")
        return out

    def sequence(self, value: Any, path: FieldPath) -> list[Any]:
        if value is None:
            return []
        if isinstance(value, list):
            return value
        self.bad(path, f"must be a list, got {_type(value)}", "write it as a YAML list")
        return []

    def count(self, value: Any, path: FieldPath, default: int | None) -> int | None:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.bad(path, f"must be an integer, got {_type(value)}", "write a whole number")
            return default
        if value < 0:
            self.bad(path, f"must not be negative, got {value}", "use 0 or a positive number")
            return default
        return value


def _type(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


@dataclass(slots=True)
class Container:
    name: str
    path: FieldPath
    requests: dict[str, Any]
    limits: dict[str, Any]

    def requests_resource(self, resource: str) -> bool:
        return resource in self.requests or resource in self.limits


@dataclass(slots=True)
class PodSet:
    """One ``spec.replicatedJobs[i]``: Kueue's podSet."""

    index: int
    name: str
    path: FieldPath
    replicas: int
    parallelism: int | None
    completions: int | None
    job_annotations: dict[str, str]
    template_path: FieldPath
    annotations: dict[str, str]
    node_selector: dict[str, str]
    priority_class_name: Any
    containers: list[Container]
    init_containers: list[Container]
    is_tpu: bool = False

    @property
    def job_spec_path(self) -> FieldPath:
        return self.path.child("template", "spec")

    @property
    def pod_spec_path(self) -> FieldPath:
        return self.template_path.child("spec")

    @property
    def annotations_path(self) -> FieldPath:
        return self.template_path.child("metadata", "annotations")

    @property
    def node_selector_path(self) -> FieldPath:
        return self.pod_spec_path.child("nodeSelector")

    def quantity(self, container: Container, kind: str, resource: str) -> Decimal | None:
        """The parsed request or limit, ``None`` when absent or unparseable."""
        raw = (container.requests if kind == "requests" else container.limits).get(resource)
        if raw is None:
            return None
        try:
            return parse_quantity(raw)
        except QuantityError:
            return None


@dataclass(slots=True)
class Workload:
    kind: str
    api_version: str
    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict[str, Any]
    generated_suffix: int = 0
    has_labels_map: bool = False
    has_metadata: bool = False
    podsets: list[PodSet] = field(default_factory=list)
    malformed: list[Finding] = field(default_factory=list)

    @property
    def tpu_podsets(self) -> list[PodSet]:
        return [podset for podset in self.podsets if podset.is_tpu]

    @property
    def suspend_set(self) -> bool:
        return self.spec.get("suspend") is not None

    @property
    def suspended(self) -> bool:
        """``spec.suspend`` as Kubernetes reads it (absent or null is false)."""
        return self.spec.get("suspend") is True

    @property
    def name_length(self) -> int:
        return len(self.name) + self.generated_suffix


def parse_jobset(obj: Any, policy: Policy, namespace: str = "") -> Workload:
    """Read a JobSet; ``namespace`` fills in when the object has none (a CREATE may omit it)."""
    reader = _Reader()
    root = obj if isinstance(obj, dict) else {}
    if not isinstance(obj, dict):
        reader.bad(FieldPath(), f"the object must be a JSON object, got {_type(obj)}", "submit a JobSet")
    metadata = reader.mapping(root.get("metadata"), METADATA)
    labels = reader.string_map(metadata.get("labels"), LABELS)
    annotations = reader.string_map(metadata.get("annotations"), ANNOTATIONS)
    name = metadata.get("name")
    generated_suffix = 0
    if not isinstance(name, str) or not name:
        generate = metadata.get("generateName")
        name = generate if isinstance(generate, str) else ""
        # The API server appends five random characters to generateName.
        generated_suffix = 5 if name else 0
    ns = metadata.get("namespace")
    spec = reader.mapping(root.get("spec"), FieldPath().child("spec"))
    workload = Workload(
        kind=str(root.get("kind", "")),
        api_version=str(root.get("apiVersion", "")),
        namespace=ns if isinstance(ns, str) and ns else namespace,
        name=name,
        labels=labels,
        annotations=annotations,
        spec=spec,
        generated_suffix=generated_suffix,
        has_labels_map=isinstance(metadata.get("labels"), dict),
        has_metadata=isinstance(root.get("metadata"), dict),
    )
    jobs = reader.sequence(spec.get("replicatedJobs"), REPLICATED_JOBS)
    if "replicatedJobs" not in spec:
        reader.bad(REPLICATED_JOBS, "is missing", "a JobSet needs at least one replicatedJob")
    for index, job in enumerate(jobs):
        podset = _parse_podset(reader, job, index, policy)
        if podset is not None:
            workload.podsets.append(podset)
    workload.malformed = reader.problems
    return workload


def _parse_podset(reader: _Reader, job: Any, index: int, policy: Policy) -> PodSet | None:
    path = REPLICATED_JOBS.index(index)
    job = reader.mapping(job, path)
    if not job:
        return None
    name = job.get("name")
    if not isinstance(name, str) or not name:
        reader.bad(path.child("name"), "is missing", "give every replicatedJob a name")
        name = ""
    template = reader.mapping(job.get("template"), path.child("template"))
    if not template:
        reader.bad(path.child("template"), "is missing", "a replicatedJob needs a Job template")
    job_metadata = reader.mapping(template.get("metadata"), path.child("template", "metadata"))
    job_spec_path = path.child("template", "spec")
    job_spec = reader.mapping(template.get("spec"), job_spec_path)
    template_path = job_spec_path.child("template")
    pod_template = reader.mapping(job_spec.get("template"), template_path)
    if template and not pod_template:
        reader.bad(template_path, "is missing", "a Job template needs a pod template")
    pod_metadata = reader.mapping(pod_template.get("metadata"), template_path.child("metadata"))
    pod_spec_path = template_path.child("spec")
    pod_spec = reader.mapping(pod_template.get("spec"), pod_spec_path)
    podset = PodSet(
        index=index,
        name=name,
        path=path,
        replicas=reader.count(job.get("replicas"), path.child("replicas"), 1) or 0,
        parallelism=reader.count(job_spec.get("parallelism"), job_spec_path.child("parallelism"), None),
        completions=reader.count(job_spec.get("completions"), job_spec_path.child("completions"), None),
        job_annotations=reader.string_map(
            job_metadata.get("annotations"), path.child("template", "metadata", "annotations")
        ),
        template_path=template_path,
        annotations=reader.string_map(
            pod_metadata.get("annotations"), template_path.child("metadata", "annotations")
        ),
        node_selector=reader.string_map(pod_spec.get("nodeSelector"), pod_spec_path.child("nodeSelector")),
        priority_class_name=pod_spec.get("priorityClassName"),
        containers=_containers(reader, pod_spec.get("containers"), pod_spec_path.child("containers")),
        init_containers=_containers(
            reader, pod_spec.get("initContainers"), pod_spec_path.child("initContainers")
        ),
    )
    tpu = policy.tpu
    podset.is_tpu = (
        any(c.requests_resource(tpu.resource_name) for c in podset.containers)
        or tpu.slice_topology_annotation in podset.annotations
        or tpu.accelerator_label in podset.node_selector
    )
    return podset


def _containers(reader: _Reader, value: Any, path: FieldPath) -> list[Container]:
    out = []
    for position, raw in enumerate(reader.sequence(value, path)):
        item_path = path.index(position)
        item = reader.mapping(raw, item_path)
        resources = reader.mapping(item.get("resources"), item_path.child("resources"))
        name = item.get("name")
        out.append(
            Container(
                name=name if isinstance(name, str) else f"#{position}",
                path=item_path,
                requests=reader.mapping(resources.get("requests"), item_path.child("resources", "requests")),
                limits=reader.mapping(resources.get("limits"), item_path.child("resources", "limits")),
            )
        )
    return out

