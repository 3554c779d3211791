"""Cluster-aware rules (SPEC §4, last table): will this job ever run on *this* cluster?

Each rule reads the cluster through ``ctx.cluster`` (``webhook.cluster.state``) and the
labels Kueue will see (``ctx.effective_labels``, after the dev-tier injection). The
engine runs a rule only when every kind it ``requires`` is known; a rule that still
finds a piece missing (a namespace not yet in the cache, no node matching a selector)
says nothing rather than guess: unknown is not zero (DD-0018).

The rules do no arithmetic: pods, chips, sums and comparisons are the quota package's
(``webhook.quota``); a rule asks it a question and turns the answer into findings.
"""

from __future__ import annotations

from collections.abc import Iterator

from webhook.cluster.state import ClusterState
from webhook.kube.fieldpaths import LABELS
from webhook.objects.workload import PodSet, Workload
from webhook.policy.findings import Finding
from webhook.quota.amounts import format_amount, format_amounts
from webhook.quota.flavorassigner import Attempt, PodSetAssignment, uncovered_requests
from webhook.quota.ledger import guaranteed_shortfalls
from webhook.quota.objects import (
    ClusterQueueInfo,
    describe_selector,
    node_fit_requests,
    parse_tolerations,
    selector_matches,
)
from webhook.quota.podsets import demands_of, exceeding, pool_shortages, requesting
from webhook.rules import RuleContext


def _queue(workload: Workload, ctx: RuleContext) -> tuple[ClusterState, str, str | None] | None:
    """The cluster, the LocalQueue name and the ClusterQueue it points to (``None`` if no LQ)."""
    queue = ctx.effective_labels.get(ctx.queue_label)
    if ctx.cluster is None or not queue:
        return None
    return ctx.cluster, queue, ctx.cluster.local_queue(workload.namespace, queue)


def _target(workload: Workload, ctx: RuleContext) -> tuple[ClusterState, ClusterQueueInfo] | None:
    found = _queue(workload, ctx)
    if found is None or not found[2]:
        return None
    info = found[0].cluster_queue(found[2])
    return (found[0], info) if info is not None else None


# ---------------------------------------------------------------- queues


def local_queue_not_found(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    found = _queue(workload, ctx)
    if found is None:
        return
    cluster, queue, cluster_queue = found
    path = LABELS.key(ctx.queue_label)
    namespace = workload.namespace
    if cluster_queue is None:
        injected = ctx.queue_label not in workload.labels
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
    labels = ctx.namespace_labels if ctx.namespace_labels is not None else cluster.namespace_labels(workload.namespace)
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
        LABELS.key(ctx.queue_label),
        f"ClusterQueue {info.name!r} (behind LocalQueue {ctx.effective_labels[ctx.queue_label]!r}) "
        f"{why}, and namespace {workload.namespace!r} does not match (labels: {shown}), so Kueue would "
        'leave the job pending with "namespace doesn\'t match ClusterQueue selector"',
        "submit through a queue whose ClusterQueue selects this namespace, or fix the namespace's tier label",
    )


def resource_not_covered(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    _, info = target
    covered = info.covered
    for podset in workload.podsets:  # every podSet, a CPU head included (RFC 4.2)
        for container, kind, resource in uncovered_requests(podset, covered):
            yield Finding(
                "resource-not-covered",
                container.path.child("resources", kind).key(resource),
                f"podSet {podset.name!r} requests {resource}, which ClusterQueue {info.name!r} "
                f"does not cover (covered: {', '.join(sorted(covered)) or 'nothing'}), so Kueue "
                f'would report "resource {resource} unavailable in ClusterQueue" and never admit it',
                f"drop the {resource} request, or ask the admins to add it to the ClusterQueue's resource group",
            )


def _skipped_flavors(attempts: tuple[Attempt, ...]) -> str:
    return ", ".join(f"{a.flavor} {a.detail}" for a in attempts)


def exceeds_queue_capacity(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    assignment = cluster.assign(info.name, demands_of(workload))
    # Kueue stops at the first podSet without a flavor: later ones are not judged
    stop = assignment.first_unassigned()
    if stop is None:
        return
    index, certain = stop  # certain: every earlier podSet's flavor is the one Kueue would pick
    podset, result = workload.podsets[index], assignment.podsets[index]
    if result.status == "unknown":
        _note_unknown(ctx, podset, info.name, result.unknown)
    elif certain:
        yield _no_flavor(podset, info.name, result)
    else:
        ctx.unknown.append(
            f"podSet {podset.name!r} in ClusterQueue {info.name!r}: earlier podSets' flavors depend on an "
            "unknown cohort tree"
        )


def _note_unknown(ctx: RuleContext, podset: PodSet, queue: str, unknown: tuple[Attempt, ...]) -> None:
    if unknown:
        ctx.unknown.append(
            f"podSet {podset.name!r} in ClusterQueue {queue!r}: {unknown[0].flavor}: {unknown[0].detail}"
        )


def _no_flavor(podset: PodSet, queue: str, result: PodSetAssignment) -> Finding:
    over = result.exceeded
    skipped = _skipped_flavors(result.passed_over)
    if not over:
        selector = describe_selector({"matchLabels": podset.node_selector})
        return Finding(
            "exceeds-queue-capacity",
            podset.node_selector_path,
            f"podSet {podset.name!r} (nodeSelector {selector}) can get no flavor of ClusterQueue {queue!r} "
            f"({skipped or 'it has none for these resources'}), so it can hold 0 chips and Kueue would never "
            "admit it",
            "select a flavor the queue has (its nodeLabels), or ask the admins for quota on it",
        )
    first = over[0]
    most = first.most
    others = [f"{a.flavor} at most {format_amount(a.most)}" for a in over[1:]]
    problem = (
        f"the job needs {format_amount(first.needed)} {first.resource} of flavor {first.flavor!r}, but "
        f"ClusterQueue {queue!r} can never hold more than {format_amount(most)} ({first.explanation})"
    )
    if others:
        problem += f", and no later flavor either ({', '.join(others)})"
    if skipped:
        problem += f" (passed over: {skipped})"
    return Finding(
        "exceeds-queue-capacity",
        podset.path,
        problem + ", so it would never be admitted",
        f"ask for at most {format_amount(most)} {first.resource} (fewer replicas or a smaller topology), "
        "or ask the admins to raise the queue's quota",
    )


def guaranteed_balance_exceeded(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    policy = ctx.policy
    if ctx.effective_labels.get(ctx.priority_label) != policy.guaranteed_priority_class:
        return
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    tpu = ctx.tpu.resource_name
    # Empty when it never fits (exceeds-queue-capacity says so) or some flavor Kueue could pick holds it
    shortfalls = guaranteed_shortfalls(cluster, info.name, demands_of(workload), tpu)
    if shortfalls is None:
        ctx.unknown.append(f"which flavor Kueue would pick in ClusterQueue {info.name!r} is unknown (cohort tree)")
        return
    for shortfall in shortfalls:
        flavor, balance, left = shortfall.flavor, shortfall.balance, shortfall.left
        needed = format_amount(shortfall.needed, tpu)
        yield Finding(
            "guaranteed-balance-exceeded",
            LABELS.key(ctx.priority_label),
            f"this {policy.guaranteed_priority_class} job needs {needed} chips of flavor {flavor!r}, but "
            f"ClusterQueue {info.name!r} has {left} guaranteed chips left: nominal {balance.nominal} − "
            f"in use {balance.holding} − pending {balance.waiting} (beyond nominal it would run without its "
            "preemption privilege)",
            f"submit it as best-effort, wait for guaranteed jobs to finish, or ask for at most {left} chips",
        )


# ---------------------------------------------------------------- nodes


def exceeds_node_capacity(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster is None:
        return
    tpu = ctx.tpu.resource_name
    for podset in workload.podsets:
        wanted = node_fit_requests(podset.pod_requests(), tpu)
        if not wanted:
            continue
        # The TPU taint is tolerated through the TPU flavor, which Kueue injects (RFC 4.2).
        tolerate = frozenset({tpu}) if podset.is_tpu else frozenset()
        tolerations = parse_tolerations(podset.pod_spec.get("tolerations"))
        fit = ctx.cluster.node_fit(podset.node_selector, wanted, tolerations, tolerate)
        shortfall = fit.shortfall(wanted)
        if shortfall is None:
            continue  # it fits, or no matching node at all: unknown capacity, not zero (DD-0018)
        node, offered, short = shortfall.node, shortfall.offered, shortfall.short
        yield Finding(
            "exceeds-node-capacity",
            podset.pod_spec_path.child("containers"),
            f"one pod of podSet {podset.name!r} requests {format_amounts(wanted)}, but none of the "
            f"{fit.matching} schedulable nodes matching its nodeSelector holds all of it at once (the "
            f"closest, {node.name}, has allocatable {format_amounts(offered)} (short of {', '.join(short)}))",
            "request no more than one node offers (init containers count at their largest), or select larger nodes",
        )
    if ctx.policy.mode == "dynamic":
        yield from _exceeds_accelerator_chips(workload, ctx, ctx.cluster)


def _exceeds_accelerator_chips(workload: Workload, ctx: RuleContext, cluster: ClusterState) -> Iterator[Finding]:
    """Dynamic mode: TAS carves slices out of the tpu7x nodes, so their chips are a hard ceiling."""
    tpu = ctx.tpu
    chips = tpu.resource_name
    podsets = requesting(workload.tpu_podsets, chips)
    if not podsets:
        return
    total = cluster.accelerator_chips()
    if total is None:
        return  # no node advertises the TPU resource: unknown, not zero
    over = exceeding(podsets, chips, total)
    if over is None:
        return
    needed, most = format_amount(over, chips), format_amount(total, chips)
    yield Finding(
        "exceeds-node-capacity",
        podsets[0].path,
        f"the job needs {needed} {tpu.resource_name}, but all {tpu.accelerator_value} nodes of the "
        f"cluster together hold {most}, so topology-aware scheduling could never place it",
        f"ask for at most {most} chips",
    )


def insufficient_node_pools(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster is None:
        return
    for shortage in pool_shortages(workload.tpu_podsets, ctx.tpu.topology_label, ctx.cluster.node_pools):
        topology, needed, pools, podset = shortage.topology, shortage.needed, shortage.pools, shortage.podset
        yield Finding(
            "insufficient-node-pools",
            podset.paths.replicas,
            f"the job needs {needed} slice(s) of topology {topology}, one node pool each, but the cluster "
            f"has {pools} {topology} node pool(s), so it would pend forever",
            f"use at most {pools} replicas of {topology}, or another topology with enough pools"
            if pools
            else "select a topology the cluster has node pools of",
        )
