"""Resource-node math: the most a ClusterQueue could ever hold, through its cohort tree.

It follows kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` (facts
restated, no code copied). ClusterQueues and Cohorts are both resource nodes, with
quotas per (flavor, resource) (``ResourceQuota``: nominal, borrowingLimit, lendingLimit):

- **Subtree quota** (``SubtreeQuota``, ``updateCohortResourceNode``,
  ``accumulateFromChild``): a ClusterQueue's is its nominal quota; a Cohort's is its own
  nominal plus, from each child (ClusterQueue or Cohort), the child's subtree quota minus
  its local quota, i.e. what the child stores in its parent.
- **Local quota** (``localQuota``): what a node keeps to its own subtree and never lends:
  subtree − lendingLimit (never below zero) when a lendingLimit is set, else nothing.
- **Potential available** (``potentialAvailable``): for a node without parent, its
  subtree quota; with a parent, its local quota plus its parent's potential available,
  capped at subtree + borrowingLimit when a borrowingLimit is set. Usage is zero: this is
  "could it ever fit", where Kueue's ``available`` asks "does it fit now".
- **The tree** (``pkg/cache/hierarchy``): a Cohort names its parent (``parentName``); a
  ``cohortName`` without a Cohort object is an implicit cohort (no quota, no parent). A
  tree with a cycle is inactive in Kueue (``HasCycle``, ``ErrCohortHasCycle``): for us its
  answer is unknown.
- **Bounds, not guesses**: each answer is a ``Bound``, what the queue could ever hold
  between ``least`` (certain) and ``value`` (an upper bound that holds whatever is
  unknown). With the Cohorts known both are Kueue's potential available. With them
  unknown, ``least`` is the queue's nominal (potential available is never below it: what
  a queue lends stays in the tree above it) and ``value`` is nominal + borrowingLimit, or
  no upper bound without a borrowingLimit; ``decided_by`` says what would decide it.
- **Within nominal** (``IsWithinNominalInResources``, asked here of a shape of pods):
  how many pods a ClusterQueue's nominal quota of a flavor holds, without borrowing.

The member ClusterQueues' part of each Cohort's subtree quota is kept summed as
ClusterQueues come and go (``CohortMembers``), so a request never sums every queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from webhook.kube.quantity import CONTEXT
from webhook.quota.amounts import format_amount
from webhook.quota.objects import ClusterQueueInfo, CohortInfo, Quota

ZERO = Decimal(0)
#: Kueue's ``FlavorResource``: (flavor, resource)
FlavorResource = tuple[str, str]


def local_quota(subtree: Decimal, quota: Quota) -> Decimal:
    """Kueue's ``localQuota``: what a node keeps from its parent (subtree − lendingLimit, ≥ 0)."""
    if quota.lending_limit is None:
        return ZERO
    return max(ZERO, subtree - quota.lending_limit)


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

    def stored(self, cohort: str) -> Mapping[FlavorResource, Decimal] | None:
        """(flavor, resource) -> what the cohort's member ClusterQueues store in it."""
        return self._stored.get(cohort)


class CohortTree(Protocol):
    """What the resource-node math reads of the cached objects."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def cohorts(self) -> Mapping[str, CohortInfo]: ...

    @property
    def children(self) -> Mapping[str, Set[str]]:
        """Cohort name -> the Cohort objects whose ``parentName`` names it."""

    def cohorts_unknown(self) -> str | None:
        """Why the Cohort objects cannot be read (the tree above a queue is unknown); ``None`` when they can."""


@dataclass(frozen=True, slots=True)
class Bound:
    """What a ClusterQueue could ever hold of one flavor's resource: at least ``least``, at most ``value``."""

    #: the most it could ever hold, whatever is unknown; ``None``: no upper bound is known
    value: Decimal | None
    #: how ``value`` (or, without one, ``least``) is made up, for the messages
    explanation: str
    #: what it certainly could hold; ``None``: ``value`` (the bound is exact)
    least: Decimal | None = None
    #: when the bound is not exact: what would decide it (a kind to read, a cycle to fix)
    decided_by: str = ""

    @property
    def floor(self) -> Decimal:
        """What it certainly could hold."""
        if self.least is not None:
            return self.least
        return self.value if self.value is not None else ZERO

    @property
    def exact(self) -> bool:
        return self.value is not None and self.floor == self.value

    def holds(self, amount: Decimal) -> bool | None:
        """Whether it could ever hold ``amount``: ``True``, ``False``, or ``None`` (unknown)."""
        if self.value is not None and amount > self.value:
            return False
        return True if amount <= self.floor else None


Memo = Callable[[object], object]
Remember = Callable[[object, object], None]


class ResourceNodes:
    """The cohort trees over a ``CohortTree``, answers memoized on the snapshot part that holds the tree."""

    def __init__(self, tree: CohortTree, members: CohortMembers, memo: Memo, remember: Remember) -> None:
        self.tree = tree
        self.members = members
        self._memo = memo
        self._remember = remember

    def path_to_root(self, cohort: str) -> list[str] | None:
        """``cohort`` and its ancestors up to the root; ``None`` on a cycle (Kueue: inactive)."""
        chain: list[str] = []
        name: str | None = cohort
        while name is not None:
            if name in chain:
                return None
            chain.append(name)
            info = self.tree.cohorts.get(name)
            name = info.parent if info is not None else None  # no object: an implicit cohort
        return chain

    def subtree_quota(self, cohort: str, flavor: str, resource: str, depth: int = 0) -> Decimal:
        """A cohort's subtree quota: own nominal + each child's subtree minus its local quota."""
        key = ("subtree", cohort, flavor, resource)
        cached = self._memo(key)
        if isinstance(cached, Decimal):
            return cached
        info = self.tree.cohorts.get(cohort)
        own = info.quota(flavor, resource) if info is not None else None
        total = own.nominal if own is not None else ZERO
        stored = self.members.stored(cohort)  # the member ClusterQueues' part, summed as they change
        if stored:
            total += stored.get((flavor, resource), ZERO)
        if depth < 64:  # cycles are refused before we get here; the bound is belt and braces
            for child in self.tree.children.get(cohort, ()):
                child_info = self.tree.cohorts.get(child)
                subtree = self.subtree_quota(child, flavor, resource, depth + 1)
                quota = (child_info.quota(flavor, resource) if child_info is not None else None) or Quota(ZERO)
                total += subtree - local_quota(subtree, quota)
        self._remember(key, total)
        return total

    def _cohort_potential(self, chain: list[str], flavor: str, resource: str) -> Decimal:
        """``potentialAvailable`` of the cohort ``chain[0]``, walking up to the root."""
        name, parents = chain[0], chain[1:]
        subtree = self.subtree_quota(name, flavor, resource)
        if not parents:
            return subtree
        info = self.tree.cohorts.get(name)
        quota = (info.quota(flavor, resource) if info is not None else None) or Quota(ZERO)
        potential = local_quota(subtree, quota) + self._cohort_potential(parents, flavor, resource)
        if quota.borrowing_limit is not None:
            potential = min(potential, subtree + quota.borrowing_limit)
        return potential

    def potential_available(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        """The most ``cluster_queue`` could ever hold of ``resource`` in ``flavor`` (usage zero)."""
        key = ("potential", cluster_queue, flavor, resource)
        cached = self._memo(key)
        if isinstance(cached, Bound):
            return cached
        answer = self._potential_available(cluster_queue, flavor, resource)
        self._remember(key, answer)
        return answer

    def _potential_available(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        queue = self.tree.cluster_queues.get(cluster_queue)
        if queue is None:
            return Bound(None, f"ClusterQueue {cluster_queue} is unknown", ZERO, "the ClusterQueue object")
        quota = queue.quota(flavor, resource) or Quota(ZERO)
        nominal, limit = quota.nominal, quota.borrowing_limit
        n = format_amount
        if queue.cohort is None:
            return Bound(nominal, f"nominal {n(nominal)}, no cohort to borrow from")
        capped = f"nominal {n(nominal)} + borrowing limit {n(limit)}" if limit is not None else ""
        unread = self.tree.cohorts_unknown()
        if unread is not None:
            # Potential available is never below nominal: what the queue lends stays in the tree above it.
            if limit is None:
                why = f"nominal {n(nominal)}, cohort {queue.cohort} is unknown and there is no borrowing limit"
                return Bound(None, why, nominal, unread)
            return Bound(nominal + limit, f"{capped}, cohort {queue.cohort} unknown", nominal, unread)
        chain = self.path_to_root(queue.cohort)
        if chain is None:
            cycle = f"the cohort tree above {queue.cohort} has a cycle"
            return Bound(None, cycle, ZERO, "a cohort tree without a cycle (Kueue leaves the queue inactive)")
        tree = self._cohort_potential(chain, flavor, resource)
        kept = local_quota(nominal, quota)
        lent = nominal - kept  # what this queue itself stored in the tree
        potential = kept + tree
        where = f"cohort {queue.cohort}" + (f" (tree up to {chain[-1]})" if len(chain) > 1 else "")
        others = tree - lent
        if limit is not None and nominal + limit < potential:
            return Bound(nominal + limit, f"{capped} ({where} could lend {n(others)})")
        suffix = "" if limit is not None else ", no borrowing limit"
        return Bound(potential, f"nominal {n(nominal)} + {n(others)} the rest of {where} could lend{suffix}")


@dataclass(frozen=True, slots=True)
class NominalFit:
    """How many pods of one shape a ClusterQueue's nominal quota of a flavor holds."""

    #: pods that fit in nominal on every covered resource
    within: int
    #: (resource, what ``replicas`` pods need, nominal) for each covered resource they pass
    over: tuple[tuple[str, Decimal, Decimal], ...]


def nominal_fit(queue: ClusterQueueInfo, flavor: str, per_pod: Mapping[str, Decimal], replicas: int) -> NominalFit:
    """``replicas`` pods of ``per_pod`` against ``queue``'s nominal quota of ``flavor``, without borrowing.

    Resources the flavor does not cover are left out (``resource-not-covered`` speaks of them).
    """
    within = replicas
    over: list[tuple[str, Decimal, Decimal]] = []
    for resource, amount in sorted(per_pod.items()):
        quota = queue.quota(flavor, resource)
        if quota is None or amount <= 0:
            continue
        within = min(within, int(CONTEXT.divide_int(quota.nominal, amount)))  # up to 10^31 / 1n: 41 digits
        if amount * replicas > quota.nominal:
            over.append((resource, amount * replicas, quota.nominal))
    return NominalFit(within, tuple(over))
