"""The rule catalog: every rule's stable ID, family, modes, subject and default action.

This is the one place rules are listed. The engine runs them in this order, the config
validates ``rules:`` keys against it, and the README's rule table is generated from it
(``tpu-admission rules --format markdown``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.objects import kinds
from webhook.objects.workload import MALFORMED, Workload
from webhook.policy import config
from webhook.policy.config import Mode, Policy
from webhook.policy.findings import Action, Finding
from webhook.rules import Rule, RuleContext, cluster, forbidden, labels, placement, services, shape

DYNAMIC: frozenset[Mode] = frozenset({"dynamic"})
STATIC: frozenset[Mode] = frozenset({"static"})
#: RFC-0033 4.3.1: a Job's TPU pods follow the JobSet rules; a Deployment has no suspend
#: and (a resident service) no TPU slice. Rules with no ``kinds`` apply to all three.
JOBS = frozenset({kinds.JOBSET, kinds.JOB})
#: what only a JobSet has: its exclusive-topology annotation, the Slice name it makes,
#: several slices per podSet
JOBSET_ONLY = frozenset({kinds.JOBSET})
_QUEUES = frozenset({"LocalQueues", "ClusterQueues"})


def jobset_malformed(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    """Structural problems found while parsing (wrong types, missing template, ...)."""
    yield from workload.malformed


RULES: tuple[Rule, ...] = (
    Rule(
        MALFORMED,
        "Object is malformed",
        "shape",
        jobset_malformed,
        why="a value of the wrong type or a missing template; reported with its path instead of failing",
    ),
    # labels, tiers and queues
    Rule(
        "queue-label-missing",
        "Queue label missing",
        "labels",
        labels.queue_label_missing,
        subject="submitted",
        on_update=True,
        why="the production tier names its team queue explicitly; nothing is injected there",
    ),
    Rule(
        "queue-label-invalid",
        "Queue label invalid",
        "labels",
        labels.queue_label_invalid,
        subject="submitted",
        on_update=True,
        why="production queues are <team>-queue; a dev namespace has only its default queue",
    ),
    Rule(
        "priority-label-missing",
        "Priority label missing",
        "labels",
        labels.priority_label_missing,
        subject="submitted",
        on_update=True,
        why="production jobs say guaranteed or best-effort; Kueue's defaulting would hide a missing one",
    ),
    Rule(
        "priority-class-not-allowed",
        "Priority class not allowed",
        "labels",
        labels.priority_class_not_allowed,
        subject="submitted",
        on_update=True,
        why="each tier has its own priority classes (production: guaranteed/best-effort, dev: default)",
    ),
    Rule(
        "queue-not-permitted",
        "Queue not permitted",
        "labels",
        labels.queue_not_permitted,
        subject="submitted",
        on_update=True,
        why="off unless queuePermissions is configured: who may submit to which queue",
    ),
    # forbidden fields
    Rule(
        "suspend-forbidden",
        "spec.suspend set by hand",
        "forbidden",
        forbidden.suspend_forbidden,
        subject="submitted",
        on_update=True,
        kinds=JOBS,
        why="Kueue suspends and resumes jobs; a manual flip breaks its state machine",
    ),
    Rule(
        "pod-priority-class-forbidden",
        "Pod priorityClassName set",
        "forbidden",
        forbidden.pod_priority_class_forbidden,
        subject="submitted",
        why="native pod priority preempts at the kubelet and can outrank guaranteed through Kueue's fallback",
    ),
    Rule(
        "exclusive-topology-forbidden",
        "Exclusive topology annotation",
        "forbidden",
        forbidden.exclusive_topology_forbidden,
        modes=DYNAMIC,
        subject="submitted",
        kinds=JOBSET_ONLY,
        why="exclusive placement conflicts with sub-slices sharing a cube",
    ),
    Rule(
        "podset-annotation-forbidden",
        "podset-* annotation written by hand",
        "forbidden",
        forbidden.podset_annotation_forbidden,
        modes=DYNAMIC,
        subject="submitted",
        kinds=JOBS,
        why="the Slice Provisioner derives them from the slice-topology annotation",
    ),
    # placement, both modes
    Rule(
        "accelerator-selector-missing",
        "tpu7x selector missing",
        "placement",
        placement.accelerator_selector_missing,
        kinds=JOBS,
        why="without it the podSet may land on non-TPU nodes",
    ),
    # placement, dynamic mode
    Rule(
        "slice-topology-missing",
        "Slice topology missing",
        "dynamic",
        placement.slice_topology_missing,
        modes=DYNAMIC,
        kinds=JOBS,
        why="Kueue would report 'quota insufficient' without naming the missing annotation",
    ),
    Rule(
        "slice-topology-invalid",
        "Slice topology not allowed",
        "dynamic",
        placement.slice_topology_invalid,
        modes=DYNAMIC,
        kinds=JOBS,
        why="only the super-slice grammar and the four sub-slice shapes can be provisioned",
    ),
    Rule(
        "sub-slicing-disabled",
        "Sub-slicing disabled",
        "dynamic",
        placement.sub_slicing_disabled,
        modes=DYNAMIC,
        kinds=JOBS,
        why="sub-slices need the preview enabled on the cluster",
    ),
    Rule(
        "static-topology-selector-forbidden",
        "Static topology selector in dynamic mode",
        "dynamic",
        placement.static_topology_selector_forbidden,
        modes=DYNAMIC,
        kinds=JOBS,
        why="dynamic nodes carry no fixed topology; the annotation sets the slice size",
    ),
    Rule(
        "slice-name-too-long",
        "Slice name over budget",
        "dynamic",
        placement.slice_name_too_long,
        modes=DYNAMIC,
        kinds=JOBSET_ONLY,
        why="the Slice CR name would pass its length budget and the slice never forms",
    ),
    # placement, static mode
    Rule(
        "static-topology-selector-missing",
        "Static topology selector missing",
        "static",
        placement.static_topology_selector_missing,
        modes=STATIC,
        kinds=JOBS,
        why="without it Kueue cannot pick the node pool flavor",
    ),
    Rule(
        "static-topology-unknown",
        "Unknown static topology",
        "static",
        placement.static_topology_unknown,
        modes=STATIC,
        kinds=JOBS,
        why="no node pool of that topology exists",
    ),
    Rule(
        "tas-annotation-missing",
        "TAS annotation missing",
        "static",
        placement.tas_annotation_missing,
        modes=STATIC,
        kinds=JOBS,
        why="nothing else keeps a slice's pods inside one node pool",
    ),
    Rule(
        "tas-annotation-unpaired",
        "TAS slice annotations unpaired",
        "static",
        placement.tas_annotation_unpaired,
        modes=STATIC,
        kinds=JOBS,
        why="podset-slice-required-topology and podset-slice-size only work together",
    ),
    Rule(
        "tas-required-topology-multislice",
        "Single-pool annotation on a multi-slice podSet",
        "static",
        placement.tas_required_topology_multislice,
        modes=STATIC,
        kinds=JOBSET_ONLY,
        why="asks all slices into one node pool: never satisfiable, pends forever",
    ),
    Rule(
        "tas-slice-size-mismatch",
        "Slice size does not match topology",
        "static",
        placement.tas_slice_size_mismatch,
        modes=STATIC,
        kinds=JOBS,
        why="podset-slice-size must be the hosts of one slice of the selected topology",
    ),
    Rule(
        "slice-topology-ignored",
        "Slice topology annotation ignored",
        "static",
        placement.slice_topology_ignored,
        modes=STATIC,
        default_action=Action.WARN,
        kinds=JOBS,
        why="static pools have no Slice Provisioner to translate it",
    ),
    # shape
    Rule(
        "host-count-mismatch",
        "Host count does not match topology",
        "shape",
        shape.host_count_mismatch,
        kinds=JOBS,
        why="parallelism and completions must both be the slice's hosts (chips ÷ 4)",
    ),
    Rule(
        "tpu-request-invalid",
        "TPU request not 4 per container",
        "shape",
        shape.tpu_request_invalid,
        kinds=JOBS,
        why="each tpu7x host has exactly 4 chips; requests and limits must both say 4",
    ),
    # cluster-aware (SPEC §4, §5): skipped with a warning while a required kind is unknown
    Rule(
        "local-queue-not-found",
        "LocalQueue not found",
        "cluster",
        cluster.local_queue_not_found,
        requires=_QUEUES,
        why="a job sent to a missing LocalQueue (or the dev default that is not there) is stranded",
    ),
    Rule(
        "namespace-not-selected",
        "Namespace not selected by the ClusterQueue",
        "cluster",
        cluster.namespace_not_selected,
        requires=_QUEUES | {"Namespaces"},
        why="Kueue would leave it pending: namespace doesn't match ClusterQueue selector",
    ),
    Rule(
        "resource-not-covered",
        "Resource not covered by the ClusterQueue",
        "cluster",
        cluster.resource_not_covered,
        requires=_QUEUES,
        why="one uncovered resource (often ephemeral-storage) makes the whole Workload inadmissible",
    ),
    Rule(
        "exceeds-queue-capacity",
        "More chips than the queue can ever hold",
        "cluster",
        cluster.exceeds_queue_capacity,
        requires=_QUEUES | {"ResourceFlavors"},
        why="no flavor Kueue could assign can ever hold it (nominal + what the cohort tree may lend)",
    ),
    Rule(
        "guaranteed-balance-exceeded",
        "Guaranteed balance exceeded",
        "cluster",
        cluster.guaranteed_balance_exceeded,
        requires=_QUEUES | {"ResourceFlavors", "Workloads"},
        why="beyond the team's nominal a guaranteed job loses its preemption privilege",
    ),
    Rule(
        "exceeds-node-capacity",
        "One pod fits no node",
        "cluster",
        cluster.exceeds_node_capacity,
        requires=frozenset({"Nodes"}),
        why="one node must hold a pod's CPU, memory, disk and TPU together (DD-0018), and in dynamic mode "
        "all tpu7x nodes together the job's chips",
    ),
    Rule(
        "insufficient-node-pools",
        "Too few node pools of the topology",
        "cluster",
        cluster.insufficient_node_pools,
        modes=STATIC,
        requires=frozenset({"Nodes"}),
        kinds=JOBS,
        why="each slice takes one static node pool; with fewer pools the job pends forever",
    ),
    Rule(
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
    export = VAP_EXPORT[rule_id]
    word = "yes" if export.exported else "no"
    return f"{word}: {export.note}" if export.note else word


@dataclass(frozen=True, slots=True)
class VapExport:
    """How ``tpu-admission export vap`` carries a rule into the ValidatingAdmissionPolicy."""

    exported: bool
    #: for an exported rule, what it leaves to the webhook (empty: nothing); otherwise why not
    note: str = ""


_WHAT_THE_USER_WROTE = (
    "a VAP sees the object after every mutating webhook; label rules are safe there: mutation only adds "
    "labels, so a missing one was never written, and a value Kueue fills in (default) is one the webhook "
    "refuses too, as missing"
)
_CLUSTER = VapExport(False, "needs the cluster's state (queues, quotas, nodes), which a VAP cannot read")

#: Per rule: exported to the ValidatingAdmissionPolicy (webhook/export/vap/) or not, and why.
#: The export covers JobSet CREATE only; UPDATE stays with the webhook.
VAP_EXPORT: dict[str, VapExport] = {
    MALFORMED: VapExport(False, "the API server's schema validation of the JobSet CRD refuses wrong types first"),
    "queue-label-missing": VapExport(True, _WHAT_THE_USER_WROTE),
    "queue-label-invalid": VapExport(True, _WHAT_THE_USER_WROTE),
    "priority-label-missing": VapExport(True, _WHAT_THE_USER_WROTE),
    "priority-class-not-allowed": VapExport(True, _WHAT_THE_USER_WROTE),
    "queue-not-permitted": VapExport(True, "from request.userInfo; exported only when queuePermissions is set"),
    "suspend-forbidden": VapExport(
        True,
        "narrowed to spec.suspend: false; Kueue's webhook sets true itself, so a VAP cannot tell a user's true",
    ),
    "pod-priority-class-forbidden": VapExport(True, "no other webhook sets a JobSet's pod priorityClassName"),
    "exclusive-topology-forbidden": VapExport(True, "no other webhook adds the annotation"),
    "podset-annotation-forbidden": VapExport(
        False, "the Slice Provisioner's webhook injects podset-* annotations before a VAP runs"
    ),
    "accelerator-selector-missing": VapExport(True),
    "slice-topology-missing": VapExport(True),
    "slice-topology-invalid": VapExport(True),
    "sub-slicing-disabled": VapExport(True),
    "static-topology-selector-forbidden": VapExport(True),
    "slice-name-too-long": VapExport(True, "counts the generated name, which the API server sets before a VAP runs"),
    "static-topology-selector-missing": VapExport(True),
    "static-topology-unknown": VapExport(
        False,
        "the server also accepts topologies it learns from node labels; a VAP knows only the config's list "
        "and would refuse a pool added since",
    ),
    "tas-annotation-missing": VapExport(True),
    "tas-annotation-unpaired": VapExport(True),
    "tas-required-topology-multislice": VapExport(True),
    "tas-slice-size-mismatch": VapExport(True, "judged for the config's static topologies only"),
    "slice-topology-ignored": VapExport(True, "as a warning (its own policy, bound with Warn)"),
    "host-count-mismatch": VapExport(True, "static mode: judged for the config's static topologies only"),
    "tpu-request-invalid": VapExport(True, "reads quantities with the Kubernetes quantity library (1.29+)"),
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
