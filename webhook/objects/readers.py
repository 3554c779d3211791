"""Every judged object → ``Workload``: ``read_workload``, the one way there, and the Job and Deployment readers.

``read_workload`` is the only way from a judged object to a ``Workload``: the engine
calls it for the server (the object as plain JSON, decoded with the review's envelope)
and for ``check`` (a decoded manifest) alike.

RFC-0033 (last table) is the model. A batch/v1 Job is one Workload whose one
podSet (Kueue names it ``main``) is gang-admitted over ``parallelism`` pods: for the
rules it is a JobSet with a single replicatedJob of one replica, so the TPU rules (one
slice: hosts = parallelism = completions) and the cluster rules apply unchanged. An
apps/v1 Deployment is one Workload *per pod* with no gang: its podSet is one pod, and
``Workload.replicas`` keeps ``spec.replicas`` for the rule about borrowed quota.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from webhook.kube.fieldpaths import METADATA, ROOT, SPEC
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.objects.request import UserInfo
from webhook.objects.workload import (
    PodSetPaths,
    Reader,
    Workload,
    parse_jobset,
    parse_metadata,
    parse_pod_template,
    podset_paths,
)
from webhook.policy.config import Policy, TierPolicy

#: Kueue's name for the single podSet of a Job or a pod-based Workload
MAIN_PODSET: Final = "main"

# A Job has no replicas: its podSet is its spec. A Deployment's replicas are Workloads.
_JOB_PATHS: Final = podset_paths(
    job=SPEC,
    name=METADATA.child("name"),
    replicas=SPEC,
    template=ROOT,
    job_metadata=METADATA,
    job_spec=SPEC,
    pod_template=SPEC.child("template"),
)
_DEPLOYMENT_PATHS: Final = _JOB_PATHS._replace(replicas=SPEC.child("replicas"))


def _single_podset(
    reader: Reader,
    workload: Workload,
    policy: Policy,
    paths: PodSetPaths,
    parallelism: int | None,
    completions: int | None,
) -> Workload:
    """The one podSet of a Job or Deployment, read from ``spec.template``."""
    template = reader.mapping(workload.spec.get("template"), paths.pod_template)
    if not template:
        reader.bad(paths.pod_template, "is missing", f"a {workload.kind} needs a pod template")
    podset = parse_pod_template(
        reader,
        template,
        paths,
        policy,
        index=0,
        name=MAIN_PODSET,
        replicas=1,
        parallelism=parallelism,
        completions=completions,
        job_annotations={},
    )
    workload.podsets.append(podset)
    return workload.finish(reader)


def parse_job(obj: Any, policy: Policy, namespace: str = "") -> Workload:
    reader = Reader(policy)
    workload = parse_metadata(reader, obj, namespace, JOB)
    spec, paths = workload.spec, _JOB_PATHS
    parallelism = reader.count(spec.get("parallelism"), paths.parallelism, None)
    completions = reader.count(spec.get("completions"), paths.completions, None)
    return _single_podset(reader, workload, policy, paths, parallelism, completions)


def parse_deployment(obj: Any, policy: Policy, namespace: str = "") -> Workload:
    reader = Reader(policy)
    workload = parse_metadata(reader, obj, namespace, DEPLOYMENT)
    replicas = reader.count(workload.spec.get("replicas"), _DEPLOYMENT_PATHS.replicas, 1)
    workload.replicas = replicas if replicas is not None else 1
    # One Workload per pod, no gang: the podSet Kueue admits is a single pod.
    return _single_podset(reader, workload, policy, _DEPLOYMENT_PATHS, parallelism=1, completions=1)


_READERS: Final[dict[str, Callable[[Any, Policy, str], Workload]]] = {
    JOBSET: parse_jobset,
    JOB: parse_job,
    DEPLOYMENT: parse_deployment,
}


def read_workload(kind: str, document: Any, policy: Policy, namespace: str = "") -> Workload:
    """Read ``document`` as the judged ``kind`` (``webhook.objects.kinds``); never raises.

    ``document`` is the object decoded: plain JSON from the review (decoded with its envelope,
    ``webhook.wire.reviews``) or what YAML gives a manifest (``check``). Every kind is read by
    its one reader, which turns every odd shape into a ``jobset-malformed`` finding.
    ``namespace`` fills in when the object has none (a CREATE may omit it).
    """
    return _READERS[kind](document, policy, namespace)


def made_by_jobset_controller(workload: Workload, user: UserInfo, policy: Policy) -> bool:
    """A JobSet's own Job: its controller reference is a JobSet *and* the JobSet controller sends it.

    Such a Job was judged as part of its JobSet, and Kueue manages it through the JobSet.
    The owner reference alone proves nothing: any user may write one on a Job of their own
    (and with it switch every rule off). The request's user is the API server's fact, so the
    exemption rests on it: ``policy.jobsetControllerUsers``, the JobSet controller's service
    account. The webhook configurations' matchConditions apply the same test.
    """
    return workload.controlled_by_jobset and user.username in policy.jobset_controller_users


def runs_outside_kueue(workload: Workload, tier: TierPolicy, policy: Policy) -> bool:
    """A Job or Deployment Kueue will not manage: no queue label where none is injected, no TPU.

    RFC-0033's Kueue configuration (纳管范围): Kueue runs with ``manageJobsWithoutQueueName: false``, and in
    the production tier a workload without ``queue-name`` "is not taken over and runs as
    usual: the namespace also hosts the teams' system components, which must not enter
    quotas and queues". Refusing those would stop the namespace's own services, so they
    are not judged. A TPU workload is no system component: without a queue it would take
    TPUs outside every quota, so it is judged (and refused for its missing queue). The
    dev tier injects a queue, so nothing there runs outside Kueue; JobSets always queue.
    A tier opts in with ``allowUnqueuedCpuWorkloads`` (the RFC's production tier does).

    On UPDATE the engine asks it of both objects: an old object that ran outside Kueue
    was never judged, so an update that brings it in is judged whole.
    """
    if not tier.allow_unqueued_cpu_workloads or tier.default_queue is not None:
        return False
    if workload.kind == JOBSET or policy.queue_label in workload.labels:
        return False
    if workload.malformed:
        return False  # what could not be read might be a TPU request: judge it
    resource = policy.tpu.resource_name
    uses_tpu = workload.tpu_podsets or any(
        container.requests_resource(resource) for podset in workload.podsets for container in podset.init_containers
    )
    return not uses_tpu


def outside_kueue_warning(workload: Workload, tier_name: str, policy: Policy) -> str:
    where = f"{workload.namespace}/{workload.name}" if workload.namespace else workload.name
    return (
        f"{workload.kind} {where} has no {policy.queue_label} label, so Kueue does not manage it and it runs "
        f"outside every quota, as the {tier_name} tier's system components do; add the label to queue it under "
        "your team's quota"
    )
