"""Cluster-aware rules (SPEC §4, last table): will this job ever run on *this* cluster?

Each rule reads the cluster through ``ctx.cluster`` (``webhook.cluster.state``) and the
labels Kueue will see (``ctx.effective_labels``, after the dev-tier injection). The
engine runs a rule only when every kind it ``requires`` is known; a rule that still
finds a piece missing (a namespace not yet in the cache, no node matching a selector)
says nothing rather than guess: unknown is not zero (DD-0018).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from webhook.cluster.model import (
    NODE_FIT_RESOURCES,
    ClusterQueueInfo,
    describe_selector,
    selector_matches,
)
from webhook.cluster.state import ClusterState
from webhook.fieldpaths import LABELS
from webhook.findings import Finding
from webhook.quantity import quantity_or_none
from webhook.rules import RuleContext
from webhook.workload import PodSet, Workload


def _queue(workload: Workload, ctx: RuleContext) -> tuple[ClusterState, str, str | None] | None:
    """The cluster, the LocalQueue name and the ClusterQueue it points to (``None`` if no LQ)."""
    queue = ctx.effective_labels.get(ctx.policy.queue_label)
    if ctx.cluster is None or not queue:
        return None
    return ctx.cluster, queue, ctx.cluster.local_queue(workload.namespace, queue)


def _target(workload: Workload, ctx: RuleContext) -> tuple[ClusterState, ClusterQueueInfo] | None:
    found = _queue(workload, ctx)
    if found is None or not found[2]:
        return None
    info = found[0].cluster_queue(found[2])
    return (found[0], info) if info is not None else None


def _pods(podset: PodSet) -> int:
    """Kueue's podSet count for a replicatedJob: replicas × parallelism."""
    return podset.replicas * (podset.parallelism if podset.parallelism is not None else 1)


def _fmt(resource: str, value: Decimal) -> str:
    if resource in ("memory", "ephemeral-storage"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size:
                return f"{(value / size).quantize(Decimal('0.1')).normalize():f}{unit}"
    if value != value.to_integral_value():
        return f"{(value * 1000).to_integral_value():f}m"
    return f"{value.normalize():f}"


def _resources(values: dict[str, Decimal]) -> str:
    return ", ".join(f"{r} {_fmt(r, v)}" for r, v in sorted(values.items()))


def _chips(value: Decimal | int) -> str:
    return _fmt("", Decimal(value))


# ---------------------------------------------------------------- queues


def local_queue_not_found(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    found = _queue(workload, ctx)
    if found is None:
        return
    cluster, queue, cluster_queue = found
    path = LABELS.key(ctx.policy.queue_label)
    namespace = workload.namespace
    if cluster_queue is None:
        injected = ctx.policy.queue_label not in workload.labels
        existing = cluster.local_queue_names(namespace)
        yield Finding(
            "local-queue-not-found",
            path,
            f"there is no LocalQueue {queue!r} in namespace {namespace!r}"
            + (" (the webhook would inject it as this tier's default queue)" if injected else "")
            + f" (LocalQueues there: {', '.join(existing) or 'none'})",
            f"use one of the namespace's LocalQueues, or ask the admins to create {queue!r} in {namespace!r}",
        )
    elif cluster.cluster_queue(cluster_queue) is None:
        yield Finding(
            "local-queue-not-found",
            path,
            f"LocalQueue {queue!r} points to ClusterQueue {cluster_queue!r}, which does not exist",
            "ask the admins to fix the LocalQueue's spec.clusterQueue",
        )


def namespace_not_selected(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    labels = cluster.namespace_labels(workload.namespace)
    if labels is None or selector_matches(info.namespace_selector, labels):
        return
    why = (
        "has no namespaceSelector (null matches no namespace)"
        if info.namespace_selector is None
        else f"selects namespaces {describe_selector(info.namespace_selector)}"
    )
    shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"
    yield Finding(
        "namespace-not-selected",
        LABELS.key(ctx.policy.queue_label),
        f"ClusterQueue {info.name!r} (behind LocalQueue {ctx.effective_labels[ctx.policy.queue_label]!r}) "
        f"{why}, and namespace {workload.namespace!r} does not match (labels: {shown}), so Kueue would "
        'leave the job pending with "namespace doesn\'t match ClusterQueue selector"',
        "submit through a queue whose ClusterQueue selects this namespace, or fix the namespace's tier label",
    )


def resource_not_covered(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    _, info = target
    for podset in workload.podsets:
        reported: set[str] = set()
        for container in [*podset.containers, *podset.init_containers]:
            for kind, values in (("requests", container.requests), ("limits", container.limits)):
                for resource, raw in values.items():
                    if resource in info.covered or resource in reported or quantity_or_none(raw) == 0:
                        continue
                    reported.add(resource)
                    yield Finding(
                        "resource-not-covered",
                        container.path.child("resources", kind).key(resource),
                        f"podSet {podset.name!r} requests {resource}, which ClusterQueue {info.name!r} "
                        f"does not cover (covered: {', '.join(sorted(info.covered)) or 'nothing'}), so Kueue "
                        f'would report "resource {resource} unavailable in ClusterQueue" and never admit it',
                        f"drop the {resource} request, or ask the admins to add it to the ClusterQueue's "
                        "resource group",
                    )


def _tpu_demand(
    workload: Workload, ctx: RuleContext, cluster: ClusterState, info: ClusterQueueInfo
) -> tuple[dict[str, tuple[int, PodSet]], list[PodSet]]:
    """Chips per TPU flavor (with the first podSet on it), and TPU podSets no flavor takes."""
    tpu = ctx.policy.tpu
    known = ctx.policy.static_topology_set | cluster.static_topologies()
    demand: dict[str, tuple[int, PodSet]] = {}
    unmatched: list[PodSet] = []
    for podset in workload.tpu_podsets:
        per_pod = podset.pod_requests().get(tpu.resource_name)
        if not per_pod:
            continue  # tpu-request-invalid reports it
        flavor = cluster.tpu_flavor(info.name, podset.node_selector)
        if flavor is None:
            selected = podset.node_selector.get(tpu.accelerator_label) == tpu.accelerator_value
            if selected and (ctx.policy.mode == "dynamic" or podset.node_selector.get(tpu.topology_label) in known):
                unmatched.append(podset)
            continue
        chips, first = demand.get(flavor, (0, podset))
        demand[flavor] = (chips + int(per_pod) * _pods(podset), first)
    return demand, unmatched


def exceeds_queue_capacity(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    resource = ctx.policy.tpu.resource_name
    demand, unmatched = _tpu_demand(workload, ctx, cluster, info)
    for podset in unmatched:
        flavors = ", ".join(info.flavors_for(resource)) or "none"
        yield Finding(
            "exceeds-queue-capacity",
            podset.node_selector_path,
            f"TPU podSet {podset.name!r} (nodeSelector {describe_selector({'matchLabels': podset.node_selector})}) "
            f"matches no TPU flavor of ClusterQueue {info.name!r} (flavors: {flavors}), so it can hold 0 chips",
            "select a topology the queue has a flavor for, or ask the admins for quota on it",
        )
    for flavor, (chips, podset) in sorted(demand.items()):
        capacity = cluster.capacity(info.name, flavor, resource)
        if capacity is None or chips <= capacity.maximum:
            continue
        yield Finding(
            "exceeds-queue-capacity",
            podset.path,
            f"the job needs {chips} {resource} of flavor {flavor!r}, but ClusterQueue {info.name!r} can "
            f"never hold more than {_chips(capacity.maximum)} ({capacity.explain()}), so it would never "
            "be admitted",
            f"ask for at most {_chips(capacity.maximum)} chips (fewer replicas or a smaller topology), "
            "or ask the admins to raise the queue's quota",
        )


def guaranteed_balance_exceeded(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    policy = ctx.policy
    if ctx.effective_labels.get(policy.priority_label) != policy.guaranteed_priority_class:
        return
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    demand, _ = _tpu_demand(workload, ctx, cluster, info)
    for flavor, (chips, _podset) in sorted(demand.items()):
        quota = info.quota(flavor, policy.tpu.resource_name)
        nominal = int(quota.nominal) if quota is not None else 0
        holding, waiting = cluster.guaranteed_usage(info.name, flavor)
        balance = nominal - holding - waiting
        if chips <= balance:
            continue
        yield Finding(
            "guaranteed-balance-exceeded",
            LABELS.key(policy.priority_label),
            f"this {policy.guaranteed_priority_class} job needs {chips} chips of flavor {flavor!r}, but "
            f"ClusterQueue {info.name!r} has {max(balance, 0)} guaranteed chips left: nominal {nominal} − "
            f"in use {holding} − pending {waiting} (beyond nominal it would run without its preemption "
            "privilege)",
            f"submit it as best-effort, wait for guaranteed jobs to finish, or ask for at most {max(balance, 0)} chips",
        )


# ---------------------------------------------------------------- nodes


def _tolerations(podset: PodSet) -> tuple[dict[str, Any], ...]:
    raw = podset.pod_spec.get("tolerations")
    return tuple(t for t in raw if isinstance(t, dict)) if isinstance(raw, list) else ()


def exceeds_node_capacity(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster is None:
        return
    tpu = ctx.policy.tpu.resource_name
    for podset in workload.podsets:
        wanted = {r: v for r, v in podset.pod_requests().items() if r in (*NODE_FIT_RESOURCES, tpu)}
        if not wanted:
            continue
        # The TPU taint is tolerated through the TPU flavor, which Kueue injects (RFC 4.2).
        tolerate = frozenset({tpu}) if podset.is_tpu else frozenset()
        fit = ctx.cluster.node_fit(podset.node_selector, wanted, _tolerations(podset), tolerate)
        if fit.fits or fit.matching == 0 or fit.closest is None:
            continue  # no matching node at all is unknown capacity, not zero (DD-0018)
        node = fit.closest
        offered = {r: node.allocatable.get(r, Decimal(0)) for r in wanted}
        short = [r for r in sorted(wanted) if offered[r] < wanted[r]]
        yield Finding(
            "exceeds-node-capacity",
            podset.pod_spec_path.child("containers"),
            f"one pod of podSet {podset.name!r} requests {_resources(wanted)}, but none of the "
            f"{fit.matching} schedulable nodes matching its nodeSelector holds all of it at once (the "
            f"closest, {node.name}, has allocatable {_resources(offered)} (short of {', '.join(short)}))",
            "request no more than one node offers (init containers count at their largest), or select larger nodes",
        )


def insufficient_node_pools(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster is None:
        return
    label = ctx.policy.tpu.topology_label
    slices: dict[str, tuple[int, PodSet]] = {}
    for podset in workload.tpu_podsets:
        topology = podset.node_selector.get(label)
        if topology:
            count, first = slices.get(topology, (0, podset))
            slices[topology] = (count + podset.replicas, first)
    for topology, (needed, podset) in sorted(slices.items()):
        pools = ctx.cluster.node_pools(topology)
        if pools >= needed:
            continue
        yield Finding(
            "insufficient-node-pools",
            podset.paths.replicas,
            f"the job needs {needed} slice(s) of topology {topology}, one node pool each, but the cluster "
            f"has {pools} {topology} node pool(s), so it would pend forever",
            f"use at most {pools} replicas of {topology}, or another topology with enough pools"
            if pools
            else "select a topology the cluster has node pools of",
        )
