"""Rule families. Each rule is a small pure function ``(workload, context) -> findings``.

The types every rule module shares live here; the catalog that lists the rules, their
IDs and default actions lives in ``webhook.rules.catalog``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from webhook.cluster.state import ClusterState
from webhook.objects.kinds import ALL as ALL_KINDS
from webhook.objects.request import UserInfo
from webhook.policy.config import Mode, Policy, TierPolicy, TpuPolicy
from webhook.policy.findings import Action, Finding

if TYPE_CHECKING:
    from webhook.objects.workload import Workload

#: ``submitted`` rules judge what the user wrote and run only where the webhook sees the
#: object as submitted (the mutating path); ``final`` rules judge fields no other
#: admission plugin changes and also run on the validating path (SPEC §4).
Subject = Literal["submitted", "final"]


@dataclass(slots=True)
class RuleContext:
    """Everything a rule may read besides the workload. Built once per request; rules only read it."""

    policy: Policy
    tier_name: str | None
    #: the request's tier (the policy's own, frozen)
    tier: TierPolicy | None
    operation: str
    user: UserInfo
    #: labels after the default-label patch (what Kueue will see)
    effective_labels: dict[str, str]
    #: on UPDATE, the label keys that changed; ``None`` on CREATE (all are in scope)
    changed_labels: frozenset[str] | None = None
    #: on UPDATE, the object before the change (parsed)
    old: Workload | None = None
    cluster: ClusterState | None = None
    #: the namespace's labels when the caller gave them (CLI ``--namespace-labels``): they beat the cache
    namespace_labels: Mapping[str, str] | None = None
    #: ``policy.tpu`` (frozen)
    tpu: TpuPolicy = field(init=False)
    #: ``policy.queueLabel`` and ``policy.priorityLabel``
    queue_label: str = field(init=False)
    priority_label: str = field(init=False)
    #: the static topologies a node selector may name: the policy's and, with cluster
    #: state, those the node pools advertise
    static_topologies: frozenset[str] = field(init=False)
    #: filled by a cluster rule that found part of its state unknown: the engine turns it into
    #: a "skipped" warning (unknown is not zero)
    unknown: list[str] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        policy, cluster = self.policy, self.cluster
        self.tpu = policy.tpu
        self.queue_label = policy.queue_label
        self.priority_label = policy.priority_label
        known = policy.static_topology_set
        self.static_topologies = known | cluster.static_topologies() if cluster is not None else known

    def label_in_scope(self, key: str) -> bool:
        return self.changed_labels is None or key in self.changed_labels


Check = Callable[["Workload", RuleContext], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    title: str
    family: str
    check: Check
    modes: frozenset[Mode] = frozenset({"static", "dynamic"})
    subject: Subject = "final"
    default_action: Action = Action.DENY
    on_update: bool = False
    #: cluster-state kinds the rule reads; empty for structural rules
    requires: frozenset[str] = field(default_factory=frozenset)
    #: the object kinds it applies to (``webhook.objects.kinds``: JobSet, Job, Deployment)
    kinds: frozenset[str] = ALL_KINDS
    #: one sentence: why the rule exists (shown in the README's rule table)
    why: str = ""
