"""The admin guard: Kueue's own configuration judged before it strands every job.

Kueue accepts many configurations that break the quota model or strand jobs later: Σ
nominal above the chips the nodes have ("guaranteed" no longer guaranteed), a null
``namespaceSelector``, a TPU resource group split from cpu/memory/ephemeral-storage, TPU
quota on a flavor without topology, a Topology level the nodes lack, an unknown field
in the Configuration that crash-loops the controller at its next restart. The guard
refuses those with the catalog, actions, exceptions and output formats of the job rules.

Read top to bottom:

- ``objects``: the kinds the guard reads, and one reader per document (``KueueObject``);
- ``state``: the judged set, input ∪ cluster state with the input winning, and which
  kinds are known;
- this module: ``AdminContext``, what every admin rule reads besides its object, with
  the parsed views (``webhook.kueue``, ``webhook.quota.objects``) worked out once per run;
- the rule families: ``quota`` (Σ nominal against the nodes, limits), ``clusterqueues``,
  ``localqueues``, ``priorities``, ``flavors`` (ResourceFlavors and Topologies), ``refs``,
  ``configuration`` (Kueue's Configuration and its controller's feature gates);
- ``catalog``: the families in order (they join ``webhook.rules.catalog``'s IDs);
- ``engine``: ``lint``, one decision per input object.

Quota arithmetic is the quota package's (``webhook.quota.capacity``); the rules compare and
word it. A rule is a ``webhook.rules.Rule`` over a ``KueueObject`` and an ``AdminContext``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from webhook.admin.kueueobjects import (
    CLUSTER_QUEUE,
    COHORT,
    NAMESPACE,
    NODE,
    RESOURCE_FLAVOR,
    KueueObject,
)
from webhook.admin.objectset import ObjectSet
from webhook.kube.scheduling import selector_matches
from webhook.kueue.clusterqueue import ClusterQueueInfo, parse_cluster_queue
from webhook.kueue.cohort import CohortInfo, parse_cohort
from webhook.kueue.resourceflavor import FlavorInfo, parse_flavor
from webhook.policy.config import Policy
from webhook.policy.tiers import resolve_tier
from webhook.quota.objects import NodeInfo, parse_node
from webhook.rules import Rule, VapExport

#: why no admin rule is in the ValidatingAdmissionPolicy export
NOT_EXPORTED: Final = VapExport(
    "an admin rule: it judges Kueue's objects against each other and the nodes, which a VAP on jobs cannot read"
)


@dataclass(slots=True)
class AdminContext:
    """Everything an admin rule may read besides its object. Made once per run; rules only read it.

    The views are parsed on first use and kept: with 1,000 ClusterQueues a cross-object
    sum is made once, not once per queue (``memo``).
    """

    policy: Policy
    objects: ObjectSet
    #: filled by a rule that found part of its state unknown: the engine turns each entry
    #: into a "skipped" note on the object (unknown is not zero)
    unknown: list[str] = field(default_factory=list)
    #: cross-object answers, by a key the rule module chooses
    memo: dict[Any, Any] = field(default_factory=dict)
    #: the Nodes already parsed, when the caller holds them so (the webhook: the store's); else
    #: they are parsed from the set's Node objects on first use
    node_infos: Collection[NodeInfo] | None = None
    #: the ClusterQueues, Cohorts and ResourceFlavors already parsed, by name, likewise (the
    #: webhook: the store's, with the request's own in place)
    queue_infos: Mapping[str, ClusterQueueInfo] | None = None
    cohort_infos: Mapping[str, CohortInfo] | None = None
    flavor_infos: Mapping[str, FlavorInfo] | None = None

    @property
    def mode(self) -> str:
        return self.policy.mode

    @property
    def tpu(self) -> str:
        return self.policy.tpu.resource_name

    # ---------------------------------------------------------------- parsed views

    @property
    def queues(self) -> Mapping[str, ClusterQueueInfo]:
        if self.queue_infos is None:
            self.queue_infos = {o.name: parse_cluster_queue(o.data) for o in self.objects.of(CLUSTER_QUEUE)}
        return self.queue_infos

    @property
    def cohorts(self) -> Mapping[str, CohortInfo]:
        if self.cohort_infos is None:
            self.cohort_infos = {o.name: parse_cohort(o.data) for o in self.objects.of(COHORT)}
        return self.cohort_infos

    @property
    def flavors(self) -> Mapping[str, FlavorInfo]:
        if self.flavor_infos is None:
            self.flavor_infos = {o.name: parse_flavor(o.data) for o in self.objects.of(RESOURCE_FLAVOR)}
        return self.flavor_infos

    @property
    def nodes(self) -> Collection[NodeInfo]:
        if self.node_infos is None:
            self.node_infos = [parse_node(o.data) for o in self.objects.of(NODE)]
        return self.node_infos

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()`` once per run for ``key`` (a cross-object sum, the nodes of a flavor)."""
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    # ---------------------------------------------------------------- flavors

    def selects_tpu(self, flavor: FlavorInfo) -> bool:
        """The flavor's nodeLabels select TPU nodes (the accelerator label)."""
        return self.policy.tpu.accelerator_label in flavor.node_labels

    def is_tas(self, name: str) -> bool | None:
        """Whether the flavor has a Topology (TAS); ``None`` when the flavor is not known."""
        flavor = self.flavors.get(name)
        return None if flavor is None else flavor.topology_name is not None

    # ---------------------------------------------------------------- namespaces and tiers

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels when Namespaces are known and it is one of them."""
        if not self.objects.knows(NAMESPACE):
            return None
        found = self.objects.get(NAMESPACE, namespace)
        return found.labels if found is not None else None

    def namespace_tier(self, namespace: str) -> str | None:
        """The tier as the job rules resolve it: the namespace's labels, else the config's map."""
        return resolve_tier(self.policy, namespace, namespace_labels=self.namespace_labels(namespace)).tier

    def namespace_view(self, namespace: str) -> Mapping[str, str] | None:
        """Labels a selector is matched against: the real ones, else the config tier's label."""
        labels = self.namespace_labels(namespace)
        if labels is not None:
            return labels
        tier = self.policy.namespace_tiers.get(namespace)
        if tier is None:
            return None
        return {self.policy.tier_label: tier, "kubernetes.io/metadata.name": namespace}

    def selector_tiers(self, selector: Mapping[str, Any] | None) -> list[str]:
        """The configured tiers whose namespaces a selector matches, judged on the tier label alone."""
        if selector is None:
            return []
        label = self.policy.tier_label
        return [tier for tier in self.policy.tiers if selector_matches(_tier_only(selector, label), {label: tier})]

    def dev_tiers(self) -> list[str]:
        """Tiers that inject a default queue (RFC-0033's dev tier: 免标签投递)."""
        return [name for name, tier in self.policy.tiers.items() if tier.default_queue]


def _tier_only(selector: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The selector's requirements on the tier label only."""
    match_labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    return {
        "matchLabels": {k: v for k, v in match_labels.items() if k == label} if isinstance(match_labels, dict) else {},
        "matchExpressions": [e for e in expressions if isinstance(e, dict) and e.get("key") == label]
        if isinstance(expressions, list)
        else [],
    }


#: an admin rule: judges one Kueue object against the set it belongs to
AdminRule: TypeAlias = Rule[KueueObject, AdminContext]
