"""The types at the bottom of the Kueue model: (flavor, resource) and the quota of one.

Kueue keeps quotas per ``FlavorResource`` (``pkg/resources``) as a ``ResourceQuota``
(nominal, borrowingLimit, lendingLimit; ``pkg/cache/scheduler/resource_node.go``).
ClusterQueues and Cohorts both list them in ``spec.resourceGroups``, read here once for
both (``resource_groups``), as is the fair-sharing weight both carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import quantity_or_none

ZERO = Decimal(0)

#: Kueue's ``FlavorResource``: (flavor, resource)
FlavorResource = tuple[str, str]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class Quota:
    """Kueue's ``ResourceQuota`` of one (flavor, resource): nominal, and the limits when set."""

    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


#: flavor -> resource -> quota, flavors in the order of the resource groups
FlavorQuotas = tuple[tuple[str, Mapping[str, Quota]], ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """One ``spec.resourceGroups[]`` entry: the resources it covers and its flavors, in order."""

    covered: frozenset[str]
    flavors: tuple[str, ...]


def resource_groups(value: Any) -> tuple[tuple[ResourceGroup, ...], FlavorQuotas]:
    """``spec.resourceGroups``: each group, and the quotas of each flavor in the groups' order."""
    groups: list[ResourceGroup] = []
    flavors: list[tuple[str, Mapping[str, Quota]]] = []
    for group in _list(value):
        group = as_dict(group)
        names: list[str] = []
        for flavor in _list(group.get("flavors")):
            flavor = as_dict(flavor)
            resources: dict[str, Quota] = {}
            for resource in _list(flavor.get("resources")):
                resource = as_dict(resource)
                borrowing = resource.get("borrowingLimit")
                lending = resource.get("lendingLimit")
                resources[str(resource.get("name"))] = Quota(
                    quantity_or_none(resource.get("nominalQuota")) or Decimal(0),
                    quantity_or_none(borrowing) if borrowing is not None else None,
                    quantity_or_none(lending) if lending is not None else None,
                )
            names.append(str(flavor.get("name")))
            flavors.append((names[-1], resources))
        groups.append(ResourceGroup(frozenset(str(r) for r in _list(group.get("coveredResources"))), tuple(names)))
    return tuple(groups), tuple(flavors)


def fair_weight(spec: Mapping[str, Any]) -> Decimal:
    """``spec.fairSharing.weight`` (a quantity; Kueue's default 1)."""
    weight = quantity_or_none(as_dict(spec.get("fairSharing")).get("weight"))
    return weight if weight is not None and weight >= 0 else Decimal(1)
