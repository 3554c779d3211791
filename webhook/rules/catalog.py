"""The rule catalog: every rule's stable ID, family, modes, subject and default action.

This is the one place rules are listed. The engine runs them in this order, the config
validates ``rules:`` keys against it, and the README's rule table is generated from it
(``tpu-admission rules --format markdown``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.objects import kinds
from webhook.policy import config
from webhook.policy.config import Mode, Policy
from webhook.policy.findings import Action
from webhook.rules import (
    Check,
    Rule,
    VapExport,
    cluster,
    dynamic,
    forbidden,
    labels,
    placement,
    services,
    shape,
    static,
)
from webhook.rules.cel import Validation

DYNAMIC: frozenset[Mode] = frozenset({"dynamic"})
STATIC: frozenset[Mode] = frozenset({"static"})
#: RFC-0033 4.3.1: a Job's TPU pods follow the JobSet rules; a Deployment has no suspend
#: and (a resident service) no TPU slice. Rules with no ``kinds`` apply to all three.
JOBS = frozenset({kinds.JOBSET, kinds.JOB})
#: what only a JobSet has: its exclusive-topology annotation, the Slice name it makes,
#: several slices per podSet
JOBSET_ONLY = frozenset({kinds.JOBSET})
_QUEUES = frozenset({"LocalQueues", "ClusterQueues"})


@dataclass(frozen=True, slots=True)
class _OldExport:
    """How ``tpu-admission export vap`` carries a rule into the ValidatingAdmissionPolicy."""

    exported: bool
    #: for an exported rule, what it leaves to the webhook (empty: nothing); otherwise why not
    note: str = ""


_CLUSTER = _OldExport(False, "needs the cluster's state (queues, quotas, nodes), which a VAP cannot read")

#: Per rule: exported to the ValidatingAdmissionPolicy (webhook/export/vap/) or not, and why.
#: The export covers JobSet CREATE only; UPDATE stays with the webhook.
_OLD_EXPORT: dict[str, _OldExport] = {
    "suspend-forbidden": _OldExport(
        True,
        "narrowed to spec.suspend: false; Kueue's webhook sets true itself, so a VAP cannot tell a user's true",
    ),
    "pod-priority-class-forbidden": _OldExport(True, "no other webhook sets a JobSet's pod priorityClassName"),
    "exclusive-topology-forbidden": _OldExport(True, "no other webhook adds the annotation"),
    "podset-annotation-forbidden": _OldExport(
        False, "the Slice Provisioner's webhook injects podset-* annotations before a VAP runs"
    ),
    "local-queue-not-found": _CLUSTER,
    "namespace-not-selected": _CLUSTER,
    "resource-not-covered": _CLUSTER,
    "exceeds-queue-capacity": _CLUSTER,
    "guaranteed-balance-exceeded": _CLUSTER,
    "exceeds-node-capacity": _CLUSTER,
    "insufficient-node-pools": _CLUSTER,
    "replicas-beyond-nominal": _CLUSTER,
}


def load_policy(path: str | Path | None) -> Policy:
    """The policy file (``None``: the embedded default), its rule IDs checked against this catalog."""
    return config.load_policy(path, RULES_BY_ID)


def policy_from_mapping(data: Any, source: str = "config") -> Policy:
    """A policy document, its rule IDs checked against this catalog."""
    return config.policy_from_mapping(data, source, RULES_BY_ID)


def _legacy_rule(rule_id: str, title: str, family: str, check: Check, **options: Any) -> Rule:
    old = _OLD_EXPORT[rule_id]
    return Rule(
        rule_id, title, family, check, {}, VapExport(old.note, _LEGACY_CEL if old.exported else None), **options
    )


def _LEGACY_CEL(policy: Policy) -> list[Validation]:
    return []


RULES: tuple[Rule, ...] = (
    shape.OBJECT_MALFORMED,
    *labels.RULES,
    *forbidden.RULES,
    *placement.RULES,
    *dynamic.RULES,
    *static.RULES,
    *shape.RULES,
    # cluster-aware (SPEC §4, §5): skipped with a warning while a required kind is unknown
    _legacy_rule(
        "local-queue-not-found",
        "LocalQueue not found",
        "cluster",
        cluster.local_queue_not_found,
        requires=_QUEUES,
        why="a job sent to a missing LocalQueue (or the dev default that is not there) is stranded",
    ),
    _legacy_rule(
        "namespace-not-selected",
        "Namespace not selected by the ClusterQueue",
        "cluster",
        cluster.namespace_not_selected,
        requires=_QUEUES | {"Namespaces"},
        why="Kueue would leave it pending: namespace doesn't match ClusterQueue selector",
    ),
    _legacy_rule(
        "resource-not-covered",
        "Resource not covered by the ClusterQueue",
        "cluster",
        cluster.resource_not_covered,
        requires=_QUEUES,
        why="one uncovered resource (often ephemeral-storage) makes the whole Workload inadmissible",
    ),
    _legacy_rule(
        "exceeds-queue-capacity",
        "More chips than the queue can ever hold",
        "cluster",
        cluster.exceeds_queue_capacity,
        requires=_QUEUES | {"ResourceFlavors"},
        why="no flavor Kueue could assign can ever hold it (nominal + what the cohort tree may lend)",
    ),
    _legacy_rule(
        "guaranteed-balance-exceeded",
        "Guaranteed balance exceeded",
        "cluster",
        cluster.guaranteed_balance_exceeded,
        requires=_QUEUES | {"ResourceFlavors", "Workloads"},
        why="beyond the team's nominal a guaranteed job loses its preemption privilege",
    ),
    _legacy_rule(
        "exceeds-node-capacity",
        "One pod fits no node",
        "cluster",
        cluster.exceeds_node_capacity,
        requires=frozenset({"Nodes"}),
        why="one node must hold a pod's CPU, memory, disk and TPU together (DD-0018), and in dynamic mode "
        "all tpu7x nodes together the job's chips",
    ),
    _legacy_rule(
        "insufficient-node-pools",
        "Too few node pools of the topology",
        "cluster",
        cluster.insufficient_node_pools,
        modes=STATIC,
        requires=frozenset({"Nodes"}),
        kinds=JOBS,
        why="each slice takes one static node pool; with fewer pools the job pends forever",
    ),
    _legacy_rule(
        services.RULE,
        "Service replicas beyond nominal quota",
        "cluster",
        services.replicas_beyond_nominal,
        default_action=Action.WARN,
        requires=_QUEUES | {"ResourceFlavors"},
        kinds=frozenset({kinds.DEPLOYMENT}),
        why="a Deployment's pods are admitted one by one: replicas beyond the team's nominal quota run on "
        "borrowed quota that guaranteed jobs reclaim (RFC 4.3.1)",
    ),
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def applies_to(rule: Rule) -> str:
    """``all``, or the kinds in the order of ``webhook.objects.kinds.ORDER`` (``JobSet, Job``)."""
    if rule.kinds == kinds.ALL:
        return "all"
    return ", ".join(kind for kind in kinds.ORDER if kind in rule.kinds)


def markdown_table() -> str:
    """The README's rule table, generated so the catalog is written only once."""
    lines = [
        "| rule | family | applies to | modes | checked on | default | why | VAP export |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rule in RULES:
        modes = "both" if len(rule.modes) == 2 else next(iter(rule.modes))
        paths = "mutate" if rule.subject == "submitted" else "mutate + validate"
        if rule.requires:
            paths += " (cluster)"
        lines.append(
            f"| `{rule.id}` | {rule.family} | {applies_to(rule)} | {modes} | {paths} | "
            f"{rule.default_action.value} | {rule.why} | {_vap_cell(rule.id)} |"
        )
    return "\n".join(lines)


def _vap_cell(rule_id: str) -> str:
    export = RULES_BY_ID[rule_id].vap
    word = "yes" if export.exported else "no"
    return f"{word}: {export.note}" if export.note else word
