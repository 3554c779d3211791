"""Where things are in a ClusterQueue or Cohort: its resource groups, walked with field paths.

The quota views (``webhook.kueue``, ``webhook.quota.objects``) keep amounts, not positions; a finding must
name the field (``spec.resourceGroups[0].flavors[1].resources[0].nominalQuota``), so the
rules walk the object as written through these.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from webhook.admin.kueueobjects import KueueObject
from webhook.kube.fieldpaths import SPEC, FieldPath
from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import quantity_or_none

GROUPS: Final = SPEC.child("resourceGroups")
LIMITS: Final = ("nominalQuota", "borrowingLimit", "lendingLimit")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class Group:
    index: int
    covered: tuple[str, ...]
    flavors: tuple[str, ...]

    @property
    def path(self) -> FieldPath:
        return GROUPS.index(self.index)

    def covered_path(self, resource: str) -> FieldPath:
        path = self.path.child("coveredResources")
        return path.index(self.covered.index(resource)) if resource in self.covered else path

    def flavor_path(self, flavor: str) -> FieldPath:
        path = self.path.child("flavors")
        return path.index(self.flavors.index(flavor)).child("name") if flavor in self.flavors else path


def groups(obj: KueueObject) -> list[Group]:
    out = []
    for index, group in enumerate(_list(obj.spec.get("resourceGroups"))):
        group = as_dict(group)
        covered = tuple(str(r) for r in _list(group.get("coveredResources")))
        flavors = tuple(str(as_dict(f).get("name")) for f in _list(group.get("flavors")))
        out.append(Group(index, covered, flavors))
    return out


def group_of(obj: KueueObject, resource: str) -> Group | None:
    return next((g for g in groups(obj) if resource in g.covered), None)


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``resources[]`` entry of one flavor: its amounts as written and where it is."""

    group: int
    flavor: str
    resource: str
    path: FieldPath
    raw: dict[str, Any]

    def amount(self, limit: str) -> Decimal | None:
        """``nominalQuota``, ``borrowingLimit`` or ``lendingLimit``; ``None`` when absent or unreadable."""
        value = self.raw.get(limit)
        return quantity_or_none(value) if value is not None else None

    @property
    def nominal(self) -> Decimal:
        return self.amount("nominalQuota") or Decimal(0)


def entries(obj: KueueObject, resource: str | None = None) -> Iterator[Entry]:
    """Every (flavor, resource) entry, in the order written; only ``resource``'s when given."""
    for g, group in enumerate(_list(obj.spec.get("resourceGroups"))):
        for f, flavor in enumerate(_list(as_dict(group).get("flavors"))):
            flavor = as_dict(flavor)
            for r, item in enumerate(_list(flavor.get("resources"))):
                item = as_dict(item)
                name = str(item.get("name"))
                if resource is None or name == resource:
                    path = GROUPS.index(g).child("flavors").index(f).child("resources").index(r)
                    yield Entry(g, str(flavor.get("name")), name, path, item)


def entry(obj: KueueObject, flavor: str, resource: str) -> Entry | None:
    return next((e for e in entries(obj, resource) if e.flavor == flavor), None)
