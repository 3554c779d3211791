"""``tpu-admission export vap``: the structural rules as a ValidatingAdmissionPolicy.

The API server evaluates a ValidatingAdmissionPolicy (CEL, admissionregistration.k8s.io/v1,
GA in Kubernetes 1.30) in-process: no network hop, nothing to go down. Exporting the rules
that are pure functions of the JobSet and its namespace's tier label keeps them enforced
while every webhook replica is down. The webhook stays the first line (mutation, cluster
rules, every structural rule, better messages); the policy is the safety net.

Everything here is generated from the same policy the server loads: mode, tiers, label
names, whitelists and numbers are inlined as CEL literals, so the export must be
re-run when the policy changes (the README says so). Which rules are exported, and why
the others are not, is recorded in ``catalog.VAP_EXPORT``; a test holds the two together.

Cost. The API server charges every CEL evaluation against a per-expression limit (1M
units) and a per-evaluation budget (10M). Every expression below does constant work per
replicatedJob, plus constant work per container of a TPU podSet, on strings that are
bounded before any regex or ``int()`` runs. The policy's one matchCondition keeps it to
JobSets of at most ``MAX_REPLICATED_JOBS`` replicatedJobs and ``MAX_CONTAINERS``
containers per pod, so the worst case is a fixed number (README, "Cost"); bigger JobSets
are left to the webhook rather than risk a cost error that ``failurePolicy: Fail`` would
turn into a refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from webhook.catalog import RULES_BY_ID, VAP_EXPORT
from webhook.celtext import (
    ANN,
    CONTAINERS,
    JOB_ANN,
    JOB_PATH,
    JOB_SPEC_PATH,
    JOBS,
    LABELS,
    NODE_SELECTOR_PATH,
    POD_ANNOTATIONS_PATH,
    POD_SPEC_PATH,
    REPLICAS,
    SEL,
    TIER,
    TPU_JOBS,
    Expr,
    TopologyCel,
    cat,
    items,
    lit,
    lits,
    per_job,
    shown,
)
from webhook.config import Policy
from webhook.findings import Action
from webhook.rules.forbidden import EXCLUSIVE_TOPOLOGY
from webhook.rules.placement import (
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    SLICE_SIZE_NOT_INTEGER,
    allowed_topologies_text,
)
from webhook.topology import parse_topology

API_VERSION = "admissionregistration.k8s.io/v1"
NAME = "tpu-admission"
WARN_NAME = "tpu-admission-warn"
#: the namespaces the webhook configurations exclude; so does the policy
EXCLUDED_NAMESPACES = ("kube-system", "tpu-admission")


def jobset_create_constraints(policy: Policy, tiers: list[str]) -> dict[str, Any]:
    """JobSet CREATE in the given tiers' namespaces: what the webhook entries match, for both policies."""
    return {
        "resourceRules": [
            {
                "apiGroups": ["jobset.x-k8s.io"],
                "apiVersions": ["v1alpha2"],
                "resources": ["jobsets"],
                "operations": ["CREATE"],
                "scope": "Namespaced",
            }
        ],
        "namespaceSelector": {
            "matchExpressions": [
                {"key": policy.tier_label, "operator": "In", "values": tiers},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(EXCLUDED_NAMESPACES)},
            ]
        },
    }


MAX_REPLICATED_JOBS = 32
MAX_CONTAINERS = 8
VALIDATION_ACTIONS = ("Deny", "Warn", "Audit")


@dataclass(frozen=True, slots=True)
class Validation:
    """One exported rule: ``expression`` is true when the JobSet passes it."""

    rule: str
    expression: str
    message: str
    message_expression: str
    action: Action


# ------------------------------------------------------------------ the rules


def _labels(policy: Policy) -> list[Validation]:
    q, p = policy.queue_label, policy.priority_label
    tiers = policy.tiers
    out: list[Validation] = []
    strict_queue = [name for name, tier in tiers.items() if tier.default_queue is None]
    if strict_queue:
        rule = "queue-label-missing"
        out.append(
            _v(
                policy,
                rule,
                f"!({TIER} in {lits(strict_queue)}) || {lit(q)} in {LABELS}",
                f'[{rule}] metadata.labels["{q}"]: this tier requires an explicit queue and the JobSet has none',
                f"'[{rule}] ' + "
                + cat(
                    f'metadata.labels["{q}"]: the ',
                    Expr(TIER),
                    " tier requires an explicit queue and the JobSet has none; "
                    f'add the label {q}: "<team>-queue" naming your team\'s LocalQueue',
                ),
            )
        )
    # queue-label-invalid: the tier's only queue, or its name pattern
    rule = "queue-label-invalid"
    value = f"{LABELS}[{lit(q)}]"
    checks, texts = [], []
    for name, tier in tiers.items():
        if tier.default_queue is not None:
            checks.append(f"{TIER} == {lit(name)} ? {value} == {lit(tier.default_queue)}")
            texts.append(
                f"{TIER} == {lit(name)} ? "
                + cat(
                    "queue ",
                    shown(value),
                    f" is not this tier's queue: the {name} tier submits only to {tier.default_queue!r}; "
                    f"remove the label (it is filled in) or set it to {tier.default_queue!r}",
                )
            )
        elif tier.queue_name_pattern is not None:
            # The webhook uses Python's fullmatch; RE2's matches() searches, so anchor it.
            anchored = f"^(?:{tier.queue_name_pattern})$"
            checks.append(f"{TIER} == {lit(name)} ? {value}.matches({lit(anchored)})")
            texts.append(
                f"{TIER} == {lit(name)} ? "
                + cat(
                    "queue name ",
                    shown(value),
                    f" does not match {tier.queue_name_pattern}; "
                    'use your team\'s LocalQueue, named "<team>-queue" (e.g. team-a-queue)',
                )
            )
    if checks:
        out.append(
            _v(
                policy,
                rule,
                f"!({lit(q)} in {LABELS}) || ({' : '.join(checks)} : true)",
                f'[{rule}] metadata.labels["{q}"]: the queue is not one this tier may use',
                f"'[{rule}] ' + " + cat(f'metadata.labels["{q}"]: ', Expr(f"({' : '.join(texts)} : '')")),
            )
        )
    strict_priority = [name for name, tier in tiers.items() if tier.default_priority_class is None]
    if strict_priority:
        rule = "priority-label-missing"
        allowed = {name: ", ".join(tiers[name].allowed_priority_classes) for name in strict_priority}
        out.append(
            _v(
                policy,
                rule,
                f"!({TIER} in {lits(strict_priority)}) || {lit(p)} in {LABELS}",
                f'[{rule}] metadata.labels["{p}"]: this tier requires an explicit priority class '
                "and the JobSet has none",
                f"'[{rule}] ' + "
                + cat(
                    f'metadata.labels["{p}"]: the ',
                    Expr(TIER),
                    " tier requires an explicit priority class and the JobSet has none; "
                    f"add the label {p} with one of: ",
                    Expr(f"{_map(allowed)}[{TIER}]"),
                ),
            )
        )
    rule = "priority-class-not-allowed"
    allowed_lists = "{" + ", ".join(f"{lit(n)}: {lits(t.allowed_priority_classes)}" for n, t in tiers.items()) + "}"
    fixes = {}
    for name, tier in tiers.items():
        fix = f"use one of: {', '.join(tier.allowed_priority_classes)}"
        if tier.default_priority_class is not None:
            fix = f"remove the label (it is filled in as {tier.default_priority_class!r}) or {fix}"
        fixes[name] = fix
    value = f"{LABELS}[{lit(p)}]"
    out.append(
        _v(
            policy,
            rule,
            f"!({lit(p)} in {LABELS}) || !({TIER} in {allowed_lists}) || {value} in {allowed_lists}[{TIER}]",
            f'[{rule}] metadata.labels["{p}"]: the priority class is not allowed in this tier',
            f"'[{rule}] ' + "
            + cat(
                f'metadata.labels["{p}"]: priority class ',
                shown(value),
                " is not allowed in the ",
                Expr(TIER),
                " tier; ",
                Expr(f"{_map(fixes)}[{TIER}]"),
            ),
        )
    )
    if policy.queue_permissions:
        rule = "queue-not-permitted"
        users = "{" + ", ".join(f"{lit(k)}: {lits(v.users)}" for k, v in policy.queue_permissions.items()) + "}"
        groups = "{" + ", ".join(f"{lit(k)}: {lits(v.groups)}" for k, v in policy.queue_permissions.items()) + "}"
        queue = f"{LABELS}[{lit(q)}]"
        out.append(
            _v(
                policy,
                rule,
                f"!({lit(q)} in {LABELS}) || !({queue} in {users}) || request.userInfo.?username.orValue('') in "
                f"{users}[{queue}] || request.userInfo.?groups.orValue([]).exists(g, g in {groups}[{queue}])",
                f'[{rule}] metadata.labels["{q}"]: you may not submit to this queue',
                f"'[{rule}] ' + "
                + cat(
                    f'metadata.labels["{q}"]: user ',
                    shown("request.userInfo.?username.orValue('')"),
                    " may not submit to queue ",
                    shown(queue),
                    "; submit to your own team's queue, or ask the cluster admins to grant access",
                ),
            )
        )
    return out


def _map(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in values.items()) + "}"


def _forbidden(policy: Policy) -> list[Validation]:
    out: list[Validation] = []
    rule = "suspend-forbidden"
    # Narrowed: Kueue's webhook sets spec.suspend: true on every job it manages, so only
    # false can be known to be the user's (catalog.VAP_EXPORT).
    out.append(
        _v(
            policy,
            rule,
            "object.?spec.?suspend.orValue(true) != false",
            f"[{rule}] spec.suspend: spec.suspend is set (false), but Kueue suspends and resumes the job "
            "itself; remove spec.suspend",
        )
    )
    rule = "pod-priority-class-forbidden"
    pcn = "j.template.?spec.?template.?spec.?priorityClassName.orValue('')"
    expression, message = per_job(
        rule,
        JOBS,
        f"{pcn} != ''",
        cat(
            POD_SPEC_PATH,
            ".priorityClassName: pod priorityClassName ",
            shown(pcn),
            " triggers kubelet-level preemption and can outrank Kueue's guaranteed class; "
            f"remove it and express priority with the {policy.priority_label} label",
        ),
    )
    out.append(_v(policy, rule, expression, f"[{rule}] a pod template sets priorityClassName", message))
    if policy.mode == "dynamic":
        rule = "exclusive-topology-forbidden"
        ex = lit(EXCLUSIVE_TOPOLOGY)
        tail = (
            "exclusive placement conflicts with sub-slices sharing a cube; "
            "remove the annotation (Kueue's topology-aware scheduling places the slices)"
        )
        root_bad = f"{ex} in object.metadata.?annotations.orValue({{}})"
        job_bad = f"({ex} in {JOB_ANN} || {ex} in {ANN})"
        item = items(
            rule,
            (f"{ex} in {JOB_ANN}", cat(JOB_PATH, f'.template.metadata.annotations["{EXCLUSIVE_TOPOLOGY}"]: {tail}')),
            (f"{ex} in {ANN}", cat(POD_ANNOTATIONS_PATH, f'["{EXCLUSIVE_TOPOLOGY}"]: {tail}')),
        )
        root_line = lit(f'metadata.annotations["{EXCLUSIVE_TOPOLOGY}"]: {tail}')
        lines = f"[{root_bad} ? {root_line} : ''] + {JOBS}.filter(j, {job_bad}).map(j, {item})"
        out.append(
            _v(
                policy,
                rule,
                f"!({root_bad}) && !{JOBS}.exists(j, {job_bad})",
                f"[{rule}] the {EXCLUSIVE_TOPOLOGY} annotation is set",
                f"'[{rule}] ' + ({lines}).filter(s, s != '').join('; [{rule}] ')",
            )
        )
    return out


def _placement(policy: Policy) -> list[Validation]:
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
        _job_rule(
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
        out.append(_job_rule(policy, rule, f"!({slice_ann} in {ANN})", item, "a TPU podSet has no slice topology"))

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
        out.append(_job_rule(policy, rule, bad, item, "a slice topology is not an allowed one"))

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
            out.append(_job_rule(policy, rule, bad, item, "sub-slicing is not enabled on this cluster"))

        rule = "static-topology-selector-forbidden"
        item = cat(
            NODE_SELECTOR_PATH,
            f'["{tpu.topology_label}"]: with dynamic slicing nodes have no fixed topology, so this selector '
            f"matches nothing useful; remove it (the {tpu.slice_topology_annotation} annotation sets the slice size)",
        )
        out.append(
            _job_rule(policy, rule, f"{topo_label} in {SEL}", item, f"a TPU podSet selects {tpu.topology_label}")
        )

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
            _job_rule(policy, rule, f"{length} > {budget}", item, f"a Slice name would exceed {budget} characters")
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
            _job_rule(
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
    out.append(_job_rule(policy, rule, bad, item, "a TPU podSet has no valid topology-aware scheduling annotation"))

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
        _job_rule(
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
        _job_rule(
            policy, rule, f"({REPLICAS} > 1 && {req} in {ANN})", item, "a multi-slice podSet asks for one node pool"
        )
    )

    rule = "tas-slice-size-mismatch"
    hosts = _static_hosts(policy)
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
    out.append(_job_rule(policy, rule, bad, item, "podset-slice-size is not the hosts of one slice"))

    rule = "slice-topology-ignored"
    ann = policy.tpu.slice_topology_annotation
    item = cat(
        POD_ANNOTATIONS_PATH,
        f'["{ann}"]: the cluster runs static node pools and nothing translates this annotation; '
        f"remove it (select the pool with nodeSelector {policy.tpu.topology_label})",
    )
    expression, message = per_job(rule, JOBS, f"{lit(ann)} in {ANN}", item)
    out.append(_v(policy, rule, expression, f"[{rule}] a pod template has the {ann} annotation", message))
    return out


def _static_hosts(policy: Policy) -> dict[str, int]:
    """Hosts per slice of each configured static topology (the VAP knows no cluster)."""
    per_host = policy.tpu.chips_per_host
    out = {}
    for text in sorted(policy.static_topology_set):
        chips = parse_topology(text).chips
        if chips % per_host == 0:
            out[text] = chips // per_host
    return out


def _shape(policy: Policy) -> list[Validation]:
    tpu = policy.tpu
    per_host = tpu.chips_per_host
    out: list[Validation] = []

    rule = "host-count-mismatch"
    if policy.mode == "dynamic":
        ann = lit(tpu.slice_topology_annotation)
        value = f"{ANN}[{ann}]"
        topology = TopologyCel(value, policy)
        subs = {text: (parse_topology(text).chips, str(parse_topology(text))) for text in policy.sub_slice_topologies}
        sub_hosts = (
            "{" + ", ".join(f"{lit(t)}: {c // per_host}" for t, (c, _) in subs.items() if c % per_host == 0) + "}"
        )
        sub_chips = "{" + ", ".join(f"{lit(t)}: {c}" for t, (c, _) in subs.items()) + "}"
        sub_names = "{" + ", ".join(f"{lit(t)}: {lit(n)}" for t, (_, n) in subs.items()) + "}"
        is_sub = f"{value} in {lits(policy.sub_slice_topologies)}"
        sub_ok = f"{value} in {sub_hosts}" if policy.sub_slicing else "false"
        super_ok = f"({topology.valid_super_slice} && {topology.chips} % {per_host} == 0)"
        known = f"({ann} in {ANN} && ({is_sub} ? {sub_ok} : {super_ok}))"
        chips = f"({is_sub} ? {sub_chips}[{value}] : {topology.chips})"
        hosts = f"({chips} / {per_host})"
        name = Expr(f"({is_sub} ? {sub_names}[{value}] : {topology.text.text})")
    else:
        label = lit(tpu.topology_label)
        value = f"{SEL}[{label}]"
        static = _static_hosts(policy)
        hosts_map = "{" + ", ".join(f"{lit(t)}: {h}" for t, h in static.items()) + "}"
        names = "{" + ", ".join(f"{lit(t)}: {lit(str(parse_topology(t)))}" for t in static) + "}"
        known = f"({label} in {SEL} && {value} in {hosts_map})"
        hosts = f"{hosts_map}[{value}]"
        chips = f"({hosts} * {per_host})"
        name = Expr(f"{names}[{value}]")
    parallelism = "j.template.?spec.?parallelism.orValue(-1)"
    completions = "j.template.?spec.?completions.orValue(-1)"
    effective = f"({parallelism} >= 0 ? {parallelism} : 1)"
    tail: list[str | Expr] = [
        ", but a ",
        name,
        " slice has ",
        Expr(f"string({hosts})"),
        " hosts (",
        Expr(f"string({chips})"),
        f" chips ÷ {per_host} per host); set both parallelism and completions to ",
        Expr(f"string({hosts})"),
    ]
    item = items(
        rule,
        (
            f"{effective} != {hosts}",
            cat(
                JOB_SPEC_PATH,
                ".parallelism: parallelism ",
                Expr(
                    f"({parallelism} >= 0 ? 'is ' + string({parallelism}) : 'is not set (Kubernetes treats it as 1)')"
                ),
                *tail,
            ),
        ),
        (
            f"{completions} != {hosts}",
            cat(
                JOB_SPEC_PATH,
                ".completions: completions ",
                Expr(f"({completions} >= 0 ? 'is ' + string({completions}) : 'is not set')"),
                *tail,
            ),
        ),
    )
    bad = f"({known} && ({effective} != {hosts} || {completions} != {hosts}))"
    out.append(_job_rule(policy, rule, bad, item, "parallelism and completions must both be the slice's hosts"))

    rule = "tpu-request-invalid"
    resource = lit(tpu.resource_name)
    requests, limits = "c.?resources.?requests.orValue({})", "c.?resources.?limits.orValue({})"
    is_tpu = f"({resource} in {requests} || {resource} in {limits})"

    def ok(kind: str) -> str:
        raw = f"{kind}[{resource}]"
        return (
            f"({resource} in {kind} && (type({raw}) == int ? {raw} == {per_host} : "
            f"(type({raw}) == string && isQuantity({raw}) && quantity({raw}).compareTo(quantity('{per_host}')) == 0)))"
        )

    def finding(kind: str, field: str) -> tuple[str, str]:
        raw = f"{kind}[{resource}]"
        shown_raw = Expr(
            f"(!({resource} in {kind}) ? 'is missing' : "
            f"type({raw}) == string ? 'is ' + {shown(raw).text} : 'is ' + string({raw}))"
        )
        return (
            f"!{ok(kind)}",
            cat(
                POD_SPEC_PATH,
                ".containers[name=",
                Expr("c.name"),
                f'].resources.{field}["{tpu.resource_name}"]: container ',
                shown("c.name"),
                f" {field} ",
                shown_raw,
                f", but each tpu7x host has exactly {per_host} chips; {_tpu_fix(policy)}",
            ),
        )

    containers_item = (
        f"{CONTAINERS}.filter(c, {is_tpu} && !({ok(requests)} && {ok(limits)}))"
        f".map(c, {items(rule, finding(requests, 'requests'), finding(limits, 'limits'))}).join('; [{rule}] ')"
    )
    none_item = cat(
        POD_SPEC_PATH,
        ".containers: TPU podSet ",
        shown("j.name"),
        f" has no container requesting {tpu.resource_name}; {_tpu_fix(policy)}",
    )
    has_tpu = f"{CONTAINERS}.exists(c, {is_tpu})"
    bad = f"(!{has_tpu} || {CONTAINERS}.exists(c, {is_tpu} && !({ok(requests)} && {ok(limits)})))"
    item = f"(!{has_tpu} ? {none_item} : {containers_item})"
    out.append(_job_rule(policy, rule, bad, item, f"each TPU container must request {tpu.resource_name}: {per_host}"))
    return out


def _tpu_fix(policy: Policy) -> str:
    tpu = policy.tpu
    return f"request {tpu.resource_name}: {tpu.chips_per_host} in both resources.requests and resources.limits"


def _job_rule(policy: Policy, rule: str, bad: str, item: str, summary: str) -> Validation:
    expression, message = per_job(rule, TPU_JOBS, bad, item)
    return _v(policy, rule, expression, f"[{rule}] {summary}", message)


def _v(policy: Policy, rule: str, expression: str, message: str, message_expression: str = "") -> Validation:
    action = policy.action_for(rule, RULES_BY_ID[rule].default_action)
    if action is Action.DENY and any(rule in exception.rules for exception in policy.exceptions):
        # The webhook admits the objects a policy exception covers (with a warning); this
        # export does not carry the exceptions' globs, so it only warns for such a rule
        # rather than refuse what the webhook admits.
        action = Action.WARN
    return Validation(rule, expression, message, message_expression, action)


# ------------------------------------------------------------------ assembling


def validations(policy: Policy) -> list[Validation]:
    """Every exported rule that applies in the policy's mode and is not ``off``, in catalog order."""
    found = {v.rule: v for v in (*_labels(policy), *_forbidden(policy), *_placement(policy), *_shape(policy))}
    order = list(RULES_BY_ID)
    out = [found[rule] for rule in sorted(found, key=order.index)]
    return [v for v in out if v.action is not Action.OFF and VAP_EXPORT[v.rule].exported]


def variables(policy: Policy) -> list[dict[str, str]]:
    tpu = policy.tpu
    resource, ann, acc = lit(tpu.resource_name), lit(tpu.slice_topology_annotation), lit(tpu.accelerator_label)
    is_tpu = (
        f"{CONTAINERS}.exists(c, {resource} in c.?resources.?requests.orValue({{}}) || "
        f"{resource} in c.?resources.?limits.orValue({{}})) || {ann} in {ANN} || {acc} in {SEL}"
    )
    return [
        {"name": "tier", "expression": f"namespaceObject.metadata.?labels[?{lit(policy.tier_label)}].orValue('')"},
        {"name": "labels", "expression": "object.metadata.?labels.orValue({})"},
        # The TPU podSets (workload.PodSet.is_tpu): what most rules judge.
        {"name": "tpuJobs", "expression": f"{JOBS}.filter(j, {is_tpu})"},
    ]


def within_bounds() -> str:
    """The matchCondition that bounds every expression's cost (module docstring)."""
    return f"{JOBS}.size() <= {MAX_REPLICATED_JOBS} && {JOBS}.all(j, {CONTAINERS}.size() <= {MAX_CONTAINERS})"


def _policy(policy: Policy, name: str, checks: list[Validation]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": jobset_create_constraints(policy, sorted(policy.tiers)),
            "matchConditions": [{"name": "within-cost-bounds", "expression": within_bounds()}],
            "variables": variables(policy),
            "validations": [
                {
                    "expression": v.expression,
                    "message": v.message,
                    **({"messageExpression": v.message_expression} if v.message_expression else {}),
                    "reason": "Forbidden",
                }
                for v in checks
            ],
        },
    }


def _binding(name: str, actions: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {"policyName": name, "validationActions": list(actions)},
    }


def export_objects(policy: Policy, actions: Sequence[str] = ("Deny",)) -> list[dict[str, Any]]:
    """The policies and bindings: deny-level rules bound with ``actions``, warn-level ones with Warn."""
    unknown = [a for a in actions if a not in VALIDATION_ACTIONS]
    if unknown or not actions or ("Deny" in actions and "Warn" in actions):
        raise ValueError(
            f"validation actions {list(actions)!r}: use Deny, Warn or Audit (Deny and Warn do not go together)"
        )
    checks = validations(policy)
    deny = [v for v in checks if v.action is Action.DENY]
    warn = [v for v in checks if v.action is Action.WARN]
    objects = []
    if deny:
        objects += [_policy(policy, NAME, deny), _binding(NAME, actions)]
    if warn:
        objects += [_policy(policy, WARN_NAME, warn), _binding(WARN_NAME, ["Warn"])]
    return objects


def render(policy: Policy, actions: Sequence[str] = ("Deny",)) -> str:
    header = (
        f"# Generated by `tpu-admission export vap` (mode: {policy.mode}). The structural rules of the\n"
        "# webhook as a ValidatingAdmissionPolicy the API server enforces itself; re-generate it\n"
        "# whenever the policy config changes.\n"
    )
    body = yaml.dump_all(
        export_objects(policy, actions), Dumper=yaml.SafeDumper, sort_keys=False, width=1_000_000, allow_unicode=True
    )
    return header + body
