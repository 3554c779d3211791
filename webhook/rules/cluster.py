"""Cluster-aware rules: will this job ever run on *this* cluster?

Each rule reads the cluster through ``ctx.cluster`` (``webhook.cluster.view``) and the
labels Kueue will see (``ctx.effective_labels``, after the dev-tier injection). The
engine runs a rule only when every kind it ``requires`` is known; a rule that still
finds a piece missing (a namespace not yet in the cache, no node matching a selector)
says nothing rather than guess: unknown is not zero (DD-0018).

The rules do no arithmetic: pods, chips, sums and comparisons are the quota package's
(``webhook.quota``); a rule asks it a question and turns the answer into findings.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Final

import msgspec

from webhook.cluster.view import ClusterView
from webhook.kube.fieldpaths import LABELS
from webhook.kube.scheduling import describe_selector, parse_tolerations, selector_matches
from webhook.kueue.amounts import format_amount, format_amounts
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.objects.workload import PodSet, Workload
from webhook.policy.findings import Finding
from webhook.quota.feasibility import Attempt, Feasibility, PodSetFeasibility, uncovered_requests
from webhook.quota.objects import node_fit_requests
from webhook.quota.podsets import exceeding, pool_shortages, requesting
from webhook.rules import JOBS, STATIC, Message, Rule, RuleContext, VapExport

FAMILY: Final = "cluster"
#: the kinds every queue rule reads
QUEUES: Final = frozenset({"LocalQueues", "ClusterQueues"})
#: why no cluster rule is in the ValidatingAdmissionPolicy
NOT_EXPORTED: Final = VapExport("reads the cluster's state, which a VAP cannot")


def _queue(workload: Workload, ctx: RuleContext) -> tuple[ClusterView, str, str | None] | None:
    """The cluster, the LocalQueue name and the ClusterQueue it points to (``None`` if no LQ)."""
    queue = ctx.effective_labels.get(ctx.queue_label)
    if ctx.cluster is None or not queue:
        return None
    return ctx.cluster, queue, ctx.cluster.local_queue(workload.namespace, queue)


def _target(workload: Workload, ctx: RuleContext) -> tuple[ClusterView, ClusterQueueInfo] | None:
    found = _queue(workload, ctx)
    if found is None or not found[2]:
        return None
    info = found[0].cluster_queue(found[2])
    return (found[0], info) if info is not None else None


# ---------------------------------------------------------------- queues


def _local_queue_not_found(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    found = _queue(workload, ctx)
    if found is None:
        return
    cluster, queue, cluster_queue = found
    path = LABELS.key(ctx.queue_label)
    namespace = workload.namespace
    if cluster_queue is None:
        injected = ctx.queue_label not in workload.labels
        existing = cluster.local_queue_names(namespace)
        yield LOCAL_QUEUE_NOT_FOUND.finding(
            path,
            queue=queue,
            namespace=namespace,
            injected=" (the webhook would inject it as this tier's default queue)" if injected else "",
            existing=", ".join(existing) or "none",
        )
    elif cluster.cluster_queue(cluster_queue) is None:
        yield LOCAL_QUEUE_NOT_FOUND.finding(path, "no-cluster-queue", queue=queue, cluster_queue=cluster_queue)


LOCAL_QUEUE_NOT_FOUND: Final = Rule(
    "local-queue-not-found",
    "LocalQueue not found",
    FAMILY,
    _local_queue_not_found,
    {
        "": Message(
            "there is no LocalQueue {queue!r} in namespace {namespace!r}{injected} (LocalQueues there: {existing})",
            "use one of the namespace's LocalQueues, or ask the admins to create {queue!r} in {namespace!r}",
        ),
        "no-cluster-queue": Message(
            "LocalQueue {queue!r} points to ClusterQueue {cluster_queue!r}, which does not exist",
            "ask the admins to fix the LocalQueue's spec.clusterQueue",
        ),
    },
    NOT_EXPORTED,
    requires=QUEUES,
    why="a job sent to a missing LocalQueue (or the dev default that is not there) is stranded",
)


def _namespace_not_selected(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
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
    yield NAMESPACE_NOT_SELECTED.finding(
        LABELS.key(ctx.queue_label),
        cluster_queue=info.name,
        queue=ctx.effective_labels[ctx.queue_label],
        why=why,
        namespace=workload.namespace,
        labels=shown,
    )


NAMESPACE_NOT_SELECTED: Final = Rule(
    "namespace-not-selected",
    "Namespace not selected by the ClusterQueue",
    FAMILY,
    _namespace_not_selected,
    {
        "": Message(
            "ClusterQueue {cluster_queue!r} (behind LocalQueue {queue!r}) {why}, and namespace {namespace!r} does "
            "not match (labels: {labels}), so Kueue would leave the job pending with \"namespace doesn't match "
            'ClusterQueue selector"',
            "submit through a queue whose ClusterQueue selects this namespace, or fix the namespace's tier label",
        )
    },
    NOT_EXPORTED,
    requires=QUEUES | {"Namespaces"},
    why="Kueue would leave it pending: namespace doesn't match ClusterQueue selector",
)


def _resource_not_covered(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    _, info = target
    covered = info.covered
    for podset in workload.podsets:  # every podSet, a CPU head included (RFC-0033's quota design)
        for container, kind, resource in uncovered_requests(podset, covered):
            yield RESOURCE_NOT_COVERED.finding(
                container.path.child("resources", kind).key(resource),
                podset=podset.name,
                resource=resource,
                cluster_queue=info.name,
                covered=", ".join(sorted(covered)) or "nothing",
            )


RESOURCE_NOT_COVERED: Final = Rule(
    "resource-not-covered",
    "Resource not covered by the ClusterQueue",
    FAMILY,
    _resource_not_covered,
    {
        "": Message(
            "podSet {podset!r} requests {resource}, which ClusterQueue {cluster_queue!r} does not cover (covered: "
            '{covered}), so Kueue would report "resource {resource} unavailable in ClusterQueue" and never admit it',
            "drop the {resource} request, or ask the admins to add it to the ClusterQueue's resource group",
        )
    },
    NOT_EXPORTED,
    requires=QUEUES,
    why="one uncovered resource (often ephemeral-storage) makes the whole Workload inadmissible",
)


def _skipped_flavors(attempts: tuple[Attempt, ...]) -> str:
    return ", ".join(f"{a.flavor} {a.detail}" for a in attempts)


def _exceeds_queue_capacity(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    assignment = cluster.assign(info.name, ctx.demands(workload))
    if assignment.status == "unknown":
        ctx.unknown.append(assignment.doubt)
    if assignment.status != "nofit":
        return
    index = assignment.first_unassigned()  # Kueue stops at the first podSet without a flavor
    if index is not None:
        yield _no_flavor(workload.podsets[index], info.name, assignment.podsets[index])
    else:
        yield _together(workload, info.name, assignment)


def _no_flavor(podset: PodSet, queue: str, result: PodSetFeasibility) -> Finding:
    over = result.exceeded
    skipped = _skipped_flavors(result.passed_over)
    if not over:
        selector = describe_selector({"matchLabels": podset.node_selector})
        return EXCEEDS_QUEUE_CAPACITY.finding(
            podset.node_selector_path,
            "no-flavor",
            podset=podset.name,
            selector=selector,
            cluster_queue=queue,
            skipped=skipped or "it has none for these resources",
        )
    first = over[0]
    others = [f"{a.flavor} at most {format_amount(a.most)}" for a in over[1:]]
    return EXCEEDS_QUEUE_CAPACITY.finding(
        podset.path,
        needed=format_amount(first.needed),
        resource=first.resource,
        flavor=first.flavor,
        cluster_queue=queue,
        most=format_amount(first.most),
        explanation=first.explanation,
        others=f", and no later flavor either ({', '.join(others)})" if others else "",
        skipped=f" (passed over: {skipped})" if skipped else "",
    )


def _together(workload: Workload, queue: str, assignment: Feasibility) -> Finding:
    """Every podSet fits some flavor on its own, but no choice of flavors holds them all at once."""
    contended = [
        f"flavor {c.flavor!r} can hold at most {format_amount(c.most, c.resource)} {c.resource} ({c.explanation}) "
        f"of the {format_amount(c.needed, c.resource)} the podSets that could take it ask for"
        for c in assignment.contended
    ]
    first = assignment.contended[0].flavor if assignment.contended else ""
    takers = [i for i, p in enumerate(assignment.podsets) if first in p.options] or [len(workload.podsets) - 1]
    podsets = ", ".join(f"{p.name!r} ({' or '.join(p.options)})" for p in assignment.podsets if p.options)
    return EXCEEDS_QUEUE_CAPACITY.finding(
        workload.podsets[takers[-1]].path,
        "together",
        podsets=podsets,
        cluster_queue=queue,
        contended=", ".join(contended) or "their sums exceed what the flavors hold",
        flavors=", ".join(dict.fromkeys(repr(c.flavor) for c in assignment.contended)) or "its flavors",
    )


EXCEEDS_QUEUE_CAPACITY: Final = Rule(
    "exceeds-queue-capacity",
    "More chips than the queue can ever hold",
    FAMILY,
    _exceeds_queue_capacity,
    {
        "": Message(
            "the job needs {needed} {resource} of flavor {flavor!r}, but ClusterQueue {cluster_queue!r} can never "
            "hold more than {most} ({explanation}){others}{skipped}, so it would never be admitted",
            "ask for at most {most} {resource} (fewer replicas or a smaller topology), or ask the admins to raise "
            "the queue's quota",
        ),
        "no-flavor": Message(
            "podSet {podset!r} (nodeSelector {selector}) can get no flavor of ClusterQueue {cluster_queue!r} "
            "({skipped}), so it can hold 0 chips and Kueue would never admit it",
            "select a flavor the queue has (its nodeLabels), or ask the admins for quota on it",
        ),
        "together": Message(
            "the podSets {podsets} each fit a flavor of ClusterQueue {cluster_queue!r} on their own, but no choice "
            "of flavors holds them together: {contended}, so it would never be admitted",
            "ask for less (fewer replicas or smaller pods), or ask the admins to raise the queue's quota on {flavors}",
        ),
    },
    NOT_EXPORTED,
    requires=QUEUES | {"ResourceFlavors"},
    why="no flavor Kueue could assign can ever hold it (nominal + what the cohort tree may lend)",
)


def _guaranteed_balance_exceeded(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    policy = ctx.policy
    if ctx.effective_labels.get(ctx.priority_label) != policy.guaranteed_priority_class:
        return
    target = _target(workload, ctx)
    if target is None:
        return
    cluster, info = target
    tpu = ctx.tpu.resource_name
    # None when it never fits (exceeds-queue-capacity says so) or some choice of flavors holds it in the balance
    answer = cluster.guaranteed_shortfalls(info.name, ctx.demands(workload))
    if answer.unknown:
        ctx.unknown.append(f"the guaranteed balance of ClusterQueue {info.name!r}: {answer.unknown}")
    for shortfall in answer.shortfalls:
        flavor, balance, left = shortfall.flavor, shortfall.balance, shortfall.left
        yield GUARANTEED_BALANCE_EXCEEDED.finding(
            LABELS.key(ctx.priority_label),
            "usage-unknown" if balance.unknown else "",
            priority=policy.guaranteed_priority_class,
            needed=format_amount(shortfall.needed, tpu),
            flavor=flavor,
            cluster_queue=info.name,
            left=left,
            nominal=balance.nominal,
            holding=balance.holding,
            waiting=balance.waiting,
            unknown=balance.unknown,
        )


GUARANTEED_BALANCE_EXCEEDED: Final = Rule(
    "guaranteed-balance-exceeded",
    "Guaranteed balance exceeded",
    FAMILY,
    _guaranteed_balance_exceeded,
    {
        "": Message(
            "this {priority} job needs {needed} chips of flavor {flavor!r}, but ClusterQueue {cluster_queue!r} has "
            "{left} guaranteed chips left: nominal {nominal} − in use {holding} − pending {waiting} (beyond nominal "
            "it would run without its preemption privilege)",
            "submit it as best-effort, wait for guaranteed jobs to finish, or ask for at most {left} chips",
        ),
        "usage-unknown": Message(
            "this {priority} job needs {needed} chips of flavor {flavor!r}, but ClusterQueue {cluster_queue!r} has "
            "at most {left} guaranteed chips left, its nominal: what its guaranteed Workloads hold and wait for "
            "can only lower it ({unknown}) (beyond nominal it would run without its preemption privilege)",
            "submit it as best-effort, or ask for at most {left} chips",
        ),
    },
    NOT_EXPORTED,
    requires=QUEUES | {"ResourceFlavors"},
    why="beyond the team's nominal a guaranteed job loses its preemption privilege",
)


# ---------------------------------------------------------------- nodes


def _exceeds_node_capacity(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster is None:
        return
    tpu = ctx.tpu.resource_name
    for podset in workload.podsets:
        wanted = node_fit_requests(podset.pod_requests(), tpu)
        if not wanted:
            continue
        # The TPU taint is tolerated through the TPU flavor, which Kueue injects (RFC-0033's quota design).
        tolerate = frozenset({tpu}) if podset.is_tpu else frozenset()
        tolerations = parse_tolerations(podset.pod_spec.get("tolerations"))
        fit = ctx.cluster.node_fit(podset.node_selector, wanted, tolerations, tolerate)
        shortfall = fit.shortfall(wanted)
        if shortfall is None:
            continue  # it fits, or no matching node at all: unknown capacity, not zero (DD-0018)
        node, offered, short = shortfall.node, shortfall.offered, shortfall.short
        yield EXCEEDS_NODE_CAPACITY.finding(
            podset.pod_spec_path.child("containers"),
            podset=podset.name,
            wanted=format_amounts(wanted),
            matching=fit.matching,
            node=node.name,
            offered=format_amounts(offered),
            short=", ".join(short),
        )
    if ctx.policy.mode == "dynamic":
        yield from _exceeds_accelerator_chips(workload, ctx, ctx.cluster)


def _exceeds_accelerator_chips(workload: Workload, ctx: RuleContext, cluster: ClusterView) -> Iterator[Finding]:
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
    yield EXCEEDS_NODE_CAPACITY.finding(
        podsets[0].path,
        "cluster",
        needed=format_amount(over, chips),
        resource=tpu.resource_name,
        accelerator=tpu.accelerator_value,
        most=format_amount(total, chips),
    )


EXCEEDS_NODE_CAPACITY: Final = Rule(
    "exceeds-node-capacity",
    "One pod fits no node",
    FAMILY,
    _exceeds_node_capacity,
    {
        "": Message(
            "one pod of podSet {podset!r} requests {wanted}, but none of the {matching} schedulable nodes matching "
            "its nodeSelector holds all of it at once (the closest, {node}, has allocatable {offered} (short of "
            "{short}))",
            "request no more than one node offers (init containers count at their largest), or select larger nodes",
        ),
        "cluster": Message(
            "the job needs {needed} {resource}, but all {accelerator} nodes of the cluster together hold {most} "
            "(each node pool counted at the size its topology declares, hosts under repair included), so "
            "topology-aware scheduling could never place it",
            "ask for at most {most} chips",
        ),
    },
    NOT_EXPORTED,
    requires=frozenset({"Nodes"}),
    why="one node must hold a pod's CPU, memory, disk and TPU together (DD-0018), and in dynamic mode "
    "all tpu7x nodes together the job's chips",
)


def _insufficient_node_pools(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster is None:
        return
    for shortage in pool_shortages(workload.tpu_podsets, ctx.tpu.topology_label, ctx.cluster.node_pools):
        topology, needed, pools, podset = shortage.topology, shortage.needed, shortage.pools, shortage.podset
        yield INSUFFICIENT_NODE_POOLS.finding(
            podset.paths.replicas, "" if pools else "none", needed=needed, topology=topology, pools=pools
        )


_POOLS_PROBLEM: Final = (
    "the job needs {needed} slice(s) of topology {topology}, one node pool each, but the cluster has {pools} "
    "{topology} node pool(s), so it would pend forever"
)

INSUFFICIENT_NODE_POOLS: Final = Rule(
    "insufficient-node-pools",
    "Too few node pools of the topology",
    FAMILY,
    _insufficient_node_pools,
    {
        "": Message(
            _POOLS_PROBLEM, "use at most {pools} replicas of {topology}, or another topology with enough pools"
        ),
        "none": Message(_POOLS_PROBLEM, "select a topology the cluster has node pools of"),
    },
    NOT_EXPORTED,
    modes=STATIC,
    requires=frozenset({"Nodes"}),
    kinds=JOBS,
    why="each slice takes one static node pool; with fewer pools the job pends forever",
)


#: the judged object's ``spec`` as JSON text: everything its podSets are built from
_SPEC_TEXT: Final = msgspec.json.Encoder().encode


def recall_key(workload: Workload, ctx: RuleContext) -> Hashable | None:
    """Everything the cluster family's rules (these and ``webhook.rules.services``') read of
    the job and of the request, as one hashable value.

    Against one snapshot of the cluster, two jobs with equal keys get the same findings, so
    the engine memoizes them on the snapshot (``webhook.engine.decision``). The key holds
    the object's ``spec`` as JSON text (every field a podSet is built from: equal texts,
    equal podSets; one bytes value, hashed and compared in C) and what the checks read
    besides: the namespace, the queue and priority labels, the tier, the namespace's labels
    when the caller gave them. Not the job's name: jobs made from one template share it. A
    check that reads a new field outside ``spec`` adds it here;
    ``tests/test_cluster_snapshot.py`` varies each field and compares with a fresh decision.
    ``None`` when the spec cannot be written as JSON (a value YAML made that JSON has not).
    """
    try:
        spec = _SPEC_TEXT(workload.spec)
    except (TypeError, ValueError, OverflowError):
        return None
    labels, namespace_labels = ctx.effective_labels, ctx.namespace_labels
    return (
        workload.kind,  # (the engine's plan, whose findings these are, is per kind too)
        workload.namespace,
        ctx.tier_name,  # whether the tier names a default queue (``webhook.rules.services``)
        labels.get(ctx.queue_label),
        ctx.queue_label in workload.labels,  # whether the queue is the injected default (its wording)
        labels.get(ctx.priority_label),
        None if namespace_labels is None else tuple(sorted(namespace_labels.items())),
        spec,
    )


RULES: Final[tuple[Rule, ...]] = (
    LOCAL_QUEUE_NOT_FOUND,
    NAMESPACE_NOT_SELECTED,
    RESOURCE_NOT_COVERED,
    EXCEEDS_QUEUE_CAPACITY,
    GUARANTEED_BALANCE_EXCEEDED,
    EXCEEDS_NODE_CAPACITY,
    INSUFFICIENT_NODE_POOLS,
)
