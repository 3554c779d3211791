"""References by name that name nothing: Kueue keeps the object, inactive, and says little.

A ClusterQueue naming a ResourceFlavor or an AdmissionCheck that does not exist is
inactive (``FlavorNotFound``, ``AdmissionCheckNotFound``) and admits nothing; a
LocalQueue naming a missing ClusterQueue holds its jobs pending ("ClusterQueue … doesn't
exist"); a ResourceFlavor naming a missing Topology makes its ClusterQueues inactive
(``TopologyNotFound``). A reference is judged only when its kind is known; otherwise the
rule says which kind to add.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueobjects import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    RESOURCE_FLAVOR,
    TOPOLOGY,
    AdminKind,
    KueueObject,
)
from webhook.admin.paths import groups
from webhook.kube.fieldpaths import SPEC, FieldPath
from webhook.policy.findings import Finding
from webhook.rules import Message, Rule

FAMILY: Final = "reference"


def _references(obj: KueueObject) -> Iterator[tuple[AdminKind, str, FieldPath, str]]:
    """(kind, name, path, what Kueue says) of every object this one names."""
    if obj.kind is CLUSTER_QUEUE:
        seen: set[str] = set()
        for group in groups(obj):
            for flavor in group.flavors:
                if flavor not in seen:
                    seen.add(flavor)
                    yield RESOURCE_FLAVOR, flavor, group.flavor_path(flavor), "FlavorNotFound"
        strategy = obj.spec.get("admissionChecksStrategy")
        checks = strategy.get("admissionChecks") if isinstance(strategy, dict) else None
        for index, check in enumerate(checks if isinstance(checks, list) else []):
            if isinstance(check, dict) and check.get("name"):
                path = SPEC.child("admissionChecksStrategy", "admissionChecks").index(index).child("name")
                yield ADMISSION_CHECK, str(check["name"]), path, "AdmissionCheckNotFound"
    elif obj.kind is LOCAL_QUEUE:
        target = obj.spec.get("clusterQueue")
        if target:
            yield CLUSTER_QUEUE, str(target), SPEC.child("clusterQueue"), f"ClusterQueue {target} doesn't exist"
    elif obj.kind is RESOURCE_FLAVOR:
        topology = obj.spec.get("topologyName")
        if topology:
            yield TOPOLOGY, str(topology), SPEC.child("topologyName"), "TopologyNotFound"


def _ref_not_found(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    unknown: set[str] = set()
    for kind, name, path, says in _references(obj):
        if not ctx.objects.knows(kind):
            unknown.add(kind.plural)
            continue
        if ctx.objects.get(kind, name) is None:
            have = sorted(o.name for o in ctx.objects.of(kind))
            shown = ", ".join(have[:8]) + (f" and {len(have) - 8} more" if len(have) > 8 else "")
            yield REF_NOT_FOUND.finding(
                path,
                "queue" if obj.kind is LOCAL_QUEUE else "",
                target=kind.kind,
                name=name,
                says=says,
                have=shown or "none",
            )
    for plural in sorted(unknown):
        ctx.unknown.append(f"no {plural} in the input or --cluster-state to resolve the names against")


REF_NOT_FOUND: Final[AdminRule] = Rule(
    "ref-not-found",
    "Reference to an object that does not exist",
    FAMILY,
    _ref_not_found,
    {
        "": Message(
            "{target} {name!r} does not exist (there are: {have}): Kueue marks the ClusterQueues that depend on it "
            "inactive ({says}) and they admit nothing",
            "create {target} {name!r} first, or fix the name",
        ),
        "queue": Message(
            "{target} {name!r} does not exist (there are: {have}): every job sent to this LocalQueue stays pending "
            '("{says}")',
            "create {target} {name!r} first, or fix the name",
        ),
    },
    NOT_EXPORTED,
    kinds=frozenset({CLUSTER_QUEUE.kind, LOCAL_QUEUE.kind, RESOURCE_FLAVOR.kind}),
    why="Kueue accepts a name of nothing and keeps the queue inactive (kubernetes-sigs/kueue#1410)",
)

RULES: Final[tuple[AdminRule, ...]] = (REF_NOT_FOUND,)
