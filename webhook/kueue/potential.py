"""What a ClusterQueue could ever hold, as the gates ask it: a bound, even when Cohorts are unknown.

The gates ask "could this job ever fit" of the cohort tree at zero usage
(``webhook.kueue.resource_node.potential_available``, Kueue's ``potentialAvailable``). The
answer is a ``Bound``, what the queue could ever hold between ``least`` (certain) and
``value`` (an upper bound that holds whatever is unknown):

- with the Cohorts known, both are the potential available;
- with them unknown, ``least`` is the queue's nominal (potential available is never below
  it: what a queue lends stays in the tree above it) and ``value`` nominal +
  borrowingLimit, or no upper bound without a borrowingLimit; ``decided_by`` says what
  would decide it;
- in or under a cohort cycle (Kueue leaves the queue inactive) nothing is known.

The tree is built once per snapshot part from the Cohorts and the member queues' sums
(``webhook.kueue.hierarchy``); each answer is memoized on that part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from webhook.kueue.amounts import format_amount
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo, CohortMembers
from webhook.kueue.hierarchy import Tree, build_tree
from webhook.kueue.resource_node import local_quota, potential_available
from webhook.kueue.resources import ZERO, Quota


class CohortTree(Protocol):
    """What the potential quota reads of the cached objects."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def cohorts(self) -> Mapping[str, CohortInfo]: ...

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
    """Potential quota over a ``CohortTree`` at zero usage; answers memoized on the snapshot part that holds it."""

    def __init__(self, source: CohortTree, members: CohortMembers, memo: Memo, remember: Remember) -> None:
        self.source = source
        self.members = members
        self._memo = memo
        self._remember = remember
        self._tree: Tree | None = None

    @property
    def tree(self) -> Tree:
        """The cohort tree of the part, built the first time it is read (the part never changes)."""
        if self._tree is None:
            self._tree = build_tree(self.source.cluster_queues, self.source.cohorts, self.members)
        return self._tree

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
        queue = self.source.cluster_queues.get(cluster_queue)
        if queue is None:
            return Bound(None, f"ClusterQueue {cluster_queue} is unknown", ZERO, "the ClusterQueue object")
        quota = queue.quota(flavor, resource) or Quota(ZERO)
        nominal, limit = quota.nominal, quota.borrowing_limit
        n = format_amount
        if queue.cohort is None:
            return Bound(nominal, f"nominal {n(nominal)}, no cohort to borrow from")
        capped = f"nominal {n(nominal)} + borrowing limit {n(limit)}" if limit is not None else ""
        unread = self.source.cohorts_unknown()
        if unread is not None:
            # Potential available is never below nominal: what the queue lends stays in the tree above it.
            if limit is None:
                why = f"nominal {n(nominal)}, cohort {queue.cohort} is unknown and there is no borrowing limit"
                return Bound(None, why, nominal, unread)
            return Bound(nominal + limit, f"{capped}, cohort {queue.cohort} unknown", nominal, unread)
        node = self.tree.queue(queue)
        if node.cyclic or node.parent is None:
            cycle = f"the cohort tree above {queue.cohort} has a cycle"
            return Bound(None, cycle, ZERO, "a cohort tree without a cycle (Kueue leaves the queue inactive)")
        fr = (flavor, resource)
        potential = potential_available(node, fr)
        tree = potential_available(node.parent, fr)
        lent = nominal - local_quota(nominal, quota)  # what this queue itself stored in the tree
        root = node.parent.root()
        where = f"cohort {queue.cohort}" + (f" (tree up to {root.name})" if root is not node.parent else "")
        others = tree - lent
        if limit is not None and nominal + limit < local_quota(nominal, quota) + tree:  # the limit caps it
            return Bound(potential, f"{capped} ({where} could lend {n(others)})")
        suffix = "" if limit is not None else ", no borrowing limit"
        return Bound(potential, f"nominal {n(nominal)} + {n(others)} the rest of {where} could lend{suffix}")
