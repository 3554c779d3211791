"""A Cohort as the Kueue model reads it, and its member ClusterQueues' quota kept summed.

A Cohort object names its parent (``parentName``) and may hold quota of its own; a
``cohortName`` no Cohort object answers to is an implicit cohort (no quota, no parent).
What each member ClusterQueue stores in its cohort (nominal less what it keeps for itself,
Kueue's ``localQuota``) is kept summed as queues come and go (``CohortMembers``), so the
cohort tree of a snapshot is built from the Cohorts alone, never by summing every queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.resource_node import local_quota
from webhook.kueue.resources import ZERO, FlavorQuotas, FlavorResource, Quota, fair_weight, resource_groups


@dataclass(frozen=True, slots=True)
class CohortInfo:
    """A Cohort object: its parent in the cohort tree and its own (cohort-level) quotas."""

    name: str
    parent: str | None
    flavors: FlavorQuotas
    fair_weight: Decimal = Decimal(1)

    def quota(self, flavor: str, resource: str) -> Quota | None:
        for name, resources in self.flavors:
            if name == flavor:
                return resources.get(resource)
        return None


def parse_cohort(obj: Mapping[str, Any]) -> CohortInfo:
    spec = as_dict(obj.get("spec"))
    parent = spec.get("parentName")
    return CohortInfo(
        name=str(as_dict(obj.get("metadata")).get("name", "")),
        parent=str(parent) if parent else None,
        flavors=resource_groups(spec.get("resourceGroups"))[1],
        fair_weight=fair_weight(spec),
    )


def stored_in_parent(queue: ClusterQueueInfo) -> dict[FlavorResource, Decimal]:
    """What a ClusterQueue puts into its cohort's subtree quota: nominal − its local quota."""
    return {key: quota.nominal - local_quota(quota.nominal, quota) for key, quota in queue.quotas.items()}


class CohortMembers:
    """Per cohort, its member ClusterQueues and what they store in it, kept summed."""

    def __init__(self) -> None:
        self._members: defaultdict[str, set[str]] = defaultdict(set)
        self._stored: defaultdict[str, dict[FlavorResource, Decimal]] = defaultdict(dict)

    def add(self, queue: ClusterQueueInfo) -> None:
        if queue.cohort:
            self._members[queue.cohort].add(queue.name)
            self._move(queue.cohort, queue, +1)

    def remove(self, queue: ClusterQueueInfo) -> None:
        if queue.cohort:
            self._members[queue.cohort].discard(queue.name)
            self._move(queue.cohort, queue, -1)
            if not self._members[queue.cohort]:
                del self._members[queue.cohort], self._stored[queue.cohort]

    def _move(self, cohort: str, queue: ClusterQueueInfo, sign: int) -> None:
        sums = self._stored[cohort]
        for key, amount in stored_in_parent(queue).items():
            sums[key] = sums.get(key, ZERO) + sign * amount

    def copy(self) -> CohortMembers:
        """The same sums, moved on their own from now on (a snapshot's)."""
        out = CohortMembers()
        out._members.update((cohort, set(names)) for cohort, names in self._members.items())
        out._stored.update((cohort, dict(sums)) for cohort, sums in self._stored.items())
        return out

    def cohorts(self) -> Iterator[str]:
        """The cohorts some ClusterQueue names."""
        return iter(self._stored)

    def stored(self, cohort: str) -> Mapping[FlavorResource, Decimal] | None:
        """(flavor, resource) -> what the cohort's member ClusterQueues store in it."""
        return self._stored.get(cohort)
