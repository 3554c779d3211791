"""Placement as CEL: selectors, the slice topology, the Slice-name budget and TAS annotations.

The CEL side of ``webhook/rules/placement.py``.
"""

from __future__ import annotations

from webhook.export.vap.common import Validation, job_rule, static_hosts, validation
from webhook.policy.config import Policy
from webhook.rules.cel import (
    ANN,
    JOBS,
    NODE_SELECTOR_PATH,
    POD_ANNOTATIONS_PATH,
    REPLICAS,
    SEL,
    Expr,
    TopologyCel,
    cat,
    items,
    lit,
    lits,
    per_job,
    shown,
)
from webhook.rules.placement import (
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    SLICE_SIZE_NOT_INTEGER,
    allowed_topologies_text,
)


def placement_rules(policy: Policy) -> list[Validation]:
    tpu = policy.tpu
    acc, topo_label, slice_ann = lit(tpu.accelerator_label), lit(tpu.topology_label), lit(tpu.slice_topology_annotation)
    out: list[Validation] = []

    rule = "accelerator-selector-missing"
    bad = f"!({acc} in {SEL} && {SEL}[{acc}] == {lit(tpu.accelerator_value)})"
    problem = Expr(
        f"({acc} in {SEL} ? "
        + cat(
            "TPU podSet ",
            shown("j.name"),
            " selects accelerator ",
            shown(f"{SEL}[{acc}]"),
            f", not {tpu.accelerator_value!r}",
        )
        + " : "
        + cat("TPU podSet ", shown("j.name"), f" does not select {tpu.accelerator_label}")
        + ")"
    )
    item = cat(
        NODE_SELECTOR_PATH,
        f'["{tpu.accelerator_label}"]: ',
        problem,
        f"; set nodeSelector {tpu.accelerator_label}: {tpu.accelerator_value}",
    )
    out.append(
        job_rule(
            policy, rule, bad, item, f"a TPU podSet does not select {tpu.accelerator_label}: {tpu.accelerator_value}"
        )
    )

    if policy.mode == "dynamic":
        ann_path: list[str | Expr] = [POD_ANNOTATIONS_PATH, f'["{tpu.slice_topology_annotation}"]']
        rule = "slice-topology-missing"
        item = cat(
            *ann_path,
            ": TPU podSet ",
            shown("j.name"),
            " has no slice topology, so Kueue would later report only 'quota insufficient'; "
            f"add the pod template annotation {tpu.slice_topology_annotation}, e.g. 4x4x4",
        )
        out.append(job_rule(policy, rule, f"!({slice_ann} in {ANN})", item, "a TPU podSet has no slice topology"))

        value = f"{ANN}[{slice_ann}]"
        topology = TopologyCel(value, policy)
        subs = lits(policy.sub_slice_topologies)
        rule = "slice-topology-invalid"
        bad = f"({slice_ann} in {ANN} && !({value} in {subs}) && !{topology.valid_super_slice})"
        item = cat(
            *ann_path,
            ": slice topology ",
            shown(value),
            " is not allowed: ",
            Expr(topology.problem_text()),
            f"; use an allowed value: {allowed_topologies_text(policy)}",
        )
        out.append(job_rule(policy, rule, bad, item, "a slice topology is not an allowed one"))

        if not policy.sub_slicing:
            rule = "sub-slicing-disabled"
            item = cat(
                *ann_path,
                ": ",
                Expr(value),
                " is a sub-slice and sub-slicing is not enabled on this cluster; "
                f"use a super-slice of at least {policy.super_slice.min_topology}",
            )
            bad = f"({slice_ann} in {ANN} && {value} in {subs})"
            out.append(job_rule(policy, rule, bad, item, "sub-slicing is not enabled on this cluster"))

        rule = "static-topology-selector-forbidden"
        item = cat(
            NODE_SELECTOR_PATH,
            f'["{tpu.topology_label}"]: with dynamic slicing nodes have no fixed topology, so this selector '
            f"matches nothing useful; remove it (the {tpu.slice_topology_annotation} annotation sets the slice size)",
        )
        out.append(job_rule(policy, rule, f"{topo_label} in {SEL}", item, f"a TPU podSet selects {tpu.topology_label}"))

        rule = "slice-name-too-long"
        budget = policy.slice_name_budget
        last = f"({REPLICAS} > 0 ? {REPLICAS} - 1 : 0)"
        fixed = len("-jobset-") + 1 + policy.slice_name_hash_length + 1 + 1
        length = (
            "(request.namespace.size() + object.metadata.name.size() + j.name.size() + "
            f"string({last}).size() + {fixed})"
        )
        longest = f"(object.metadata.name.size() - ({length} - {budget}))"
        item = cat(
            "metadata.name: the Slice name for replicatedJob ",
            shown("j.name"),
            " (index ",
            Expr(f"string({last})"),
            ") would be ",
            Expr(f"string({length})"),
            f" characters, over the budget of {budget}; ",
            Expr(
                f"({longest} > 0 ? "
                + cat(
                    "shorten metadata.name to at most ",
                    Expr(f"string({longest})"),
                    " characters, or the replicatedJob name",
                )
                + " : 'shorten the replicatedJob name (or the namespace): no JobSet name fits')"
            ),
        )
        out.append(
            job_rule(policy, rule, f"{length} > {budget}", item, f"a Slice name would exceed {budget} characters")
        )
    else:
        known = ", ".join(sorted(policy.static_topology_set))
        rule = "static-topology-selector-missing"
        item = cat(
            NODE_SELECTOR_PATH,
            f'["{tpu.topology_label}"]: TPU podSet ',
            shown("j.name"),
            " does not say which static node pool topology it needs; "
            f"set nodeSelector {tpu.topology_label} to one of: {known}",
        )
        out.append(
            job_rule(
                policy, rule, f"!({topo_label} in {SEL})", item, f"a TPU podSet does not select {tpu.topology_label}"
            )
        )
        out.extend(_tas(policy))
    return out


def _tas(policy: Policy) -> list[Validation]:
    level = policy.static_slice_level
    req, sreq, size = lit(REQUIRED_TOPOLOGY), lit(SLICE_REQUIRED_TOPOLOGY), lit(SLICE_SIZE)
    pair = f'{SLICE_REQUIRED_TOPOLOGY}: {level} and {SLICE_SIZE}: "<hosts per slice>"'
    out: list[Validation] = []

    rule = "tas-annotation-missing"
    wrong = [
        (f"({key} in {ANN} && {ANN}[{key}] != {lit(level)})", raw)
        for key, raw in ((req, REQUIRED_TOPOLOGY), (sreq, SLICE_REQUIRED_TOPOLOGY))
    ]
    none = f"!({req} in {ANN} || {sreq} in {ANN} || {size} in {ANN})"
    item = items(
        rule,
        *(
            (
                cond,
                cat(
                    POD_ANNOTATIONS_PATH,
                    f'["{raw}"]: topology level ',
                    shown(f"{ANN}[{lit(raw)}]"),
                    f" is not the static slice level; set it to {level} (one node pool is one static slice)",
                ),
            )
            for cond, raw in wrong
        ),
        (
            none,
            cat(
                POD_ANNOTATIONS_PATH,
                ": TPU podSet ",
                shown("j.name"),
                " has no topology-aware scheduling annotation, so Kueue cannot keep each slice inside one node pool; ",
                Expr(f"({REPLICAS} > 1 ? {lit('add ' + pair)} : {lit(f'add {REQUIRED_TOPOLOGY}: {level}')})"),
            ),
        ),
    )
    bad = "(" + " || ".join([*(cond for cond, _ in wrong), none]) + ")"
    out.append(job_rule(policy, rule, bad, item, "a TPU podSet has no valid topology-aware scheduling annotation"))

    rule = "tas-annotation-unpaired"
    unpaired = Expr(
        f"({sreq} in {ANN} ? "
        + cat(
            POD_ANNOTATIONS_PATH,
            f'["{SLICE_SIZE}"]: {SLICE_REQUIRED_TOPOLOGY} is set without {SLICE_SIZE}, '
            f"and the two only work as a pair; add {SLICE_SIZE}",
        )
        + " : "
        + cat(
            POD_ANNOTATIONS_PATH,
            f'["{SLICE_REQUIRED_TOPOLOGY}"]: {SLICE_SIZE} is set without {SLICE_REQUIRED_TOPOLOGY}, '
            f"and the two only work as a pair; add {SLICE_REQUIRED_TOPOLOGY}",
        )
        + ")"
    )
    out.append(
        job_rule(
            policy,
            rule,
            f"({sreq} in {ANN}) != ({size} in {ANN})",
            unpaired.text,
            "a TAS slice annotation is set without its pair",
        )
    )

    rule = "tas-required-topology-multislice"
    item = cat(
        POD_ANNOTATIONS_PATH,
        f'["{REQUIRED_TOPOLOGY}"]: replicas is ',
        Expr(f"string({REPLICAS})"),
        ", so this asks all ",
        Expr(f"string({REPLICAS})"),
        f" slices into one node pool, which can never be satisfied: the job would pend forever; replace it with {pair}",
    )
    out.append(
        job_rule(
            policy, rule, f"({REPLICAS} > 1 && {req} in {ANN})", item, "a multi-slice podSet asks for one node pool"
        )
    )

    rule = "tas-slice-size-mismatch"
    hosts = static_hosts(policy)
    topo_label = lit(policy.tpu.topology_label)
    topo = f"{SEL}[{topo_label}]"
    raw = f"{ANN}[{size}]"
    # Kueue's integer parse (placement.kueue_integer): a sign and ASCII digits, nothing
    # around them. Equality is tested on at most 18 significant digits: int() cannot
    # overflow, and a longer number can never equal a host count.
    integer = lit("^[+-]?[0-9]+$")
    number = lit("^[+]?0*[0-9]{1,18}$")
    hosts_map = "{" + ", ".join(f"{lit(t)}: {h}" for t, h in hosts.items()) + "}"
    bad = (
        f"({size} in {ANN} && {topo_label} in {SEL} && {topo} in {hosts_map} && "
        f"!({raw}.matches({number}) && int({raw}) == {hosts_map}[{topo}]))"
    )
    wrong_count = cat(
        "is not the ",
        Expr(f"string({hosts_map}[{topo}])"),
        " hosts of a ",
        Expr(topo),
        " slice",
    )
    item = cat(
        POD_ANNOTATIONS_PATH,
        f'["{SLICE_SIZE}"]: slice size ',
        shown(raw),
        " ",
        Expr(f"({raw}.matches({integer}) ? {wrong_count} : {lit(SLICE_SIZE_NOT_INTEGER)})"),
        '; set it to "',
        Expr(f"string({hosts_map}[{topo}])"),
        '"',
    )
    out.append(job_rule(policy, rule, bad, item, "podset-slice-size is not the hosts of one slice"))

    rule = "slice-topology-ignored"
    ann = policy.tpu.slice_topology_annotation
    item = cat(
        POD_ANNOTATIONS_PATH,
        f'["{ann}"]: the cluster runs static node pools and nothing translates this annotation; '
        f"remove it (select the pool with nodeSelector {policy.tpu.topology_label})",
    )
    expression, message = per_job(rule, JOBS, f"{lit(ann)} in {ANN}", item)
    out.append(validation(policy, rule, expression, f"[{rule}] a pod template has the {ann} annotation", message))
    return out
