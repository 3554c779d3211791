"""The typed fast path's second half: the ``Workload`` ``parse_jobset`` would read, from the
structs ``webhook.objects.fastjobset`` decoded.

It lives apart from the structs so that mypyc can compile it with the rest of the
decision path (setup.py): a module that defines msgspec structs cannot be compiled.
``build`` gives up (``None``) wherever ``parse_jobset`` would report a problem, and the
engine then takes the general path; ``tests/test_fastjobset.py`` compares the two.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from webhook.objects.fastjobset import TypedJobSet, _Container, _Metadata, _ReplicatedJob
from webhook.objects.kinds import JOBSET
from webhook.objects.workload import Container, PodSet, Workload, _container_paths, _jobset_paths
from webhook.policy.config import Policy


def build(source: TypedJobSet, policy: Policy, namespace: str) -> Workload | None:
    """The ``Workload`` ``parse_jobset`` would read, or ``None`` to leave it to ``parse_jobset``."""
    obj = source.typed
    if obj is None:
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
        suspend=spec.suspend,
        source=source,
    )
    tpu = policy.tpu
    jobs = spec.replicated_jobs or []
    limits = policy.limits
    if len(jobs) > limits.max_replicated_jobs:
        return None  # over policy.limits: parse_jobset refuses it without walking the list
    for index, job in enumerate(jobs):
        podset = _podset(job, index, tpu.resource_name, tpu.slice_topology_annotation, tpu.accelerator_label)
        if podset is None:
            return None
        podset.source = source
        workload.podsets.append(podset)
    if sum(len(p.containers) + len(p.init_containers) for p in workload.podsets) > limits.max_containers:
        return None  # over policy.limits.maxContainers: parse_jobset words it
    workload._tpu_podsets = [podset for podset in workload.podsets if podset.is_tpu]
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
    paths = _jobset_paths(index)
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
        is_tpu=(
            any(c.requests_resource(resource) for c in containers)
            or slice_annotation in annotations
            or accelerator in node_selector
        ),
    )


def _containers(items: list[_Container] | None, path: Any) -> list[Container]:
    out = []
    for position, item in enumerate(items or ()):
        item_path = _container_paths(path, position)[0]
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
