"""Fair sharing: the dominant resource share of a node that borrows.

It restates kubernetes-sigs/kueue ``pkg/cache/scheduler/fair_sharing.go`` (facts only):
per resource, what a node uses beyond its subtree quota (summed over flavors), over what
its parent could lend of that resource with nothing admitted; the largest ratio ×1000 is
the share, weighed by the node's fair-sharing weight. A node that does not borrow has
share zero; a node of weight zero that borrows comes after every other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.kueue.resource_node import Node, potential_available
from webhook.kueue.resources import ZERO, FlavorResource

INFINITY = Decimal("Infinity")


@dataclass(frozen=True, slots=True)
class DRS:
    """Kueue's ``DRS``: the borrowed share of the dominant resource, ×1000, and the weight."""

    weight: Decimal
    ratio: Decimal = ZERO
    dominant: str = ""
    borrowing: bool = False
    #: ``PreciseWeightedShare``: the ratio over the weight (0 when not borrowing, infinite at weight 0)
    weighted: Decimal = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if self.ratio == 0:
            weighted = ZERO
        elif self.weight == 0:
            weighted = INFINITY
        else:
            weighted = self.ratio / self.weight
        object.__setattr__(self, "weighted", weighted)

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0


NEGATIVE_DRS = DRS(Decimal(1), Decimal(-1))


def compare_drs(a: DRS, b: DRS) -> int:
    """``CompareDRS``: lower is preferred for scheduling, higher for preemption."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    x, y = a.weighted, b.weighted
    return (x > y) - (x < y)


def dominant_resource_share(node: Node, request: Mapping[FlavorResource, Decimal] | None = None) -> DRS:
    """``dominantResourceShare``: per resource, what the node borrows (with ``request`` added) over
    what its parent could lend of it across flavors; the largest ratio wins, ties by name."""
    if request is None and node.drs is not None and node.drs[0] == node.version:
        held = node.drs[1]
        if isinstance(held, DRS):
            return held
    share = _dominant_resource_share(node, request)
    if request is None:
        node.drs = (node.version, share)
    return share


def _dominant_resource_share(node: Node, request: Mapping[FlavorResource, Decimal] | None) -> DRS:
    if node.parent is None:
        return DRS(node.weight)
    borrowed: dict[str, Decimal] = {}
    for fr, quota in node.subtree.items():
        amount = (request or {}).get(fr, ZERO) + node.usage.get(fr, ZERO) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], ZERO) + amount
    if not borrowed:
        return DRS(node.weight)
    lendable = node.parent.lendable
    if lendable is None:
        lendable = {}
        for fr in node.root().subtree:
            lendable[fr[1]] = lendable.get(fr[1], ZERO) + potential_available(node.parent, fr)
        node.parent.lendable = lendable
    ratio, dominant = ZERO, ""
    for resource, amount in sorted(borrowed.items()):
        lend = lendable.get(resource, ZERO)
        if lend > 0:
            share = amount * 1000 / lend
            if share > ratio:
                ratio, dominant = share, resource
    return DRS(node.weight, ratio, dominant, True)


#: Kueue's default fair-sharing preemption strategies (``parseStrategies``)
DEFAULT_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
_STRATEGIES = frozenset(DEFAULT_STRATEGIES)


@dataclass(frozen=True, slots=True)
class FairSharing:
    """Kueue's Configuration ``fairSharing``: its presence turns fair sharing on."""

    enabled: bool = False
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES


def fair_sharing(configuration: Mapping[str, Any] | None) -> FairSharing:
    """Kueue's ``fairSharing`` setting, from its Configuration (the decoded
    ``controller_manager_config.yaml``): in ``v1beta2`` a ``fairSharing`` block turns it on, in
    ``v1beta1`` only with ``enable: true``; strategies default as Kueue's ``parseStrategies`` does."""
    if configuration is None or not isinstance(configuration.get("fairSharing"), dict):
        return FairSharing(False)
    block = configuration["fairSharing"]
    if str(configuration.get("apiVersion", "")).endswith("/v1beta1") and block.get("enable") is not True:
        return FairSharing(False)
    strategies = block.get("preemptionStrategies")
    chosen = tuple(s for s in strategies if s in _STRATEGIES) if isinstance(strategies, list) else ()
    return FairSharing(True, chosen or DEFAULT_STRATEGIES)
