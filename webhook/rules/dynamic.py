"""TPU placement in dynamic mode.

The user declares the slice with the slice-topology annotation on a TPU podSet's pod
template and the Slice Provisioner does the rest: it makes a Slice per replicatedJob
index, named after the JobSet, and Kueue's topology-aware scheduling places it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.kube.fieldpaths import METADATA
from webhook.kube.topology import TopologyError, parse_topology, super_slice_problems
from webhook.objects.workload import PodSet, Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Finding
from webhook.rules import DYNAMIC, JOBS, JOBSET_ONLY, Message, Rule, RuleContext, VapExport
from webhook.rules.cel import (
    ANN,
    NODE_SELECTOR_PATH,
    POD_ANNOTATIONS_PATH,
    REPLICAS,
    SEL,
    TPU_JOBS,
    Expr,
    TopologyCel,
    Validation,
    cat,
    choose,
    lit,
    lits,
)

FAMILY: Final = "dynamic"


def _annotation_path(policy: Policy) -> list[str | Expr]:
    """Where the CEL export names a TPU podSet's slice-topology annotation."""
    return [POD_ANNOTATIONS_PATH, f'["{policy.tpu.slice_topology_annotation}"]']


# ------------------------------------------------------------------ slice-topology-missing


def _slice_topology_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.tpu_podsets:
        if annotation not in podset.annotations:
            yield SLICE_TOPOLOGY_MISSING.finding(
                podset.annotations_path.key(annotation), podset=podset.name, annotation=annotation
            )


def _slice_topology_missing_cel(policy: Policy) -> Iterator[Validation]:
    rule = SLICE_TOPOLOGY_MISSING
    annotation = policy.tpu.slice_topology_annotation
    item = rule.cel_item(_annotation_path(policy), podset=Expr("j.name"), annotation=annotation)
    yield rule.per_job(policy, TPU_JOBS, f"!({lit(annotation)} in {ANN})", item, "a TPU podSet has no slice topology")


SLICE_TOPOLOGY_MISSING: Final = Rule(
    "slice-topology-missing",
    "Slice topology missing",
    FAMILY,
    _slice_topology_missing,
    {
        "": Message(
            "TPU podSet {podset!r} has no slice topology, so Kueue would later report only 'quota insufficient'",
            "add the pod template annotation {annotation}, e.g. 4x4x4",
        )
    },
    VapExport("", _slice_topology_missing_cel),
    modes=DYNAMIC,
    kinds=JOBS,
    why="Kueue would report 'quota insufficient' without naming the missing annotation",
)


# ------------------------------------------------------------------ slice-topology-invalid


def allowed_topologies_text(policy: Policy) -> str:
    """What ``slice-topology-invalid`` says is allowed (the exported policy says the same)."""
    limits = policy.super_slice
    text = (
        f"super-slice AxBxC non-decreasing, each a multiple of {limits.dimension_multiple}, "
        f"at least {limits.min_topology}, at most {limits.max_chips} chips and "
        f"{limits.max_sub_blocks} sub-blocks of {limits.sub_block_chips} chips"
    )
    if policy.sub_slicing:
        text += f", or sub-slice {', '.join(policy.sub_slice_topologies)}"
    return text


def _slice_topology_invalid(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    sub_slices = set(ctx.policy.sub_slice_topologies)
    for podset in workload.tpu_podsets:
        value = podset.annotations.get(annotation)
        if value is None or value in sub_slices:
            continue
        try:
            problems = super_slice_problems(parse_topology(value), ctx.policy.super_slice)
        except TopologyError as exc:
            problems = (str(exc),)
        if problems:
            yield SLICE_TOPOLOGY_INVALID.finding(
                podset.annotations_path.key(annotation),
                value=value,
                problems=", ".join(problems),
                allowed=allowed_topologies_text(ctx.policy),
            )


def _slice_topology_invalid_cel(policy: Policy) -> Iterator[Validation]:
    rule = SLICE_TOPOLOGY_INVALID
    annotation = lit(policy.tpu.slice_topology_annotation)
    value = f"{ANN}[{annotation}]"
    topology = TopologyCel(value, policy)
    bad = (
        f"({annotation} in {ANN} && !({value} in {lits(policy.sub_slice_topologies)}) && !{topology.valid_super_slice})"
    )
    item = rule.cel_item(
        _annotation_path(policy),
        value=Expr(value),
        problems=Expr(topology.problem_text()),
        allowed=allowed_topologies_text(policy),
    )
    yield rule.per_job(policy, TPU_JOBS, bad, item, "a slice topology is not an allowed one")


SLICE_TOPOLOGY_INVALID: Final = Rule(
    "slice-topology-invalid",
    "Slice topology not allowed",
    FAMILY,
    _slice_topology_invalid,
    {"": Message("slice topology {value!r} is not allowed: {problems}", "use an allowed value: {allowed}")},
    VapExport("", _slice_topology_invalid_cel),
    modes=DYNAMIC,
    kinds=JOBS,
    why="only the super-slice grammar and the four sub-slice shapes can be provisioned",
)


# ------------------------------------------------------------------ sub-slicing-disabled


def _sub_slicing_disabled(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    if ctx.policy.sub_slicing:
        return
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.tpu_podsets:
        value = podset.annotations.get(annotation)
        if value in ctx.policy.sub_slice_topologies:
            yield SUB_SLICING_DISABLED.finding(
                podset.annotations_path.key(annotation), value=value, minimum=ctx.policy.super_slice.min_topology
            )


def _sub_slicing_disabled_cel(policy: Policy) -> Iterator[Validation]:
    if policy.sub_slicing:
        return  # the rule has nothing to say
    rule = SUB_SLICING_DISABLED
    annotation = lit(policy.tpu.slice_topology_annotation)
    value = f"{ANN}[{annotation}]"
    item = rule.cel_item(_annotation_path(policy), value=Expr(value), minimum=policy.super_slice.min_topology)
    bad = f"({annotation} in {ANN} && {value} in {lits(policy.sub_slice_topologies)})"
    yield rule.per_job(policy, TPU_JOBS, bad, item, "sub-slicing is not enabled on this cluster")


SUB_SLICING_DISABLED: Final = Rule(
    "sub-slicing-disabled",
    "Sub-slicing disabled",
    FAMILY,
    _sub_slicing_disabled,
    {
        "": Message(
            "{value} is a sub-slice and sub-slicing is not enabled on this cluster",
            "use a super-slice of at least {minimum}",
        )
    },
    VapExport("", _sub_slicing_disabled_cel),
    modes=DYNAMIC,
    kinds=JOBS,
    why="sub-slices need the preview enabled on the cluster",
)


# ------------------------------------------------------------------ static-topology-selector-forbidden


def _static_topology_selector(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    tpu = ctx.tpu
    for podset in workload.tpu_podsets:
        if tpu.topology_label in podset.node_selector:
            yield STATIC_TOPOLOGY_SELECTOR_FORBIDDEN.finding(
                podset.node_selector_path.key(tpu.topology_label), annotation=tpu.slice_topology_annotation
            )


def _static_topology_selector_cel(policy: Policy) -> Iterator[Validation]:
    rule = STATIC_TOPOLOGY_SELECTOR_FORBIDDEN
    label = policy.tpu.topology_label
    item = rule.cel_item([NODE_SELECTOR_PATH, f'["{label}"]'], annotation=policy.tpu.slice_topology_annotation)
    yield rule.per_job(policy, TPU_JOBS, f"{lit(label)} in {SEL}", item, f"a TPU podSet selects {label}")


STATIC_TOPOLOGY_SELECTOR_FORBIDDEN: Final = Rule(
    "static-topology-selector-forbidden",
    "Static topology selector in dynamic mode",
    FAMILY,
    _static_topology_selector,
    {
        "": Message(
            "with dynamic slicing nodes have no fixed topology, so this selector matches nothing useful",
            "remove it (the {annotation} annotation sets the slice size)",
        )
    },
    VapExport("", _static_topology_selector_cel),
    modes=DYNAMIC,
    kinds=JOBS,
    why="dynamic nodes carry no fixed topology; the annotation sets the slice size",
)


# ------------------------------------------------------------------ slice-name-too-long


def slice_name(workload: Workload, podset: PodSet, ctx: RuleContext) -> int:
    """Length of ``{ns}-jobset-{name}-{hash}-{replicatedJob}-{index}`` at the largest index."""
    last_index = max(podset.replicas - 1, 0)
    return (
        len(workload.namespace)
        + len("-jobset-")
        + workload.name_length
        + 1
        + ctx.policy.slice_name_hash_length
        + 1
        + len(podset.name)
        + 1
        + len(str(last_index))
    )


def _slice_name_too_long(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    budget = ctx.policy.slice_name_budget
    for podset in workload.tpu_podsets:
        length = slice_name(workload, podset, ctx)
        if length <= budget:
            continue
        longest = workload.name_length - (length - budget)
        yield SLICE_NAME_TOO_LONG.finding(
            METADATA.child("name"),
            "" if longest > 0 else "no-name-fits",
            podset=podset.name,
            index=max(podset.replicas - 1, 0),
            length=length,
            budget=budget,
            longest=longest,
        )


def _slice_name_too_long_cel(policy: Policy) -> Iterator[Validation]:
    rule = SLICE_NAME_TOO_LONG
    budget = policy.slice_name_budget
    last = f"({REPLICAS} > 0 ? {REPLICAS} - 1 : 0)"
    fixed = len("-jobset-") + 1 + policy.slice_name_hash_length + 1 + 1
    length = (
        f"(request.namespace.size() + object.metadata.name.size() + j.name.size() + string({last}).size() + {fixed})"
    )
    longest = f"(object.metadata.name.size() - ({length} - {budget}))"
    problem = rule.cel_problem(
        podset=Expr("j.name"), index=Expr(f"string({last})"), length=Expr(f"string({length})"), budget=budget
    )
    fix = choose(f"{longest} > 0", rule.cel_fix(longest=Expr(f"string({longest})")), rule.cel_fix("no-name-fits"))
    item = cat("metadata.name", ": ", *problem, "; ", fix)
    yield rule.per_job(policy, TPU_JOBS, f"{length} > {budget}", item, f"a Slice name would exceed {budget} characters")


_SLICE_NAME_OVER_BUDGET: Final = (
    "the Slice name for replicatedJob {podset!r} (index {index}) would be {length} characters, "
    "over the budget of {budget}"
)

SLICE_NAME_TOO_LONG: Final = Rule(
    "slice-name-too-long",
    "Slice name over budget",
    FAMILY,
    _slice_name_too_long,
    {
        "": Message(
            _SLICE_NAME_OVER_BUDGET, "shorten metadata.name to at most {longest} characters, or the replicatedJob name"
        ),
        "no-name-fits": Message(
            _SLICE_NAME_OVER_BUDGET, "shorten the replicatedJob name (or the namespace): no JobSet name fits"
        ),
    },
    VapExport("counts the generated name, which the API server sets before a VAP runs", _slice_name_too_long_cel),
    modes=DYNAMIC,
    kinds=JOBSET_ONLY,
    why="the Slice CR name would pass its length budget and the slice never forms",
)

RULES: Final[tuple[Rule, ...]] = (
    SLICE_TOPOLOGY_MISSING,
    SLICE_TOPOLOGY_INVALID,
    SUB_SLICING_DISABLED,
    STATIC_TOPOLOGY_SELECTOR_FORBIDDEN,
    SLICE_NAME_TOO_LONG,
)
