"""ClusterQueue rules: a queue Kueue accepts whose jobs would never run, or run wrong.

RFC-0033 4.2 builds every team's ClusterQueue the same way: one resource group holding
``google.com/tpu`` with cpu, memory and ephemeral-storage, its TAS TPU flavor first and
``cpu-standard`` (no topology, 0 chips) last; a namespaceSelector on the tier label
naming one tier; in dynamic mode the Slice Provisioner's AdmissionCheck on the TPU
flavor. Each rule below is one of those facts, and what a job sees when it is broken.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueobjects import ADMISSION_CHECK, CLUSTER_QUEUE, NAMESPACE, KueueObject
from webhook.admin.paths import Group, entries, group_of
from webhook.kube.fieldpaths import SPEC
from webhook.kube.scheduling import describe_selector, selector_matches
from webhook.kueue.amounts import format_amount
from webhook.policy.findings import Action, Finding
from webhook.rules import DYNAMIC, Message, Rule

FAMILY: Final = "clusterqueue"
CQ: Final = frozenset({CLUSTER_QUEUE.kind})
SELECTOR: Final = SPEC.child("namespaceSelector")
CHECKS: Final = SPEC.child("admissionChecksStrategy", "admissionChecks")


def _tpu_group(obj: KueueObject, ctx: AdminContext) -> Group | None:
    return group_of(obj, ctx.tpu)


# ---------------------------------------------------------------- resource groups


def _group_split(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    tpu = _tpu_group(obj, ctx)
    if tpu is None:
        return
    for resource in ctx.policy.kueue.companion_resources:
        other = group_of(obj, resource)
        if other is None or other.index == tpu.index:
            continue
        yield CQ_RESOURCE_GROUP_SPLIT.finding(
            other.covered_path(resource),
            resource=resource,
            other=other.index,
            tpu=ctx.tpu,
            group=tpu.index,
            flavors=", ".join(other.flavors) or "none",
        )


CQ_RESOURCE_GROUP_SPLIT: Final[AdminRule] = Rule(
    "cq-resource-group-split",
    "TPU resource group split from cpu, memory or ephemeral-storage",
    FAMILY,
    _group_split,
    {
        "": Message(
            "{resource} is covered by resourceGroups[{other}] and {tpu} by resourceGroups[{group}]: Kueue gives a "
            "podSet one flavor per group, so a TPU podSet that requests {resource} also takes a flavor of "
            "resourceGroups[{other}] ({flavors}), and one without topology fails it at admission (\"couldn't "
            'assign flavors to pod set ...: Flavor "cpu-standard" does not support TopologyAwareScheduling")',
            "cover {tpu}, cpu, memory and ephemeral-storage in one resource group, every flavor of it declaring "
            "all four (RFC-0033 4.2: 为什么必须单一资源组)",
        )
    },
    NOT_EXPORTED,
    kinds=CQ,
    why="a TPU podSet's cpu, memory or storage taken from a non-TAS group fails TAS admission every time",
)


def _not_covered(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    tpu = _tpu_group(obj, ctx)
    if tpu is None:
        return
    for resource in ctx.policy.kueue.companion_resources:
        if group_of(obj, resource) is None:
            yield CQ_RESOURCE_NOT_COVERED.finding(tpu.path.child("coveredResources"), resource=resource, tpu=ctx.tpu)


CQ_RESOURCE_NOT_COVERED: Final[AdminRule] = Rule(
    "cq-resource-not-covered",
    "TPU ClusterQueue that covers no cpu, memory or ephemeral-storage",
    FAMILY,
    _not_covered,
    {
        "": Message(
            "the ClusterQueue covers {tpu} but no group covers {resource}: a TPU podSet that requests {resource} "
            "(RFC-0033's workers all request ephemeral-storage) gets \"resource {resource} unavailable in "
            'ClusterQueue" and is never admitted',
            "add {resource} to the TPU group's coveredResources, with a quota in each of its flavors",
        )
    },
    NOT_EXPORTED,
    kinds=CQ,
    why="one uncovered resource makes every Workload that requests it inadmissible (RFC-0033 4.2 分流机制)",
)


def _tpu_on_non_tas(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    for entry in entries(obj, ctx.tpu):
        if entry.nominal > 0 and ctx.is_tas(entry.flavor) is False:
            yield CQ_TPU_QUOTA_ON_NON_TAS_FLAVOR.finding(
                entry.path.child("nominalQuota"), flavor=entry.flavor, chips=format_amount(entry.nominal)
            )


CQ_TPU_QUOTA_ON_NON_TAS_FLAVOR: Final[AdminRule] = Rule(
    "cq-tpu-quota-on-non-tas-flavor",
    "TPU quota on a flavor without topology",
    FAMILY,
    _tpu_on_non_tas,
    {
        "": Message(
            "flavor {flavor} has no topologyName but is given {chips} chips of nominal: a TPU podSet asks for a "
            "topology and never lands on it, so these are phantom chips that inflate Σ nominal",
            "set its google.com/tpu nominalQuota to 0 (RFC-0033: cpu-standard declares 0 chips)",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"ResourceFlavors"}),
    kinds=CQ,
    why="chips on a non-TAS flavor exist only on paper and hide an over-promised Σ nominal (RFC-0033 4.2 配额值怎么填)",
)


def _cpu_fallback(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    tpu = _tpu_group(obj, ctx)
    if tpu is None or not tpu.flavors:
        return
    known = [ctx.is_tas(name) for name in tpu.flavors]
    if any(tas is False for tas in known):
        return
    if any(tas is None for tas in known):
        missing = [name for name, tas in zip(tpu.flavors, known, strict=True) if tas is None]
        ctx.unknown.append(f"flavors {', '.join(missing)} of the TPU group are not known ResourceFlavors")
        return
    yield CQ_CPU_FALLBACK_MISSING.finding(tpu.path.child("flavors"), group=tpu.index, flavors=", ".join(tpu.flavors))


CQ_CPU_FALLBACK_MISSING: Final[AdminRule] = Rule(
    "cq-cpu-fallback-missing",
    "TPU resource group without a CPU fallback flavor",
    FAMILY,
    _cpu_fallback,
    {
        "": Message(
            "every flavor of resourceGroups[{group}] ({flavors}) has a topology, so a podSet that asks for none "
            "(a Pathways head, a Deployment's pod) is passed over by all of them (\"supports only "
            'TopologyAwareScheduling") and never admits',
            "add a flavor without topologyName last in the group (RFC-0033's cpu-standard, 0 chips)",
        )
    },
    NOT_EXPORTED,
    default_action=Action.WARN,
    requires=frozenset({"ResourceFlavors"}),
    kinds=CQ,
    why="CPU-only podSets need a non-TAS flavor in the same group (RFC-0033 4.2 分流机制)",
)


# ---------------------------------------------------------------- namespaces


def _selector(obj: KueueObject) -> tuple[bool, dict[str, Any] | None]:
    """Whether spec.namespaceSelector is written, and its value when it is an object."""
    written = "namespaceSelector" in obj.spec
    value = obj.spec.get("namespaceSelector")
    return written, value if isinstance(value, dict) else None


def _selector_missing(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    written, value = _selector(obj)
    if value is None:
        tier = next(iter(ctx.policy.tiers), "<tier>")
        yield CQ_NAMESPACE_SELECTOR_MISSING.finding(
            SELECTOR,
            state="null" if written else "not set",
            label=ctx.policy.tier_label,
            tier=tier,
        )


CQ_NAMESPACE_SELECTOR_MISSING: Final[AdminRule] = Rule(
    "cq-namespace-selector-missing",
    "ClusterQueue without a namespaceSelector",
    FAMILY,
    _selector_missing,
    {
        "": Message(
            "spec.namespaceSelector is {state}, which Kueue reads as matching no namespace: every job sent here "
            'waits with "namespace doesn\'t match ClusterQueue selector", and nothing says quota is not the cause',
            "set namespaceSelector: {{matchLabels: {{{label}: {tier}}}}} for the tier the queue serves",
        )
    },
    NOT_EXPORTED,
    kinds=CQ,
    why="Kueue's default selector (null) matches no namespace (RFC-0033 4.2 命名空间分档)",
)


def _tier_values(selector: dict[str, Any], label: str) -> list[str]:
    values: list[str] = []
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, dict) and label in match_labels:
        values.append(str(match_labels[label]))
    for expression in selector.get("matchExpressions") or []:
        if isinstance(expression, dict) and expression.get("key") == label and expression.get("operator") == "In":
            values += [str(v) for v in expression.get("values") or []]
    return values


def _mentions(selector: dict[str, Any], label: str) -> bool:
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, dict) and label in match_labels:
        return True
    expressions = selector.get("matchExpressions")
    return any(isinstance(e, dict) and e.get("key") == label for e in expressions or [])


def _selector_tier(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    _, selector = _selector(obj)
    if selector is None:
        return
    label = ctx.policy.tier_label
    tiers = ", ".join(ctx.policy.tiers)
    shown = describe_selector(selector)
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        yield CQ_NAMESPACE_SELECTOR_TIER.finding(SELECTOR, "everything", label=label, tiers=tiers)
        return
    if not _mentions(selector, label):
        yield CQ_NAMESPACE_SELECTOR_TIER.finding(SELECTOR, "no-tier", selector=shown, label=label, tiers=tiers)
        return
    unknown = [value for value in _tier_values(selector, label) if value not in ctx.policy.tiers]
    if unknown:
        yield CQ_NAMESPACE_SELECTOR_TIER.finding(
            SELECTOR, "unknown", values=", ".join(unknown), label=label, tiers=tiers
        )
        return
    selected = ctx.selector_tiers(selector)
    if len(selected) > 1:
        yield CQ_NAMESPACE_SELECTOR_TIER.finding(
            SELECTOR, "spans", selector=shown, selected=" and ".join(selected), label=label
        )
    elif not selected:
        yield CQ_NAMESPACE_SELECTOR_TIER.finding(SELECTOR, "none", selector=shown, label=label, tiers=tiers)


CQ_NAMESPACE_SELECTOR_TIER: Final[AdminRule] = Rule(
    "cq-namespace-selector-tier",
    "ClusterQueue selector not on one tier",
    FAMILY,
    _selector_tier,
    {
        "everything": Message(
            "namespaceSelector {{}} matches every namespace, kube-system and kueue-system included: any queue-name "
            "label anywhere spends this queue's quota",
            "select one tier: matchLabels: {{{label}: <tier>}} (tiers: {tiers})",
        ),
        "no-tier": Message(
            "namespaceSelector {selector} does not use the tier label {label}: tiers decide which queue a "
            "namespace's jobs may use, and a newly labelled namespace would not reach this queue",
            "select one tier: matchLabels: {{{label}: <tier>}} (tiers: {tiers})",
        ),
        "unknown": Message(
            "namespaceSelector names tier {values}, which the policy does not have: no namespace is labelled so, "
            'and every job sent here waits with "namespace doesn\'t match ClusterQueue selector"',
            "use one of the tiers {tiers} as the value of {label}",
        ),
        "spans": Message(
            "namespaceSelector {selector} matches both {selected} namespaces: two tiers would share one quota book, "
            "and dev jobs would take production's nominal",
            "select one tier with matchLabels: {{{label}: <tier>}}, one ClusterQueue per tier",
        ),
        "none": Message(
            "namespaceSelector {selector} matches no tier's namespaces: every job sent here waits with "
            '"namespace doesn\'t match ClusterQueue selector"',
            "select one tier: matchLabels: {{{label}: <tier>}} (tiers: {tiers})",
        ),
    },
    NOT_EXPORTED,
    kinds=CQ,
    why="each ClusterQueue serves one tier, chosen by the tier label's value (RFC-0033 4.2 命名空间分档)",
)


def _selects_none(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    _, selector = _selector(obj)
    if selector is None:
        return
    namespaces = ctx.objects.of(NAMESPACE)
    if any(selector_matches(selector, ns.labels) for ns in namespaces):
        return
    yield CQ_SELECTS_NO_NAMESPACE.finding(
        SELECTOR, selector=describe_selector(selector), count=len(namespaces), label=ctx.policy.tier_label
    )


CQ_SELECTS_NO_NAMESPACE: Final[AdminRule] = Rule(
    "cq-selects-no-namespace",
    "ClusterQueue that selects none of the cluster's namespaces",
    FAMILY,
    _selects_none,
    {
        "": Message(
            "namespaceSelector {selector} matches none of the {count} namespaces: until one is labelled, every job "
            'sent here waits with "namespace doesn\'t match ClusterQueue selector"',
            "label the namespaces first (kubectl label namespace <ns> {label}=<tier>), then apply the queue",
        )
    },
    NOT_EXPORTED,
    default_action=Action.WARN,
    requires=frozenset({"Namespaces"}),
    kinds=CQ,
    why="labels must come before the ClusterQueue, or new jobs are refused in between (RFC-0033 4.2 操作约束)",
)


def _dev_zero(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    _, selector = _selector(obj)
    tiers = ctx.selector_tiers(selector)
    dev = ctx.dev_tiers()
    if not tiers or any(tier not in dev for tier in tiers):
        return
    tpu = [e for e in entries(obj, ctx.tpu) if ctx.is_tas(e.flavor) is not False]
    if not tpu or any(e.nominal > 0 for e in tpu):
        return
    yield CQ_DEV_NOMINAL_ZERO.finding(
        tpu[0].path.child("nominalQuota"), tier=" and ".join(tiers), flavors=", ".join(e.flavor for e in tpu)
    )


CQ_DEV_NOMINAL_ZERO: Final[AdminRule] = Rule(
    "cq-dev-nominal-zero",
    "Dev-tier ClusterQueue without TPU nominal",
    FAMILY,
    _dev_zero,
    {
        "": Message(
            "this {tier}-tier ClusterQueue has 0 nominal chips on every TPU flavor ({flavors}): its jobs only run "
            "on chips production lends, and production reclaims them at once, so dev is starved",
            "give it nominal quota on the TPU flavor (RFC-0033 gives dev 64 chips, one cube)",
        )
    },
    NOT_EXPORTED,
    kinds=CQ,
    why="a dev queue with nothing of its own is starved by production (RFC-0033 4.2 开发档必须留有 nominal)",
)


# ---------------------------------------------------------------- the slice check


def _slice_checks(obj: KueueObject, ctx: AdminContext) -> list[tuple[int, dict[str, Any]]]:
    """(index, entry) of the admission checks that are the Slice Provisioner's."""
    strategy = obj.spec.get("admissionChecksStrategy")
    listed = strategy.get("admissionChecks") if isinstance(strategy, dict) else None
    kueue = ctx.policy.kueue
    found = []
    for index, item in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(item, dict):
            continue
        name = str(item.get("name") or "")
        if ctx.objects.knows(ADMISSION_CHECK):
            check = ctx.objects.get(ADMISSION_CHECK, name)
            is_slice = check is not None and check.spec.get("controllerName") == kueue.slice_check_controller
        else:
            is_slice = name == kueue.slice_check_name
        if is_slice:
            found.append((index, item))
    return found


def _slice_check_mode(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    if _tpu_group(obj, ctx) is None:
        return
    checks = _slice_checks(obj, ctx)
    kueue = ctx.policy.kueue
    tas = [f for f in (group_of(obj, ctx.tpu) or _EMPTY).flavors if ctx.is_tas(f) is not False]
    if ctx.mode == "dynamic" and not checks:
        yield CQ_SLICE_CHECK_MODE.finding(
            SPEC.child("admissionChecksStrategy"),
            controller=kueue.slice_check_controller,
            name=kueue.slice_check_name,
            flavors=", ".join(tas) or "<TPU flavor>",
        )
    elif ctx.mode == "static" and checks:
        index, item = checks[0]
        yield CQ_SLICE_CHECK_MODE.finding(CHECKS.index(index), "static", name=item.get("name"))


_EMPTY: Final = Group(-1, (), ())

CQ_SLICE_CHECK_MODE: Final[AdminRule] = Rule(
    "cq-slice-check-mode",
    "Slice AdmissionCheck missing (dynamic) or present (static)",
    FAMILY,
    _slice_check_mode,
    {
        "": Message(
            "the ClusterQueue covers TPU chips but has no admission check of controllerName {controller}: Kueue "
            "admits its jobs without a Slice, so their pods start on hosts no slice joins",
            "add admissionChecksStrategy: {{admissionChecks: [{{name: {name}, onFlavors: [{flavors}]}}]}}",
        ),
        "static": Message(
            "admission check {name} is the Slice Provisioner's, which static mode does not run: the check never "
            "turns Ready, and every job stays QuotaReserved and is never Admitted",
            "remove admissionChecksStrategy (RFC-0033 4.6 ②: static form has no AdmissionCheck)",
        ),
    },
    NOT_EXPORTED,
    kinds=CQ,
    why="dynamic slices form only through the slice check, and static mode has no provisioner to answer it",
)


def _slice_check_scope(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    for index, item in _slice_checks(obj, ctx):
        on = item.get("onFlavors")
        path = CHECKS.index(index).child("onFlavors")
        if not isinstance(on, list) or not on:
            yield CQ_SLICE_CHECK_SCOPE.finding(path, "all", name=item.get("name"))
            continue
        for position, flavor in enumerate(on):
            if ctx.is_tas(str(flavor)) is False:
                yield CQ_SLICE_CHECK_SCOPE.finding(path.index(position), name=item.get("name"), flavor=flavor)


CQ_SLICE_CHECK_SCOPE: Final[AdminRule] = Rule(
    "cq-slice-check-scope",
    "Slice AdmissionCheck on more than the TPU flavors",
    FAMILY,
    _slice_check_scope,
    {
        "all": Message(
            "admission check {name} has no onFlavors, so it gates every Workload of the queue: a CPU-only job on "
            "cpu-standard waits for a Slice it has no TPU podSet to form",
            "set onFlavors to the TPU flavors (RFC-0033: onFlavors: [tpu7x])",
        ),
        "": Message(
            "admission check {name} lists flavor {flavor} in onFlavors, which has no topology: a CPU-only job on "
            "it waits for a Slice it has no TPU podSet to form",
            "list only the TPU flavors in onFlavors",
        ),
    },
    NOT_EXPORTED,
    modes=DYNAMIC,
    default_action=Action.WARN,
    kinds=CQ,
    why="the slice check belongs on the TPU flavor only, so CPU-only jobs do not wait for a Slice (RFC-0033 4.2)",
)

RULES: Final[tuple[AdminRule, ...]] = (
    CQ_RESOURCE_GROUP_SPLIT,
    CQ_RESOURCE_NOT_COVERED,
    CQ_TPU_QUOTA_ON_NON_TAS_FLAVOR,
    CQ_CPU_FALLBACK_MISSING,
    CQ_NAMESPACE_SELECTOR_MISSING,
    CQ_NAMESPACE_SELECTOR_TIER,
    CQ_SELECTS_NO_NAMESPACE,
    CQ_DEV_NOMINAL_ZERO,
    CQ_SLICE_CHECK_MODE,
    CQ_SLICE_CHECK_SCOPE,
)
