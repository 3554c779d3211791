"""A judged object as the rules see it: metadata plus its podSets (Kueue's unit of quota).

A JobSet has one ``PodSet`` per replicatedJob (here); a batch/v1 Job and an apps/v1
Deployment have one each (``webhook.objects.readers``), read by the same pod-template parser.

Parsing never raises. Real submissions are messy (a string where a map belongs, a
missing template, ``replicas: -1``); every such problem becomes a ``jobset-malformed``
finding (the ID predates the other kinds and stays stable) with its path, and the parse
carries on with what it could read, so the user gets all of their mistakes in one answer.

The records are msgspec structs: every request builds a ``Workload``, a ``PodSet`` per
podSet and a ``Container`` per container, and a struct's constructor runs in C. Equality
compares every field, the pod spec a podSet keeps included.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final, NamedTuple

import msgspec

from webhook.kube.fieldpaths import ANNOTATIONS, LABELS, METADATA, REPLICATED_JOBS, SPEC, FieldPath
from webhook.kube.resources import pod_requests
from webhook.objects.kinds import JOBSET
from webhook.policy.config import Policy
from webhook.policy.findings import Finding

MALFORMED: Final = "jobset-malformed"


class Reader:
    """Typed access to untrusted JSON that records what was not the expected type.

    Work is bounded whatever is sent: lists are measured against ``policy.limits``
    before any item is read, and past ``max_findings`` problems only a count is kept
    (a map of 150,000 non-string labels costs a counter, not 150,000 findings).
    """

    def __init__(self, policy: Policy) -> None:
        self.problems: list[Finding] = []
        self.max_problems = policy.limits.max_findings
        self.max_containers = self.containers_left = policy.limits.max_containers
        #: problems found but not recorded (over ``max_problems``)
        self.unrecorded = 0

    def room(self) -> bool:
        """Whether one more problem is recorded; counts it as unrecorded when not."""
        if len(self.problems) < self.max_problems:
            return True
        self.unrecorded += 1
        return False

    def bad(self, path: FieldPath, problem: str, fix: str) -> None:
        if self.room():
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
            elif self.room():
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
        if type(value) is float and value.is_integer():
            # 16.0 is the number 16 in JSON, and what kubectl sends for it (YAML 16.0 -> JSON 16)
            value = int(value)
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


class Container(msgspec.Struct):
    name: str
    path: FieldPath
    requests: dict[str, Any]
    limits: dict[str, Any]
    #: an init container with ``restartPolicy: Always``: a sidecar that runs beside the main containers
    restartable: bool = False

    def requests_resource(self, resource: str) -> bool:
        return resource in self.requests or resource in self.limits


#: a container's paths: the item, its resources, requests and limits
ContainerPaths = tuple[FieldPath, FieldPath, FieldPath, FieldPath]


class PodSetPaths(NamedTuple):
    """Every path the parser and the rules may name in one podSet, built once.

    A JobSet's podSet is ``spec.replicatedJobs[i]``; a Job's and a Deployment's is the
    object's own ``spec`` (``webhook.objects.readers``). Fields a kind does not have point at the
    nearest place that does (a Job has no ``replicas``: its podSet path).
    """

    job: FieldPath
    name: FieldPath
    replicas: FieldPath
    template: FieldPath
    job_metadata: FieldPath
    job_annotations: FieldPath
    job_spec: FieldPath
    parallelism: FieldPath
    completions: FieldPath
    pod_template: FieldPath
    pod_metadata: FieldPath
    pod_annotations: FieldPath
    pod_spec: FieldPath
    node_selector: FieldPath
    containers: FieldPath
    init_containers: FieldPath
    #: the first ``READY_CONTAINERS`` containers' and init containers' paths, built with the rest
    container_items: tuple[ContainerPaths, ...] = ()
    init_container_items: tuple[ContainerPaths, ...] = ()


#: containers per list whose paths a podSet's paths hold ready (most pods have one or two)
READY_CONTAINERS: Final = 4
#: JobSet podSets whose paths are built at import (most JobSets have one to a few replicatedJobs)
READY_JOBS: Final = 8


def container_paths(list_path: FieldPath, position: int) -> ContainerPaths:
    item = list_path.index(position)
    resources = item.child("resources")
    return item, resources, resources.child("requests"), resources.child("limits")


def podset_paths(
    job: FieldPath,
    name: FieldPath,
    replicas: FieldPath,
    template: FieldPath,
    job_metadata: FieldPath,
    job_spec: FieldPath,
    pod_template: FieldPath,
) -> PodSetPaths:
    pod_spec = pod_template.child("spec")
    containers, init_containers = pod_spec.child("containers"), pod_spec.child("initContainers")
    return PodSetPaths(
        job=job,
        name=name,
        replicas=replicas,
        template=template,
        job_metadata=job_metadata,
        job_annotations=job_metadata.child("annotations"),
        job_spec=job_spec,
        parallelism=job_spec.child("parallelism"),
        completions=job_spec.child("completions"),
        pod_template=pod_template,
        pod_metadata=pod_template.child("metadata"),
        pod_annotations=pod_template.child("metadata", "annotations"),
        pod_spec=pod_spec,
        node_selector=pod_spec.child("nodeSelector"),
        containers=containers,
        init_containers=init_containers,
        container_items=tuple(container_paths(containers, n) for n in range(READY_CONTAINERS)),
        init_container_items=tuple(container_paths(init_containers, n) for n in range(READY_CONTAINERS)),
    )


def jobset_paths(index: int) -> PodSetPaths:
    """The paths of ``spec.replicatedJobs[index]``: built at import for the first ``READY_JOBS``
    (every request names them; building them costs more than the rest of reading a podSet)."""
    return _JOBSET_PATHS[index] if index < READY_JOBS else _jobset_paths(index)


def _jobset_paths(index: int) -> PodSetPaths:
    job = REPLICATED_JOBS.index(index)
    template = job.child("template")
    job_spec = template.child("spec")
    return podset_paths(
        job=job,
        name=job.child("name"),
        replicas=job.child("replicas"),
        template=template,
        job_metadata=template.child("metadata"),
        job_spec=job_spec,
        pod_template=job_spec.child("template"),
    )


_JOBSET_PATHS: Final = tuple(_jobset_paths(index) for index in range(READY_JOBS))


class PodSet(msgspec.Struct):
    """One of Kueue's podSets: a JobSet's ``spec.replicatedJobs[i]``, or a Job's or Deployment's pods."""

    index: int
    name: str
    paths: PodSetPaths
    #: slices of this podSet (a JobSet's replicatedJob replicas; 1 for a Job or a Deployment's pod)
    replicas: int
    parallelism: int | None
    completions: int | None
    job_annotations: dict[str, str]
    annotations: dict[str, str]
    node_selector: dict[str, str]
    priority_class_name: Any
    containers: list[Container]
    init_containers: list[Container]
    is_tpu: bool = False
    #: the pod template's spec as submitted (tolerations, affinity: read by the cluster rules)
    pod_spec: dict[str, Any] = {}
    #: ``pod_requests()``, worked out at its first call (several cluster rules ask)
    _pod_requests: dict[str, Decimal] | None = None

    @property
    def path(self) -> FieldPath:
        return self.paths.job

    @property
    def job_spec_path(self) -> FieldPath:
        return self.paths.job_spec

    @property
    def pod_spec_path(self) -> FieldPath:
        return self.paths.pod_spec

    @property
    def annotations_path(self) -> FieldPath:
        return self.paths.pod_annotations

    @property
    def node_selector_path(self) -> FieldPath:
        return self.paths.node_selector

    def pod_requests(self) -> dict[str, Decimal]:
        """One pod's effective requests (init containers counted as Kubernetes counts them).

        Several cluster rules ask for it; it is worked out once per request.
        """
        if self._pod_requests is None:
            self._pod_requests = pod_requests(
                ((c.requests, c.limits) for c in self.containers),
                ((c.requests, c.limits, c.restartable) for c in self.init_containers),
            )
        return self._pod_requests


class Workload(msgspec.Struct):
    """A judged object as the rules see it: its metadata and its podSets."""

    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    #: ``spec`` as plain JSON (``{}`` when it is not an object)
    spec: dict[str, Any]
    #: ``webhook.objects.kinds``: JobSet, Job or Deployment
    kind: str = JOBSET
    #: Workloads Kueue makes of it: a Deployment's ``spec.replicas`` (one per pod), else 1
    replicas: int = 1
    generated_suffix: int = 0
    has_labels_map: bool = False
    has_metadata: bool = False
    #: its controller (the ``controller: true`` owner) is a JobSet (``controller_is_jobset``):
    #: a JobSet's own Job when the JobSet controller sends it (``readers.made_by_jobset_controller``)
    controlled_by_jobset: bool = False
    #: ``spec.suspend`` as written (any JSON value; ``None`` when absent or null)
    suspend: Any = None
    podsets: list[PodSet] = []
    malformed: list[Finding] = []
    #: malformed findings past the limit, counted but not recorded
    malformed_unrecorded: int = 0
    #: the podSets that ask for TPUs (``PodSet.is_tpu``), in order: what most rules walk
    tpu_podsets: list[PodSet] = []

    @property
    def suspend_set(self) -> bool:
        return self.suspend is not None

    @property
    def suspended(self) -> bool:
        """``spec.suspend`` as Kubernetes reads it (absent or null is false)."""
        return self.suspend is True

    @property
    def name_length(self) -> int:
        return len(self.name) + self.generated_suffix

    def finish(self, reader: Reader) -> Workload:
        self.malformed = reader.problems
        self.malformed_unrecorded = reader.unrecorded
        self.tpu_podsets = [podset for podset in self.podsets if podset.is_tpu]
        return self


def parse_metadata(reader: Reader, obj: Any, namespace: str, kind: str) -> Workload:
    """The part every kind shares: name, namespace, labels, annotations and ``spec``."""
    root = obj if isinstance(obj, dict) else {}
    if not isinstance(obj, dict):
        reader.bad(FieldPath(), f"the object must be a JSON object, got {_type(obj)}", f"submit a {kind}")
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
    spec = reader.mapping(root.get("spec"), SPEC)
    return Workload(
        namespace=ns if isinstance(ns, str) and ns else namespace,
        name=name,
        labels=labels,
        annotations=annotations,
        spec=spec,
        kind=kind,
        generated_suffix=generated_suffix,
        has_labels_map=isinstance(metadata.get("labels"), dict),
        has_metadata=isinstance(root.get("metadata"), dict),
        controlled_by_jobset=controller_is_jobset(metadata.get("ownerReferences")),
        suspend=spec.get("suspend"),
    )


def controller_is_jobset(references: Any) -> bool:
    """Whether ``metadata.ownerReferences`` names a JobSet as the object's controller.

    What the object says of itself: any user can write an owner reference as easily as the
    ``jobset.sigs.k8s.io/jobset-name`` label (which does not count at all). Only together with
    the request's user, the JobSet controller, does it make a JobSet's own Job
    (``webhook.objects.readers.made_by_jobset_controller``).
    """
    if not isinstance(references, list):
        return False
    for reference in references:
        if (
            isinstance(reference, dict)
            and reference.get("controller") is True
            and reference.get("kind") == JOBSET
            and str(reference.get("apiVersion", "")).startswith("jobset.x-k8s.io/")
        ):
            return True
    return False


def parse_jobset(obj: Any, policy: Policy, namespace: str = "") -> Workload:
    """Read a JobSet; ``namespace`` fills in when the object has none (a CREATE may omit it)."""
    reader = Reader(policy)
    workload = parse_metadata(reader, obj, namespace, JOBSET)
    spec = workload.spec
    jobs = reader.sequence(spec.get("replicatedJobs"), REPLICATED_JOBS)
    if "replicatedJobs" not in spec:
        reader.bad(REPLICATED_JOBS, "is missing", "a JobSet needs at least one replicatedJob")
    limit = policy.limits.max_replicated_jobs
    if len(jobs) > limit:
        # Measured before any item is read: the work stays bounded however long the list.
        reader.bad(
            REPLICATED_JOBS,
            f"has {len(jobs)} items, more than the {limit} this webhook judges",
            "Kueue admits at most 18 podSets per Workload; split the JobSet",
        )
        jobs = []
    for index, job in enumerate(jobs):
        podset = _parse_replicated_job(reader, job, index, policy)
        if podset is not None:
            workload.podsets.append(podset)
    return workload.finish(reader)


def _parse_replicated_job(reader: Reader, job: Any, index: int, policy: Policy) -> PodSet | None:
    paths = jobset_paths(index)
    job = reader.mapping(job, paths.job)
    if not job:
        return None
    name = job.get("name")
    if not isinstance(name, str) or not name:
        reader.bad(paths.name, "is missing", "give every replicatedJob a name")
        name = ""
    template = reader.mapping(job.get("template"), paths.template)
    if not template:
        reader.bad(paths.template, "is missing", "a replicatedJob needs a Job template")
    job_metadata = reader.mapping(template.get("metadata"), paths.job_metadata)
    job_spec = reader.mapping(template.get("spec"), paths.job_spec)
    pod_template = reader.mapping(job_spec.get("template"), paths.pod_template)
    if template and not pod_template:
        reader.bad(paths.pod_template, "is missing", "a Job template needs a pod template")
    return parse_pod_template(
        reader,
        pod_template,
        paths,
        policy,
        index=index,
        name=name,
        replicas=reader.count(job.get("replicas"), paths.replicas, 1) or 0,
        parallelism=reader.count(job_spec.get("parallelism"), paths.parallelism, None),
        completions=reader.count(job_spec.get("completions"), paths.completions, None),
        job_annotations=reader.string_map(job_metadata.get("annotations"), paths.job_annotations),
    )


def parse_pod_template(
    reader: Reader,
    pod_template: dict[str, Any],
    paths: PodSetPaths,
    policy: Policy,
    *,
    index: int,
    name: str,
    replicas: int,
    parallelism: int | None,
    completions: int | None,
    job_annotations: dict[str, str],
) -> PodSet:
    """One podSet from its pod template; the counts come from the kind that owns it."""
    pod_metadata = reader.mapping(pod_template.get("metadata"), paths.pod_metadata)
    pod_spec = reader.mapping(pod_template.get("spec"), paths.pod_spec)
    containers = _containers(reader, pod_spec.get("containers"), paths.containers, paths.container_items)
    annotations = reader.string_map(pod_metadata.get("annotations"), paths.pod_annotations)
    node_selector = reader.string_map(pod_spec.get("nodeSelector"), paths.node_selector)
    tpu = policy.tpu
    return PodSet(
        index=index,
        name=name,
        paths=paths,
        replicas=replicas,
        parallelism=parallelism,
        completions=completions,
        job_annotations=job_annotations,
        annotations=annotations,
        node_selector=node_selector,
        priority_class_name=pod_spec.get("priorityClassName"),
        containers=containers,
        init_containers=_containers(
            reader, pod_spec.get("initContainers"), paths.init_containers, paths.init_container_items
        ),
        pod_spec=pod_spec,
        is_tpu=(  # the two lookups first: most TPU podSets select the accelerator
            tpu.slice_topology_annotation in annotations
            or tpu.accelerator_label in node_selector
            or any(c.requests_resource(tpu.resource_name) for c in containers)
        ),
    )


def _containers(reader: Reader, value: Any, path: FieldPath, ready: tuple[ContainerPaths, ...]) -> list[Container]:
    out: list[Container] = []
    items = reader.sequence(value, path)
    if len(items) > reader.containers_left:
        # Measured before any item is read, across all pod templates of the object.
        reader.bad(
            path,
            f"has {len(items)} items, over what is left of the {reader.max_containers} containers "
            "this webhook judges per object",
            "no real pod has this many containers; check how the manifest is generated",
        )
        reader.containers_left = 0
        return out
    reader.containers_left -= len(items)
    for position, raw in enumerate(items):
        item_path, resources_path, requests_path, limits_path = (
            ready[position] if position < len(ready) else container_paths(path, position)
        )
        item = reader.mapping(raw, item_path)
        resources = reader.mapping(item.get("resources"), resources_path)
        name = item.get("name")
        out.append(
            Container(
                name=name if isinstance(name, str) else f"#{position}",
                path=item_path,
                requests=reader.mapping(resources.get("requests"), requests_path),
                limits=reader.mapping(resources.get("limits"), limits_path),
                restartable=item.get("restartPolicy") == "Always",
            )
        )
    return out
