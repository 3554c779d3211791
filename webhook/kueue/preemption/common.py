"""What Kueue's preemption policies share (``pkg/scheduler/preemption/common``, ``preemption.go``).

The preemptor and its victims with their reasons, the candidate order
(``CandidatesOrdering``), and the what-if search both policies run: Workloads taken out
of the tree and put back, so nothing is ever written, and the put-back of victims the
job turns out not to need (``fillBackWorkloads``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from webhook.kueue.hierarchy import Tree
from webhook.kueue.preemption.candidates import Peekable, QueueIndex
from webhook.kueue.resource_node import Node, available
from webhook.kueue.resources import FlavorResource
from webhook.kueue.workload import AdmittedWorkload

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# preemption variants (``classical/hierarchical_preemption.go``)
NEVER, WITHIN_CQ, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING = range(5)
REASON = {
    WITHIN_CQ: IN_CLUSTER_QUEUE,
    HIERARCHICAL: IN_COHORT_RECLAMATION,
    WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}

Usage = Mapping[FlavorResource, Decimal]


@dataclass(frozen=True, slots=True)
class Victim:
    workload: AdmittedWorkload
    reason: str


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The job asking: its queue, priority, queue-order time and what it would use."""

    queue: Node
    priority: int
    created: datetime
    #: (flavor, resource) -> what the job would use (``TotalRequestsFor`` the assignment)
    usage: Usage
    #: the (flavor, resource)s whose assignment mode is Preempt
    need: frozenset[FlavorResource]
    #: the job needs static node pools free too (``Simulation.pools`` follows them)
    placed: bool = False


def ordering_key(queue: str, now: datetime) -> Callable[[AdmittedWorkload], tuple[int, int, int, float, str]]:
    """``CandidatesOrdering`` as a sort key (without admission fair sharing)."""

    def key(w: AdmittedWorkload) -> tuple[int, int, int, float, str]:
        reserved = (w.reserved or now).timestamp()
        return (0 if w.evicted else 1, 1 if w.cluster_queue == queue else 0, w.priority, -reserved, w.uid)

    return key


class PoolFollower(Protocol):
    """Static mode's node pools of the job, followed as Workloads are taken out and put back."""

    def remove(self, workload: str) -> None: ...

    def add(self, workload: str) -> None: ...

    def fits(self) -> bool: ...


class Search:
    """The tree with Workloads taken out and put back (``Snapshot.RemoveWorkload`` / ``AddWorkload``),
    and the candidates each queue offers, in order."""

    def __init__(self, tree: Tree, candidates: Mapping[str, QueueIndex], now: datetime, budget: int = 20_000) -> None:
        self.tree = tree
        #: per ClusterQueue, its admitted Workloads in candidate order
        self.candidates = candidates
        #: the time "most recently admitted" is judged against
        self.now = now
        #: candidates one answer may examine; past it the search stops and says so (``exhausted``)
        self.budget = budget
        self.examined = 0
        #: the job's static node pools, followed through removals while a placed job's victims are sought
        self.pools: PoolFollower | None = None

    def reset(self) -> None:
        """Forget the last simulation's budget (the tree itself is always restored)."""
        self.examined = 0

    @property
    def exhausted(self) -> bool:
        return self.examined > self.budget

    def examine(self) -> bool:
        """Count one candidate examined; ``False`` once the budget is spent (the search then ends
        as if no candidate were left, and the caller answers unknown)."""
        self.examined += 1
        return not self.exhausted

    def remove(self, workload: AdmittedWorkload) -> None:
        self.tree.remove(workload.cluster_queue, workload.usage)
        if self.pools is not None:
            self.pools.remove(workload.key)

    def add(self, workload: AdmittedWorkload) -> None:
        self.tree.add(workload.cluster_queue, workload.usage)
        if self.pools is not None:
            self.pools.add(workload.key)

    def restore(self, victims: list[Victim]) -> None:
        for victim in victims:
            self.add(victim.workload)

    def fits(self, job: Preemptor, borrowing: bool) -> bool:
        """``workloadFits``: every (flavor, resource) of the job within what its queue has available,
        and, for a placed job, enough whole node pools free."""
        for fr, value in job.usage.items():
            if not borrowing and job.queue.borrowing_with(fr, value):
                return False
            if value > available(job.queue, fr):
                return False
        return not job.placed or self.pools is None or self.pools.fits()

    def fill_back(self, job: Preemptor, victims: list[Victim], borrowing: bool) -> list[Victim]:
        """``fillBackWorkloads``: put back, last but one first, each victim the job does not need gone."""
        for i in range(len(victims) - 2, -1, -1):
            self.add(victims[i].workload)
            if self.fits(job, borrowing):
                victims[i] = victims[-1]
                victims.pop()
            else:
                self.remove(victims[i].workload)
        return victims


class Lazy:
    """Per queue, its candidates, made into an iterator only when first asked for."""

    def __init__(self) -> None:
        self.sources: dict[str, Callable[[], Peekable[AdmittedWorkload]]] = {}
        self._made: dict[str, Peekable[AdmittedWorkload]] = {}

    def get(self, queue: str) -> Peekable[AdmittedWorkload] | None:
        made = self._made.get(queue)
        if made is None:
            source = self.sources.get(queue)
            if source is None:
                return None
            made = self._made[queue] = source()
        return made

    def any(self) -> bool:
        return any(self.get(queue) for queue in self.sources)


def up_to(queue: Node, lca: Node | None) -> Iterator[Node]:
    """The cohorts above ``queue``, up to and not including ``lca`` (all of them when ``None``)."""
    for node in queue.ancestors():
        if node is lca:
            return
        yield node
