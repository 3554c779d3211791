"""ResourceFlavor and Topology rules: TAS must see the TPU nodes, or no job ever lands.

RFC-0033 4.2: the TPU flavor selects the accelerator label, names a Topology (TAS) and
tolerates the ``google.com/tpu`` NoSchedule taint, which Kueue then adds to the pods it
admits and TAS counts when it picks nodes; TAS builds its capacity tree only from nodes
that carry every level label of the Topology (a node missing one is left out), so the
Topology may name only levels the nodes have: the 7 partition levels in dynamic form
(after 阶段〇), node pool and host in static form (4.6 ①).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueobjects import RESOURCE_FLAVOR, TOPOLOGY, KueueObject
from webhook.admin.quotas import flavor_nodes
from webhook.kube.fieldpaths import SPEC
from webhook.kube.scheduling import Taint, tolerated
from webhook.kueue.amounts import format_amount
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.policy.findings import Finding
from webhook.rules import Message, Rule

FAMILY: Final = "flavor"
RF: Final = frozenset({RESOURCE_FLAVOR.kind})
TOLERATIONS: Final = SPEC.child("tolerations")


def _tpu_taint(ctx: AdminContext) -> Taint:
    return Taint(ctx.tpu, "present", "NoSchedule")


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def _toleration_missing(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    flavor = ctx.flavors.get(obj.name)
    if flavor is None or flavor.topology_name is None or not ctx.selects_tpu(flavor):
        return
    untolerated: Counter[Taint] = Counter()
    if ctx.objects.knows_plural("Nodes"):
        for node in flavor_nodes(ctx, flavor):
            for taint in node.taints:
                if not tolerated(taint, flavor.tolerations):
                    untolerated[taint] += 1
    elif not tolerated(_tpu_taint(ctx), flavor.tolerations):
        untolerated[_tpu_taint(ctx)] = 0
    for taint, count in sorted(untolerated.items(), key=lambda item: (-item[1], item[0].key)):
        excluded = f'excluded: taint "{_taint_text(taint)}": {count}' if count else f'taint "{_taint_text(taint)}"'
        yield RF_TPU_TOLERATION_MISSING.finding(
            TOLERATIONS,
            "nodes" if count else "",
            taint=_taint_text(taint),
            excluded=excluded,
            key=taint.key,
            effect=taint.effect,
        )


RF_TPU_TOLERATION_MISSING: Final[AdminRule] = Rule(
    "rf-tpu-toleration-missing",
    "TPU flavor that does not tolerate its nodes' taints",
    FAMILY,
    _toleration_missing,
    {
        "": Message(
            "the flavor selects TPU nodes, which carry the {taint} taint, and does not tolerate it: TAS filters "
            "nodes by taint at admission, so no TPU job is ever admitted on it ({excluded})",
            "add tolerations: [{{key: {key}, operator: Exists, effect: {effect}}}]. A flavor with topologyName "
            "cannot change its tolerations (Kueue v0.19.2): take it out of the ClusterQueues, delete and recreate it",
        ),
        "nodes": Message(
            "the flavor's nodes carry the {taint} taint and the flavor does not tolerate it: TAS leaves them out at "
            "admission ({excluded}), and no TPU job is admitted on them",
            "add tolerations: [{{key: {key}, operator: Exists, effect: {effect}}}]. A flavor with topologyName "
            "cannot change its tolerations (Kueue v0.19.2): take it out of the ClusterQueues, delete and recreate it",
        ),
    },
    NOT_EXPORTED,
    kinds=RF,
    why="TAS counts only nodes the flavor tolerates, and a TAS flavor's tolerations are immutable (kueue#3720)",
)


def _not_tas(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    flavor = ctx.flavors.get(obj.name)
    if flavor is None or flavor.topology_name is not None or not ctx.selects_tpu(flavor):
        return
    label = ctx.policy.tpu.accelerator_label
    yield RF_TPU_FLAVOR_NOT_TAS.finding(
        SPEC.child("nodeLabels").key(label), label=label, value=flavor.node_labels[label]
    )


RF_TPU_FLAVOR_NOT_TAS: Final[AdminRule] = Rule(
    "rf-tpu-flavor-not-tas",
    "TPU flavor without a Topology",
    FAMILY,
    _not_tas,
    {
        "": Message(
            "the flavor selects TPU nodes ({label}: {value}) but has no topologyName: a TPU podSet asks for a "
            'topology, so Kueue passes this flavor over ("does not support TopologyAwareScheduling") and its chips '
            "are never used",
            "set spec.topologyName to the TPU Topology (RFC-0033: tpu7x-topology, or nodepool-topology in static "
            "form). topologyName is set when the flavor is created: recreate it",
        )
    },
    NOT_EXPORTED,
    kinds=RF,
    why="TPU podSets request a topology: a flavor without one is skipped for them (RFC-0033 4.2 分流机制)",
)


# ---------------------------------------------------------------- Topologies


def _levels(obj: KueueObject) -> list[str]:
    levels = obj.spec.get("levels")
    return (
        [str(level.get("nodeLabel")) for level in levels if isinstance(level, dict)] if isinstance(levels, list) else []
    )


def _required_levels(ctx: AdminContext) -> tuple[str, ...]:
    kueue = ctx.policy.kueue
    return kueue.dynamic_topology_levels if ctx.mode == "dynamic" else kueue.static_topology_levels


def _tpu_flavors_of(ctx: AdminContext, topology: str) -> list[FlavorInfo]:
    return [f for f in ctx.flavors.values() if f.topology_name == topology and ctx.selects_tpu(f)]


def _level_required(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    flavors = _tpu_flavors_of(ctx, obj.name)
    if not flavors:
        return
    have = _levels(obj)
    missing = [level for level in _required_levels(ctx) if level not in have]
    if missing:
        yield TOPOLOGY_LEVEL_REQUIRED.finding(
            SPEC.child("levels"),
            flavors=", ".join(f.name for f in flavors),
            plural="s" if len(flavors) > 1 else "",
            mode=ctx.mode,
            missing=", ".join(missing),
            required=", ".join(_required_levels(ctx)),
        )


TOPOLOGY_LEVEL_REQUIRED: Final[AdminRule] = Rule(
    "topology-level-required",
    "TPU Topology without the levels its mode needs",
    FAMILY,
    _level_required,
    {
        "": Message(
            "the Topology of TPU flavor{plural} {flavors} lacks {missing}, which {mode} mode places slices by: TAS "
            "cannot keep a slice's pods within one of those domains, so a TPU job is refused or spread across slices",
            "give it the levels {required}, in that order (RFC-0033 4.2, 4.6 ①). Levels cannot be changed in "
            "place: create a new Topology and point a new flavor at it",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"ResourceFlavors"}),
    kinds=frozenset({TOPOLOGY.kind}),
    why="static slices are node pools, dynamic ones the partition tree: the Topology must name those levels",
)


def _labels_missing(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    if obj.kind is RESOURCE_FLAVOR:
        flavor = ctx.flavors.get(obj.name)
        if flavor is not None and flavor.topology_name is not None:
            topology = ctx.objects.get(TOPOLOGY, flavor.topology_name)
            if topology is not None:
                yield from _excluded(flavor, topology, ctx, SPEC.child("topologyName"))
        return
    for flavor in sorted(_tas_flavors_of(ctx, obj.name), key=lambda f: f.name):
        yield from _excluded(flavor, obj, ctx, SPEC.child("levels"))


def _tas_flavors_of(ctx: AdminContext, topology: str) -> list[FlavorInfo]:
    return [f for f in ctx.flavors.values() if f.topology_name == topology]


def _excluded(flavor: FlavorInfo, topology: KueueObject, ctx: AdminContext, path: object) -> Iterator[Finding]:
    levels = _levels(topology)
    nodes = flavor_nodes(ctx, flavor)
    lacking: Counter[str] = Counter()
    out = 0
    chips = Decimal(0)
    for node in nodes:
        absent = [level for level in levels if level not in node.labels]
        if absent:
            out += 1
            chips += node.allocatable.get(ctx.tpu, Decimal(0))
            lacking.update(absent)
    if not out:
        return
    which = ", ".join(f"{level} ({count} node{'s' if count != 1 else ''})" for level, count in lacking.most_common())
    left = "no node is left, so nothing schedules on it" if out == len(nodes) else f"{len(nodes) - out} are left"
    yield TOPOLOGY_LABELS_MISSING_ON_NODES.finding(
        path,  # type: ignore[arg-type]
        out=out,
        total=len(nodes),
        flavor=flavor.name,
        chips=format_amount(chips),
        topology=topology.name,
        which=which,
        left=left,
    )


TOPOLOGY_LABELS_MISSING_ON_NODES: Final[AdminRule] = Rule(
    "topology-labels-missing-on-nodes",
    "Nodes of a TAS flavor without every level label of its Topology",
    FAMILY,
    _labels_missing,
    {
        "": Message(
            "TAS leaves out {out} of the {total} nodes flavor {flavor} selects ({chips} chips): they lack levels of "
            "Topology {topology}: {which}. A node missing any level is not in the capacity tree, and {left}",
            "label the nodes first (RFC-0033 阶段〇), or point the flavor at a Topology whose levels they have",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"Nodes", "ResourceFlavors", "Topologies"}),
    kinds=frozenset({TOPOLOGY.kind, RESOURCE_FLAVOR.kind}),
    why="TAS drops every node that lacks one level label: a 7-level Topology before 阶段〇 leaves no node (kueue#5039)",
)

RULES: Final[tuple[AdminRule, ...]] = (
    RF_TPU_TOLERATION_MISSING,
    RF_TPU_FLAVOR_NOT_TAS,
    TOPOLOGY_LEVEL_REQUIRED,
    TOPOLOGY_LABELS_MISSING_ON_NODES,
)
