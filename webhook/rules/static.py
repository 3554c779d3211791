"""TPU placement in static mode.

The user selects a fixed-topology node pool with the topology node label and writes
Kueue's topology-aware scheduling (TAS) annotations by hand (RFC-0033's static form): one node
pool is one slice, and nothing translates the dynamic mode's slice-topology annotation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.kube.topology import TopologyError, parse_topology
from webhook.objects.workload import Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Action, Finding
from webhook.rules import JOBS, JOBSET_ONLY, STATIC, Message, Rule, RuleContext, VapExport
from webhook.rules.cel import (
    ANN,
    NODE_SELECTOR_PATH,
    POD_ANNOTATIONS_PATH,
    REPLICAS,
    SEL,
    TPU_JOBS,
    Expr,
    Validation,
    cat,
    choose,
    items,
    lit,
    static_hosts,
    template_parts,
)
from webhook.rules.cel import (
    JOBS as CEL_JOBS,
)
from webhook.rules.placement import (
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    SLICE_SIZE_NOT_INTEGER,
    kueue_integer,
)

FAMILY: Final = "static"


def _slice_pair(level: str) -> str:
    return f'{SLICE_REQUIRED_TOPOLOGY}: {level} and {SLICE_SIZE}: "<hosts per slice>"'


def _key(annotation: str) -> list[str | Expr]:
    """Where the CEL export names one of a TPU podSet's pod template annotations."""
    return [POD_ANNOTATIONS_PATH, f'["{annotation}"]']


# ------------------------------------------------------------------ static-topology-selector-missing


def _selector_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    label = ctx.tpu.topology_label
    for podset in workload.tpu_podsets:
        if label not in podset.node_selector:
            yield STATIC_TOPOLOGY_SELECTOR_MISSING.finding(
                podset.node_selector_path.key(label),
                podset=podset.name,
                label=label,
                known=", ".join(sorted(ctx.static_topologies)),
            )


def _selector_missing_cel(policy: Policy) -> Iterator[Validation]:
    rule = STATIC_TOPOLOGY_SELECTOR_MISSING
    label = policy.tpu.topology_label
    item = rule.cel_item(
        [NODE_SELECTOR_PATH, f'["{label}"]'],
        podset=Expr("j.name"),
        label=label,
        known=", ".join(sorted(policy.static_topology_set)),
    )
    yield rule.per_job(policy, TPU_JOBS, f"!({lit(label)} in {SEL})", item, f"a TPU podSet does not select {label}")


STATIC_TOPOLOGY_SELECTOR_MISSING: Final = Rule(
    "static-topology-selector-missing",
    "Static topology selector missing",
    FAMILY,
    _selector_missing,
    {
        "": Message(
            "TPU podSet {podset!r} does not say which static node pool topology it needs",
            "set nodeSelector {label} to one of: {known}",
        )
    },
    VapExport("", _selector_missing_cel),
    modes=STATIC,
    kinds=JOBS,
    why="without it Kueue cannot pick the node pool flavor",
)


# ------------------------------------------------------------------ static-topology-unknown


def _topology_unknown(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    label = ctx.tpu.topology_label
    known = ctx.static_topologies
    for podset in workload.tpu_podsets:
        value = podset.node_selector.get(label)
        if value is not None and value not in known:
            yield STATIC_TOPOLOGY_UNKNOWN.finding(
                podset.node_selector_path.key(label), value=value, known=", ".join(sorted(known))
            )


STATIC_TOPOLOGY_UNKNOWN: Final = Rule(
    "static-topology-unknown",
    "Unknown static topology",
    FAMILY,
    _topology_unknown,
    {"": Message("no static node pool has topology {value!r}", "use one of: {known}")},
    VapExport(
        "the server also accepts topologies it learns from node labels; a VAP knows only the config's list "
        "and would refuse a pool added since"
    ),
    modes=STATIC,
    kinds=JOBS,
    why="no node pool of that topology exists",
)


# ------------------------------------------------------------------ tas-annotation-missing


def _tas_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    rule = TAS_ANNOTATION_MISSING
    level = ctx.policy.static_slice_level
    for podset in workload.tpu_podsets:
        notes = podset.annotations
        present = [key for key in (REQUIRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE) if key in notes]
        for key in (REQUIRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY):
            if key in notes and notes[key] != level:
                yield rule.finding(podset.annotations_path.key(key), "level", value=notes[key], level=level)
        if present:
            continue  # pairing and multi-slice misuse have rules of their own
        yield rule.finding(
            podset.annotations_path,
            "multislice" if podset.replicas > 1 else "",
            podset=podset.name,
            annotation=REQUIRED_TOPOLOGY,
            level=level,
            pair=_slice_pair(level),
        )


def _tas_missing_cel(policy: Policy) -> Iterator[Validation]:
    rule = TAS_ANNOTATION_MISSING
    level = policy.static_slice_level
    req, sreq, size = lit(REQUIRED_TOPOLOGY), lit(SLICE_REQUIRED_TOPOLOGY), lit(SLICE_SIZE)
    wrong = [
        (f"({key} in {ANN} && {ANN}[{key}] != {lit(level)})", raw)
        for key, raw in ((req, REQUIRED_TOPOLOGY), (sreq, SLICE_REQUIRED_TOPOLOGY))
    ]
    none = f"!({req} in {ANN} || {sreq} in {ANN} || {size} in {ANN})"
    fix = choose(
        f"{REPLICAS} > 1",
        rule.cel_fix("multislice", pair=_slice_pair(level)),
        rule.cel_fix("", annotation=REQUIRED_TOPOLOGY, level=level),
    )
    item = items(
        rule.id,
        *(
            (cond, rule.cel_item(_key(raw), "level", value=Expr(f"{ANN}[{lit(raw)}]"), level=level))
            for cond, raw in wrong
        ),
        (none, cat(POD_ANNOTATIONS_PATH, ": ", *rule.cel_problem(podset=Expr("j.name")), "; ", fix)),
    )
    bad = "(" + " || ".join([*(cond for cond, _ in wrong), none]) + ")"
    yield rule.per_job(policy, TPU_JOBS, bad, item, "a TPU podSet has no valid topology-aware scheduling annotation")


_NO_TAS: Final = (
    "TPU podSet {podset!r} has no topology-aware scheduling annotation, so Kueue cannot keep each slice inside "
    "one node pool"
)

TAS_ANNOTATION_MISSING: Final = Rule(
    "tas-annotation-missing",
    "TAS annotation missing",
    FAMILY,
    _tas_missing,
    {
        "": Message(_NO_TAS, "add {annotation}: {level}"),
        "multislice": Message(_NO_TAS, "add {pair}"),
        "level": Message(
            "topology level {value!r} is not the static slice level",
            "set it to {level} (one node pool is one static slice)",
        ),
    },
    VapExport("", _tas_missing_cel),
    modes=STATIC,
    kinds=JOBS,
    why="nothing else keeps a slice's pods inside one node pool",
)


# ------------------------------------------------------------------ tas-annotation-unpaired


def _tas_unpaired(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.tpu_podsets:
        has_level = SLICE_REQUIRED_TOPOLOGY in podset.annotations
        has_size = SLICE_SIZE in podset.annotations
        if has_level == has_size:
            continue
        missing, present = (SLICE_SIZE, SLICE_REQUIRED_TOPOLOGY) if has_level else (SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE)
        yield TAS_ANNOTATION_UNPAIRED.finding(podset.annotations_path.key(missing), present=present, missing=missing)


def _tas_unpaired_cel(policy: Policy) -> Iterator[Validation]:
    rule = TAS_ANNOTATION_UNPAIRED
    sreq, size = lit(SLICE_REQUIRED_TOPOLOGY), lit(SLICE_SIZE)
    no_size = rule.cel_item(_key(SLICE_SIZE), present=SLICE_REQUIRED_TOPOLOGY, missing=SLICE_SIZE)
    no_level = rule.cel_item(_key(SLICE_REQUIRED_TOPOLOGY), present=SLICE_SIZE, missing=SLICE_REQUIRED_TOPOLOGY)
    item = f"({sreq} in {ANN} ? {no_size} : {no_level})"
    bad = f"({sreq} in {ANN}) != ({size} in {ANN})"
    yield rule.per_job(policy, TPU_JOBS, bad, item, "a TAS slice annotation is set without its pair")


TAS_ANNOTATION_UNPAIRED: Final = Rule(
    "tas-annotation-unpaired",
    "TAS slice annotations unpaired",
    FAMILY,
    _tas_unpaired,
    {"": Message("{present} is set without {missing}, and the two only work as a pair", "add {missing}")},
    VapExport("", _tas_unpaired_cel),
    modes=STATIC,
    kinds=JOBS,
    why="podset-slice-required-topology and podset-slice-size only work together",
)


# ------------------------------------------------------------------ tas-required-topology-multislice


def _tas_multislice(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.tpu_podsets:
        if podset.replicas > 1 and REQUIRED_TOPOLOGY in podset.annotations:
            yield TAS_REQUIRED_TOPOLOGY_MULTISLICE.finding(
                podset.annotations_path.key(REQUIRED_TOPOLOGY),
                replicas=podset.replicas,
                pair=_slice_pair(ctx.policy.static_slice_level),
            )


def _tas_multislice_cel(policy: Policy) -> Iterator[Validation]:
    rule = TAS_REQUIRED_TOPOLOGY_MULTISLICE
    item = rule.cel_item(
        _key(REQUIRED_TOPOLOGY), replicas=Expr(f"string({REPLICAS})"), pair=_slice_pair(policy.static_slice_level)
    )
    bad = f"({REPLICAS} > 1 && {lit(REQUIRED_TOPOLOGY)} in {ANN})"
    yield rule.per_job(policy, TPU_JOBS, bad, item, "a multi-slice podSet asks for one node pool")


TAS_REQUIRED_TOPOLOGY_MULTISLICE: Final = Rule(
    "tas-required-topology-multislice",
    "Single-pool annotation on a multi-slice podSet",
    FAMILY,
    _tas_multislice,
    {
        "": Message(
            "replicas is {replicas}, so this asks all {replicas} slices into one node pool, which can never be "
            "satisfied: the job would pend forever",
            "replace it with {pair}",
        )
    },
    VapExport("", _tas_multislice_cel),
    modes=STATIC,
    kinds=JOBSET_ONLY,
    why="asks all slices into one node pool: never satisfiable, pends forever",
)


# ------------------------------------------------------------------ tas-slice-size-mismatch

#: the problem's ``{why}`` when the size is a number, but not the slice's host count
_WRONG_COUNT: Final = "is not the {hosts} hosts of a {topology} slice"


def _tas_slice_size(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    for podset in workload.tpu_podsets:
        raw = podset.annotations.get(SLICE_SIZE)
        topology_text = podset.node_selector.get(ctx.tpu.topology_label)
        if raw is None or topology_text is None or topology_text not in ctx.static_topologies:
            continue
        try:
            hosts = parse_topology(topology_text).chips // ctx.tpu.chips_per_host
        except TopologyError:
            continue
        size = kueue_integer(raw)
        if size == hosts:
            continue
        why = SLICE_SIZE_NOT_INTEGER if size is None else _WRONG_COUNT.format(hosts=hosts, topology=topology_text)
        yield TAS_SLICE_SIZE_MISMATCH.finding(podset.annotations_path.key(SLICE_SIZE), raw=raw, why=why, hosts=hosts)


def _tas_slice_size_cel(policy: Policy) -> Iterator[Validation]:
    rule = TAS_SLICE_SIZE_MISMATCH
    size = lit(SLICE_SIZE)
    topo_label = lit(policy.tpu.topology_label)
    topo = f"{SEL}[{topo_label}]"
    raw = f"{ANN}[{size}]"
    # Kueue's integer parse (placement.kueue_integer): a sign and ASCII digits, nothing
    # around them. Equality is tested on at most 18 significant digits: int() cannot
    # overflow, and a longer number can never equal a host count.
    integer = lit("^[+-]?[0-9]+$")
    number = lit("^[+]?0*[0-9]{1,18}$")
    hosts_map = "{" + ", ".join(f"{lit(t)}: {h}" for t, h in static_hosts(policy).items()) + "}"
    hosts = Expr(f"string({hosts_map}[{topo}])")
    bad = (
        f"({size} in {ANN} && {topo_label} in {SEL} && {topo} in {hosts_map} && "
        f"!({raw}.matches({number}) && int({raw}) == {hosts_map}[{topo}]))"
    )
    wrong_count = cat(*template_parts(_WRONG_COUNT, {"hosts": hosts, "topology": Expr(topo)}))
    why = Expr(f"({raw}.matches({integer}) ? {wrong_count} : {lit(SLICE_SIZE_NOT_INTEGER)})")
    item = rule.cel_item(_key(SLICE_SIZE), raw=Expr(raw), why=why, hosts=hosts)
    yield rule.per_job(policy, TPU_JOBS, bad, item, "podset-slice-size is not the hosts of one slice")


TAS_SLICE_SIZE_MISMATCH: Final = Rule(
    "tas-slice-size-mismatch",
    "Slice size does not match topology",
    FAMILY,
    _tas_slice_size,
    # {why}: SLICE_SIZE_NOT_INTEGER, or _WRONG_COUNT filled in
    {"": Message("slice size {raw!r} {why}", 'set it to "{hosts}"')},
    VapExport("judged for the config's static topologies only", _tas_slice_size_cel),
    modes=STATIC,
    kinds=JOBS,
    why="podset-slice-size must be the hosts of one slice of the selected topology",
)


# ------------------------------------------------------------------ slice-topology-ignored


def _slice_topology_ignored(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    annotation = ctx.tpu.slice_topology_annotation
    for podset in workload.podsets:
        if annotation in podset.annotations:
            yield SLICE_TOPOLOGY_IGNORED.finding(podset.annotations_path.key(annotation), label=ctx.tpu.topology_label)


def _slice_topology_ignored_cel(policy: Policy) -> Iterator[Validation]:
    rule = SLICE_TOPOLOGY_IGNORED
    annotation = policy.tpu.slice_topology_annotation
    item = rule.cel_item(_key(annotation), label=policy.tpu.topology_label)
    bad = f"{lit(annotation)} in {ANN}"
    yield rule.per_job(policy, CEL_JOBS, bad, item, f"a pod template has the {annotation} annotation")


SLICE_TOPOLOGY_IGNORED: Final = Rule(
    "slice-topology-ignored",
    "Slice topology annotation ignored",
    FAMILY,
    _slice_topology_ignored,
    {
        "": Message(
            "the cluster runs static node pools and nothing translates this annotation",
            "remove it (select the pool with nodeSelector {label})",
        )
    },
    VapExport("as a warning (its own policy, bound with Warn)", _slice_topology_ignored_cel),
    modes=STATIC,
    default_action=Action.WARN,
    kinds=JOBS,
    why="static pools have no Slice Provisioner to translate it",
)

RULES: Final[tuple[Rule, ...]] = (
    STATIC_TOPOLOGY_SELECTOR_MISSING,
    STATIC_TOPOLOGY_UNKNOWN,
    TAS_ANNOTATION_MISSING,
    TAS_ANNOTATION_UNPAIRED,
    TAS_REQUIRED_TOPOLOGY_MULTISLICE,
    TAS_SLICE_SIZE_MISMATCH,
    SLICE_TOPOLOGY_IGNORED,
)
