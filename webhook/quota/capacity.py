"""What the quota model promises against what the hardware holds (the admin guard's sums).

RFC-0033's first risk is a quota model that breaks silently: Σ nominalQuota above the
chips the nodes have, so a "guaranteed" job within its team's nominal can wait for chips
that do not exist (风险 1; 4.2 end: the quota pipeline must check Σ nominal, dev queue
included, ≤ the cluster's chips; 4.6 ②: in static form per flavor, against the chips of
that flavor's node pools). This module does that arithmetic over the compact views of the
Kueue model and ``webhook.quota.objects``; the rules in ``webhook.admin`` only compare and word it.

- **Σ nominal** counts every ClusterQueue's and every Cohort's own ``nominalQuota`` of a
  resource (a Cohort's quota is capacity the tree promises too); borrowing and lending
  limits promise nothing of their own.
- **Capacity** is the nodes' ``status.allocatable`` (what pods can get), not
  ``capacity``; a cordoned node's chips still count (it comes back).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from webhook.kube.topology import TopologyError, parse_topology
from webhook.kueue.amounts import format_amount
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo
from webhook.kueue.resources import FlavorQuotas
from webhook.quota.objects import NodeInfo

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class Contribution:
    """One object's part of a Σ nominal: a ClusterQueue or a Cohort, on one flavor."""

    kind: str
    name: str
    flavor: str
    amount: Decimal


@dataclass(frozen=True, slots=True)
class NominalSum:
    """Σ nominal of one resource, and who contributes (non-zero parts, largest first).

    Made once per run and asked once per contributing object (1,000 queues): the
    per-object totals are kept, not summed again for each question.
    """

    total: Decimal
    contributions: tuple[Contribution, ...]
    #: (kind, name) -> what the object contributes, all its flavors together
    by_object: Mapping[tuple[str, str], Decimal]

    @classmethod
    def of_parts(cls, parts: list[Contribution]) -> NominalSum:
        by_object: dict[tuple[str, str], Decimal] = {}
        for c in parts:
            by_object[(c.kind, c.name)] = by_object.get((c.kind, c.name), ZERO) + c.amount
        return cls(sum((c.amount for c in parts), ZERO), tuple(parts), by_object)

    def of(self, kind: str, name: str) -> Decimal:
        """What one object contributes (all its flavors together)."""
        return self.by_object.get((kind, name), ZERO)

    def contributors(self) -> list[tuple[str, str, Decimal]]:
        """(kind, name, amount) per object, largest first, then by name."""
        return sorted(((k, n, a) for (k, n), a in self.by_object.items()), key=lambda t: (-t[2], t[1]))

    def describe(self, limit: int = 5) -> str:
        """``team-a 256, team-b 256, dev 64`` (Cohorts named so), the first ``limit`` and a count."""
        parts = self.contributors()
        shown = [
            f"{'Cohort ' if kind == 'Cohort' else ''}{name} {format_amount(amount)}" for kind, name, amount in parts
        ]
        if len(shown) > limit:
            shown = [*shown[:limit], f"and {len(shown) - limit} more"]
        return ", ".join(shown) or "none"


def _nominal(flavors: FlavorQuotas, resource: str, only: Container[str] | None) -> Iterable[tuple[str, Decimal]]:
    for flavor, resources in flavors:
        quota = resources.get(resource)
        if quota is not None and quota.nominal > 0 and (only is None or flavor in only):
            yield flavor, quota.nominal


def nominal_sum(
    queues: Iterable[ClusterQueueInfo],
    cohorts: Iterable[CohortInfo],
    resource: str,
    flavors: Container[str] | None = None,
) -> NominalSum:
    """Σ nominal of ``resource`` over the queues and Cohorts (only ``flavors`` when given)."""
    parts: list[Contribution] = []
    for queue in queues:
        parts += [Contribution("ClusterQueue", queue.name, f, n) for f, n in _nominal(queue.flavors, resource, flavors)]
    for cohort in cohorts:
        parts += [Contribution("Cohort", cohort.name, f, n) for f, n in _nominal(cohort.flavors, resource, flavors)]
    parts.sort(key=lambda c: (-c.amount, c.kind, c.name, c.flavor))
    return NominalSum.of_parts(parts)


def nominal_by_flavor(
    queues: Iterable[ClusterQueueInfo], cohorts: Iterable[CohortInfo], resource: str
) -> dict[str, NominalSum]:
    """Σ nominal of ``resource`` per flavor (only flavors someone gives a non-zero nominal)."""
    every = nominal_sum(queues, cohorts, resource)
    by_flavor: dict[str, list[Contribution]] = {}
    for c in every.contributions:
        by_flavor.setdefault(c.flavor, []).append(c)
    return {f: NominalSum.of_parts(parts) for f, parts in by_flavor.items()}


# ---------------------------------------------------------------- nodes


def matching_nodes(nodes: Iterable[NodeInfo], node_labels: Mapping[str, str]) -> list[NodeInfo]:
    """The nodes a ResourceFlavor's ``nodeLabels`` select (every pair must match exactly)."""
    items = tuple(node_labels.items())
    return [node for node in nodes if all(node.labels.get(k) == v for k, v in items)]


@dataclass(frozen=True, slots=True)
class Capacity:
    """How much of one resource a set of nodes has allocatable, and in which node pools."""

    resource: str
    total: Decimal
    nodes: int
    #: node pool -> allocatable of the resource, for pools that have some
    pools: Mapping[str, Decimal]

    def describe(self, unit: str = "") -> str:
        """``512 chips on 128 nodes in 4 node pools`` (``unit``: the word after the amount, if any)."""
        pools = f" in {len(self.pools)} node pool{'s' if len(self.pools) != 1 else ''}" if self.pools else ""
        amount = format_amount(self.total, self.resource) + (f" {unit}" if unit else "")
        return f"{amount} on {self.nodes} node{'s' if self.nodes != 1 else ''}{pools}"


def capacity(nodes: Iterable[NodeInfo], resource: str, pool_label: str) -> Capacity:
    """Σ allocatable ``resource`` of ``nodes``; a node without ``pool_label`` is a pool of its own."""
    total, count = ZERO, 0
    pools: dict[str, Decimal] = {}
    for node in nodes:
        count += 1
        amount = node.allocatable.get(resource, ZERO)
        total += amount
        if amount:
            pool = node.labels.get(pool_label, node.name)
            pools[pool] = pools.get(pool, ZERO) + amount
    return Capacity(resource, total, count, pools)


def per_unit(nodes: Iterable[NodeInfo], resource: str, unit: str) -> Decimal | None:
    """How much ``resource`` the nodes have per one of ``unit`` (cpu per chip); ``None`` without units."""
    have = ZERO
    units = ZERO
    for node in nodes:
        amount = node.allocatable.get(unit, ZERO)
        if amount:
            units += amount
            have += node.allocatable.get(resource, ZERO)
    return have / units if units else None


def topology_chips(text: str) -> int | None:
    """Chips of one static pool of topology ``text`` (``4x4x8`` → 128); ``None`` if not AxBxC."""
    try:
        return parse_topology(text).chips
    except TopologyError:
        return None
