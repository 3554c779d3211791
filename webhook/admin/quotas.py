"""Quota rules: what the ClusterQueues and Cohorts promise, against each other and the nodes.

RFC-0033's first risk (风险 1) and its test plan: Σ nominal above the cluster's chips makes
"guaranteed" no longer guaranteed; the quota pipeline must refuse it in CI. A sum over
queues is one finding on each object that contributes, with the totals in its message,
so whichever file the pipeline changed, its line carries the numbers. The sums are the
quota package's (``webhook.quota.capacity``); what the rules compute of them is computed
in the quantities' context (``CONTEXT``: 64 digits), as the quota package does, so a
nominal up to the parser's bound (10^31) is a number like any other, never an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import ROUND_CEILING, Decimal
from typing import Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueobjects import CLUSTER_QUEUE, COHORT, KueueObject
from webhook.admin.paths import LIMITS, Entry, entries
from webhook.kube.quantity import CONTEXT
from webhook.kueue.amounts import format_amount
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.policy.findings import Action, Finding
from webhook.quota.capacity import (
    Capacity,
    NominalSum,
    capacity,
    matching_nodes,
    nominal_by_flavor,
    nominal_sum,
    per_unit,
    topology_chips,
)
from webhook.quota.objects import NodeInfo
from webhook.rules import STATIC, Message, Rule

FAMILY: Final = "quota"
QUEUES_AND_COHORTS: Final = frozenset({CLUSTER_QUEUE.kind, COHORT.kind})
ZERO: Final = Decimal(0)


def _total(ctx: AdminContext) -> NominalSum:
    return ctx.cached(  # type: ignore[no-any-return]
        "tpu-sum", lambda: nominal_sum(ctx.queues.values(), ctx.cohorts.values(), ctx.tpu)
    )


def _by_flavor(ctx: AdminContext) -> dict[str, NominalSum]:
    return ctx.cached(  # type: ignore[no-any-return]
        "tpu-by-flavor", lambda: nominal_by_flavor(ctx.queues.values(), ctx.cohorts.values(), ctx.tpu)
    )


def _pool_label(ctx: AdminContext) -> str:
    return ctx.policy.static_slice_level


def _cluster_capacity(ctx: AdminContext) -> Capacity:
    return ctx.cached(  # type: ignore[no-any-return]
        "tpu-capacity", lambda: capacity(ctx.nodes, ctx.tpu, _pool_label(ctx))
    )


def flavor_nodes(ctx: AdminContext, flavor: FlavorInfo) -> list[NodeInfo]:
    """The nodes a flavor's nodeLabels select (made once per flavor and run)."""
    return ctx.cached(  # type: ignore[no-any-return]
        ("flavor-nodes", flavor.name), lambda: matching_nodes(ctx.nodes, flavor.node_labels)
    )


def flavor_capacity(ctx: AdminContext, flavor: FlavorInfo) -> Capacity:
    return ctx.cached(  # type: ignore[no-any-return]
        ("flavor-capacity", flavor.name), lambda: capacity(flavor_nodes(ctx, flavor), ctx.tpu, _pool_label(ctx))
    )


def _tpu_entries(obj: KueueObject, ctx: AdminContext) -> list[Entry]:
    return [e for e in entries(obj, ctx.tpu) if e.nominal > 0]


# ---------------------------------------------------------------- quota-exceeds-cluster


def _exceeds_cluster(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    mine = _tpu_entries(obj, ctx)
    if not mine:
        return
    total, cap = _total(ctx), _cluster_capacity(ctx)
    if total.total <= cap.total:
        return
    yield QUOTA_EXCEEDS_CLUSTER.finding(
        mine[0].path.child("nominalQuota"),
        resource=ctx.tpu,
        total=format_amount(total.total),
        parts=ctx.cached("tpu-sum-parts", total.describe),
        capacity=cap.describe("chips"),
        kind=obj.kind.kind,
        mine=format_amount(total.of(obj.kind.kind, obj.name)),
        over=format_amount(CONTEXT.subtract(total.total, cap.total)),
    )


QUOTA_EXCEEDS_CLUSTER: Final[AdminRule] = Rule(
    "quota-exceeds-cluster",
    "Σ nominal TPU quota above the cluster's chips",
    FAMILY,
    _exceeds_cluster,
    {
        "": Message(
            "Σ nominal {resource} over every ClusterQueue and Cohort is {total} chips ({parts}) > {capacity} "
            "allocatable, and this {kind} promises {mine} of them: guaranteed is no longer guaranteed (a job "
            "within its team's nominal can wait for chips that do not exist)",
            "cut {over} chips of nominal quota across the queues, or add the nodes first",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"Nodes"}),
    kinds=QUEUES_AND_COHORTS,
    why="Σ nominal above the hardware breaks the guarantee silently (RFC-0033 风险 1, 测试计划)",
)


# ---------------------------------------------------------------- quota-exceeds-flavor-capacity


def _exceeds_flavor(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    sums = _by_flavor(ctx)
    for entry in _tpu_entries(obj, ctx):
        flavor = ctx.flavors.get(entry.flavor)
        if flavor is None or not flavor.node_labels:
            continue  # unknown flavor: ref-not-found; no nodeLabels: not one pool kind (cq-tpu-quota-on-non-tas-flavor)
        flavor_sum, cap = sums[entry.flavor], flavor_capacity(ctx, flavor)
        if flavor_sum.total <= cap.total:
            continue
        yield QUOTA_EXCEEDS_FLAVOR_CAPACITY.finding(
            entry.path.child("nominalQuota"),
            total=format_amount(flavor_sum.total),
            flavor=entry.flavor,
            parts=ctx.cached(("tpu-flavor-parts", entry.flavor), flavor_sum.describe),
            capacity=cap.describe("chips"),
            kind=obj.kind.kind,
            mine=format_amount(entry.nominal),
            over=format_amount(CONTEXT.subtract(flavor_sum.total, cap.total)),
        )


QUOTA_EXCEEDS_FLAVOR_CAPACITY: Final[AdminRule] = Rule(
    "quota-exceeds-flavor-capacity",
    "Σ nominal on a static TPU flavor above its node pools' chips",
    FAMILY,
    _exceeds_flavor,
    {
        "": Message(
            "Σ nominal {total} chips on flavor {flavor} ({parts}) > {capacity} that its nodeLabels select, and "
            "this {kind} promises {mine}: a job of that topology cannot use another flavor's pools, so the "
            "guarantee breaks on this flavor even when the cluster total fits",
            "cut {over} chips of nominal on {flavor} across the queues, or add pools of its topology first",
        )
    },
    NOT_EXPORTED,
    modes=STATIC,
    requires=frozenset({"Nodes", "ResourceFlavors"}),
    kinds=frozenset({CLUSTER_QUEUE.kind}),
    why="static pools are one flavor per topology: each flavor's Σ nominal must fit its own pools (RFC-0033 4.6 ②)",
)


# ---------------------------------------------------------------- quota-not-pool-multiple


def _pool_chips(ctx: AdminContext, flavor: FlavorInfo) -> tuple[Decimal | None, str]:
    """One pool's chips for a static flavor, and where that came from (or why unknown)."""
    topology = flavor.node_labels.get(ctx.policy.tpu.topology_label)
    if topology is not None:
        chips = topology_chips(topology)
        if chips is not None:
            return Decimal(chips), f"its {topology} pools"
    if not ctx.objects.knows_plural("Nodes"):
        return None, f"flavor {flavor.name!r} names no {ctx.policy.tpu.topology_label}: add Nodes to --cluster-state"
    pools = set(flavor_capacity(ctx, flavor).pools.values())
    if len(pools) == 1:
        return pools.pop(), "its node pools"
    return None, ""


def _not_pool_multiple(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    for entry in _tpu_entries(obj, ctx):
        flavor = ctx.flavors.get(entry.flavor)
        if flavor is None or not ctx.selects_tpu(flavor):
            continue
        pool, source = _pool_chips(ctx, flavor)
        if pool is None:
            if source:
                ctx.unknown.append(source)
            continue
        unusable = CONTEXT.remainder(entry.nominal, pool)  # a quotient of up to 40 digits: not in the default 28
        if not unusable:
            continue
        lower = CONTEXT.subtract(entry.nominal, unusable)
        upper = CONTEXT.add(lower, pool)
        choices = f"{format_amount(lower)} or {format_amount(upper)}" if lower else f"0 or {format_amount(pool)}"
        yield QUOTA_NOT_POOL_MULTIPLE.finding(
            entry.path.child("nominalQuota"),
            nominal=format_amount(entry.nominal),
            flavor=entry.flavor,
            pool=format_amount(pool),
            source=source,
            unusable=format_amount(unusable),
            choices=choices,
        )


QUOTA_NOT_POOL_MULTIPLE: Final[AdminRule] = Rule(
    "quota-not-pool-multiple",
    "Static TPU nominal not a whole number of pools",
    FAMILY,
    _not_pool_multiple,
    {
        "": Message(
            "nominal {nominal} chips on flavor {flavor} is not a multiple of {source} ({pool} chips each): a job "
            "takes whole pools, so {unusable} chips of it can never be used",
            "set it to a multiple of {pool} ({choices})",
        )
    },
    NOT_EXPORTED,
    modes=STATIC,
    default_action=Action.WARN,
    requires=frozenset({"ResourceFlavors"}),
    kinds=frozenset({CLUSTER_QUEUE.kind}),
    why="a static job occupies whole node pools: a remainder of nominal is quota nobody can use (RFC-0033 4.6 ②)",
)


# ---------------------------------------------------------------- cq-limit-invalid


def _limit_invalid(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    is_queue = obj.kind is CLUSTER_QUEUE
    parent_field = "cohortName" if is_queue else "parentName"
    has_parent = bool(obj.spec.get(parent_field))
    for entry in entries(obj):
        nominal = entry.amount("nominalQuota")
        for limit in LIMITS:
            amount = entry.amount(limit)
            if amount is None:
                continue
            path = entry.path.child(limit)
            shown = format_amount(amount, entry.resource)
            if amount < 0:
                yield CQ_LIMIT_INVALID.finding(path, "negative", limit=limit, value=shown, resource=entry.resource)
            elif limit != "nominalQuota" and not has_parent:
                yield CQ_LIMIT_INVALID.finding(
                    path, "no-parent", limit=limit, value=shown, kind=obj.kind.kind, parent=parent_field
                )
            elif limit == "lendingLimit" and is_queue and nominal is not None and amount > nominal:
                yield CQ_LIMIT_INVALID.finding(
                    path, "lending", value=shown, nominal=format_amount(nominal, entry.resource)
                )


CQ_LIMIT_INVALID: Final[AdminRule] = Rule(
    "cq-limit-invalid",
    "Quota limit Kueue refuses",
    FAMILY,
    _limit_invalid,
    {
        "negative": Message(
            "{limit} of {resource} is {value}: Kueue's webhook refuses a negative quota", "set it to 0 or more"
        ),
        "no-parent": Message(
            "{limit} is {value} but the {kind} has no spec.{parent}: Kueue's webhook refuses a limit without a "
            'cohort to borrow from or lend to ("must be nil when cohort is empty")',
            "remove the {limit}, or set spec.{parent}",
        ),
        "lending": Message(
            "lendingLimit {value} is more than the nominalQuota {nominal}: Kueue's webhook refuses it (\"must be "
            'less than or equal to the nominalQuota")',
            "lower the lendingLimit to at most {nominal}",
        ),
    },
    NOT_EXPORTED,
    kinds=QUEUES_AND_COHORTS,
    why="the quota pipeline must refuse a negative limit in CI, before Kueue's webhook refuses the apply (测试计划)",
)


# ---------------------------------------------------------------- cq-companion-quota


def _per_chip(ctx: AdminContext, flavor: FlavorInfo, nodes: list[NodeInfo], resource: str) -> Decimal | None:
    """``resource`` per chip on the flavor's nodes, once per flavor and run (1,000 queues share it)."""
    return ctx.cached(  # type: ignore[no-any-return]
        ("per-chip", flavor.name, resource), lambda: per_unit(nodes, resource, ctx.tpu)
    )


def _ceil(value: Decimal) -> Decimal:
    return value.to_integral_value(rounding=ROUND_CEILING, context=CONTEXT)


def _companion(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    known_nodes = ctx.objects.knows_plural("Nodes")
    for tpu_entry in _tpu_entries(obj, ctx):
        flavor = ctx.flavors.get(tpu_entry.flavor)
        if flavor is None or flavor.topology_name is None:
            continue
        nodes = flavor_nodes(ctx, flavor) if known_nodes else []
        chips_there = flavor_capacity(ctx, flavor).total if known_nodes else ZERO
        borrowing = tpu_entry.amount("borrowingLimit") or ZERO
        usable = min(CONTEXT.add(tpu_entry.nominal, borrowing), chips_there) if chips_there else ZERO
        for resource in ctx.policy.kueue.companion_resources:
            companion = next((e for e in entries(obj, resource) if e.flavor == tpu_entry.flavor), None)
            if companion is None:
                continue  # not covered: cq-resource-not-covered / cq-resource-group-split
            path = companion.path.child("nominalQuota")
            if companion.nominal <= 0:
                yield CQ_COMPANION_QUOTA.finding(path, "zero", resource=resource, flavor=tpu_entry.flavor)
                continue
            ratio = _per_chip(ctx, flavor, nodes, resource) if usable else None
            if ratio is None:
                continue
            needed = _ceil(CONTEXT.multiply(usable, ratio))
            reach = CONTEXT.add(companion.nominal, companion.amount("borrowingLimit") or ZERO)
            if reach < needed:
                yield CQ_COMPANION_QUOTA.finding(
                    path,
                    resource=resource,
                    flavor=tpu_entry.flavor,
                    reach=format_amount(reach, resource),
                    usable=format_amount(usable),
                    per_chip=format_amount(
                        ratio.quantize(Decimal("0.01"), context=CONTEXT).normalize(CONTEXT), resource
                    ),
                    needed=format_amount(needed, resource),
                    chips=format_amount(_ceil(CONTEXT.divide(reach, ratio))),
                )


CQ_COMPANION_QUOTA: Final[AdminRule] = Rule(
    "cq-companion-quota",
    "CPU, memory or storage quota of a TPU flavor too small for its chips",
    FAMILY,
    _companion,
    {
        "zero": Message(
            "{resource} nominal on TPU flavor {flavor} is 0: a TPU podSet draws its {resource} from the same "
            "flavor, so the chips fit and the {resource} quota refuses the job",
            "give it a quota too large to bind (RFC-0033 uses 100000 for cpu, 100000Gi for memory and storage)",
        ),
        "": Message(
            "{resource} quota on TPU flavor {flavor} reaches {reach}, enough for {chips} of the {usable} chips the "
            "queue can use (its nodes have {per_chip} {resource} per chip, so {usable} chips bring {needed}): the "
            "chips fit and the {resource} quota refuses the job",
            "raise it to at least {needed} (RFC-0033 uses a quota too large to bind, such as 100000)",
        ),
    },
    NOT_EXPORTED,
    default_action=Action.WARN,
    requires=frozenset({"ResourceFlavors"}),
    kinds=frozenset({CLUSTER_QUEUE.kind}),
    why="TPU hosts come with their CPU and memory: a second binding dimension refuses jobs the chips could run",
)


RULES: Final[tuple[AdminRule, ...]] = (
    QUOTA_EXCEEDS_CLUSTER,
    QUOTA_EXCEEDS_FLAVOR_CAPACITY,
    QUOTA_NOT_POOL_MULTIPLE,
    CQ_LIMIT_INVALID,
    CQ_COMPANION_QUOTA,
)
