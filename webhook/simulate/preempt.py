"""The Workloads Kueue's preemptor would evict for one job, and why.

It restates kubernetes-sigs/kueue ``pkg/scheduler/preemption`` (``preemption.go``,
``classical/``, ``fairsharing/``, ``common/``) over the ``tree``:

- **candidates** come only from where Kueue looks: the job's own ClusterQueue
  (``withinClusterQueue``), and, for ``reclaimWithinCohort``, queues of its cohort tree
  that use more than their quota in a needed (flavor, resource): the per-queue index of
  admitted Workloads, never all of them. A candidate must use a (flavor, resource) that
  needs preemption and satisfy the policy (``SatisfiesPreemptionPolicy``).
- **order** (``CandidatesOrdering``): already evicted first, other queues before the
  job's own, lower priority first, most recently admitted first, then UID.
- **classical**: candidates are removed in order until the job fits (with or without
  borrowing, in the order Kueue tries those), each checked still valid after the
  removals before it; then every removed one the job does not need is put back, last
  but one first (``fillBackWorkloads``). Hierarchical cohorts: a queue whose subtree has
  room for the job reclaims from the rest of the tree (``InCohortReclamation``);
  otherwise only lower priority, and with ``borrowWithinCohort`` only below its threshold.
- **fair sharing**: target queues picked from the root by the highest dominant resource
  share, per the configured strategies in order, compared at the two nodes just below the
  queues' common ancestor; the same put-back at the end.

Everything runs on the tree with usage removed and added back, so nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import partial
from itertools import chain

from webhook.kueue.fair_sharing import DRS, NEGATIVE_DRS, compare_drs, dominant_resource_share
from webhook.kueue.flavorassigner import NO_CANDIDATES, PREEMPT_MODE, RECLAIM
from webhook.kueue.hierarchy import Tree
from webhook.kueue.resource_node import Node, available, fits_in_quota, lowest_fitting_height
from webhook.kueue.resources import FlavorResource
from webhook.kueue.workload import AdmittedWorkload
from webhook.simulate.candidates import Peekable, QueueIndex, eligible, may_have, merged
from webhook.simulate.placement import PoolTracker
from webhook.simulate.state import State

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# preemption variants (``classical/hierarchical_preemption.go``)
NEVER, WITHIN_CQ, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING = range(5)
_REASON = {
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


@dataclass(frozen=True, slots=True)
class Oracle:
    """The flavor assigner's preemption oracle for one job: Kueue's preemptor, run on the
    simulation and put back (``SimulatePreemption``)."""

    sim: Simulation
    priority: int
    created: datetime

    def simulate_preemption(self, queue: Node, fr: FlavorResource, quantity: Decimal) -> tuple[int, int]:
        job = Preemptor(queue, self.priority, self.created, {fr: quantity}, frozenset({fr}))
        victims = self.sim.targets(job)
        if not victims:
            return NO_CANDIDATES, 0
        for victim in victims:
            self.sim.remove(victim.workload)
        after, _ = lowest_fitting_height(queue, fr, quantity)
        self.sim.restore(victims)
        own = any(v.workload.cluster_queue == queue.name for v in victims)
        return (PREEMPT_MODE if own else RECLAIM), after


def ordering_key(queue: str, now: datetime) -> Callable[[AdmittedWorkload], tuple[int, int, int, float, str]]:
    """``CandidatesOrdering`` as a sort key (without admission fair sharing)."""

    def key(w: AdmittedWorkload) -> tuple[int, int, int, float, str]:
        reserved = (w.reserved or now).timestamp()
        return (0 if w.evicted else 1, 1 if w.cluster_queue == queue else 0, w.priority, -reserved, w.uid)

    return key


class Simulation:
    """The tree with Workloads taken out and put back (``Snapshot.RemoveWorkload`` / ``AddWorkload``)."""

    def __init__(self, state: State, tree: Tree, budget: int = 20_000) -> None:
        self.state = state
        self.tree = tree
        #: candidates one answer may examine; past it the search stops and says so (``exhausted``)
        self.budget = budget
        self.examined = 0
        #: answers of ``targets`` within one simulation: the flavor assigner's oracle and the final
        #: ``GetTargets`` ask the same question when the job uses one (flavor, resource)
        self.answers: dict[object, list[Victim]] = {}
        #: the job's static node pools, followed through removals while a placed job's victims are sought
        self.pools: PoolTracker | None = None

    def reset(self) -> None:
        """Forget the last simulation's budget and answers (the tree itself is always restored)."""
        self.examined = 0
        self.answers.clear()

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

    def targets(self, job: Preemptor) -> list[Victim]:
        """``getTargets``: the victims, or ``[]`` when no preemption Kueue would make lets the job fit."""
        question = (job.queue.name, job.priority, job.created, frozenset(job.usage.items()), job.need, job.placed)
        answer = self.answers.get(question)
        if answer is None:
            answer = self._fair(job) if self.state.fair_sharing.enabled else self._classical(job)
            self.answers[question] = answer
        return list(answer)

    # ------------------------------------------------------------ classical

    def _classical(self, job: Preemptor) -> list[Victim]:
        candidates = _Candidates(self, job)
        policy = job.queue.info.preemption if job.queue.info is not None else None
        forbidden = policy is None or policy.borrow_within_cohort == "Never"
        if candidates.none_from_others or (forbidden and not _under_nominal(job)):
            attempts = [True]
        elif forbidden and candidates.none_hierarchical:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrowing in attempts:
            victims: list[Victim] = []
            for workload, reason in candidates.valid(borrowing):
                self.remove(workload)
                victims.append(Victim(workload, reason))
                if self.fits(job, borrowing):
                    victims = self.fill_back(job, victims, borrowing)
                    self.restore(victims)
                    return victims
            self.restore(victims)
        return []

    # ------------------------------------------------------------ fair sharing

    def _fair(self, job: Preemptor) -> list[Victim]:
        candidates = self._fair_candidates(job)
        if not candidates.any():
            return []
        self.tree.add(job.queue.name, job.usage)  # SimulateUsageAddition
        strategies = self.state.fair_sharing.strategies or ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
        fits, victims, retry = self._first_strategy(job, candidates, strategies[0])
        if not fits and len(strategies) > 1:
            fits = self._second_strategy(job, retry, victims)
        self.tree.remove(job.queue.name, job.usage)
        if not fits:
            self.restore(victims)
            return []
        victims = self.fill_back(job, victims, True)
        self.restore(victims)
        return victims

    def _fair_candidates(self, job: Preemptor) -> _Lazy:
        """``findCandidates``: the job's queue, and the borrowing queues of its cohort tree, each
        queue's candidates in order, read only when the ordering reaches the queue."""
        info = job.queue.info
        assert info is not None
        sources: list[tuple[Node, str]] = []
        if info.preemption.within_cluster_queue != "Never":
            sources.append((job.queue, info.preemption.within_cluster_queue))
        if job.queue.parent is not None and info.preemption.reclaim_within_cohort != "Never":
            for queue in _subtree_queues(job.queue.parent.root()):
                if queue is not job.queue and any(queue.borrowing_with(fr, Decimal(0)) for fr in job.need):
                    sources.append((queue, info.preemption.reclaim_within_cohort))
        found = _Lazy()
        for queue, policy in sources:
            index = self.state.candidates.get(queue.name)
            if may_have(index, policy, job.priority):
                found.sources[queue.name] = partial(_queue_candidates, index, policy, job)
        return found

    def _fits_fair(self, job: Preemptor) -> bool:
        """``workloadFitsForFairSharing``: the job's own usage (added for the shares) taken out for the check."""
        self.tree.remove(job.queue.name, job.usage)
        try:
            return self.fits(job, True)
        finally:
            self.tree.add(job.queue.name, job.usage)

    def _first_strategy(
        self, job: Preemptor, candidates: _Lazy, strategy: str
    ) -> tuple[bool, list[Victim], list[AdmittedWorkload]]:
        ordering = _TargetOrdering(self, job, candidates)
        victims: list[Victim] = []
        retry: list[AdmittedWorkload] = []
        within_nominal = not any(job.queue.borrowing_with(fr, Decimal(0)) for fr in job.need)
        for target in ordering:
            if target is job.queue or within_nominal:
                workload = ordering.pop(target)
                self.remove(workload)
                victims.append(Victim(workload, IN_CLUSTER_QUEUE if target is job.queue else IN_COHORT_RECLAMATION))
                if self._fits_fair(job):
                    return True, victims, []
                continue
            preemptor_share, target_old = ordering.shares(target)
            if preemptor_share.weighted.is_infinite() and not target_old.weighted.is_infinite():
                while ordering.has(target):
                    retry.append(ordering.pop(target))
                continue
            while ordering.has(target):
                workload = ordering.pop(target)
                target_new = ordering.share_after_removal(target, workload)
                if _passes(strategy, preemptor_share, target_old, target_new):
                    self.remove(workload)
                    victims.append(Victim(workload, IN_COHORT_FAIR_SHARING))
                    if self._fits_fair(job):
                        return True, victims, []
                    break
                retry.append(workload)
        return False, victims, retry

    def _second_strategy(self, job: Preemptor, retry: list[AdmittedWorkload], victims: list[Victim]) -> bool:
        by_queue: dict[str, list[AdmittedWorkload]] = {}
        for workload in retry:
            by_queue.setdefault(workload.cluster_queue, []).append(workload)
        lazy = _Lazy()
        lazy.sources = {q: partial(Peekable, iter(ws)) for q, ws in by_queue.items()}
        ordering = _TargetOrdering(self, job, lazy)
        for target in ordering:
            preemptor_share, target_old = ordering.shares(target)
            workload = ordering.pop(target)
            if compare_drs(preemptor_share, target_old) < 0:  # LessThanInitialShare
                self.remove(workload)
                victims.append(Victim(workload, IN_COHORT_FAIR_SHARING))
                if self._fits_fair(job):
                    return True
            ordering.drop(target)
        return False


def _passes(strategy: str, preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    if strategy == "LessThanInitialShare":
        return compare_drs(preemptor_new, target_old) < 0
    return compare_drs(preemptor_new, target_new) <= 0  # LessThanOrEqualToFinalShare


def _under_nominal(job: Preemptor) -> bool:
    """``queueUnderNominalInResourcesNeedingPreemption``."""
    return all(job.queue.quota(fr).nominal > job.queue.usage.get(fr, Decimal(0)) for fr in job.need)


def _subtree_queues(cohort: Node) -> Iterator[Node]:
    yield from cohort.child_queues
    for child in cohort.child_cohorts:
        yield from _subtree_queues(child)


#: where classical candidates come from: a queue, the subtree root it was found under, and
#: whether the preemptor has hierarchical advantage over it
_Source = tuple[Node, Node | None, bool]


class _Candidates:
    """``candidateIterator``: classical candidates in Kueue's order, each with its variant, read lazily."""

    def __init__(self, sim: Simulation, job: Preemptor) -> None:
        self.sim = sim
        self.job = job
        info = job.queue.info
        assert info is not None
        self.policy = info.preemption
        self.same: list[_Source] = []
        if self.policy.within_cluster_queue != "Never":
            self.same = [(job.queue, None, False)]
        self.hierarchy: list[_Source] = []
        self.lower: list[_Source] = []
        if job.queue.parent is not None and self.policy.reclaim_within_cohort != "Never":
            self._hierarchical()
        self.none_from_others = not self._any(self.hierarchy) and not self._any(self.lower)
        self.none_hierarchical = not self._any(self.hierarchy)

    def _eligible(self, source: _Source, evicted: bool) -> Iterator[AdmittedWorkload]:
        job = self.job
        index = self.sim.state.candidates.get(source[0].name)
        return eligible(index, self._policy(source), job.priority, job.created, job.need, evicted)

    def _policy(self, source: _Source) -> str:
        own = source[0] is self.job.queue
        return self.policy.within_cluster_queue if own else self.policy.reclaim_within_cohort

    def _any(self, sources: list[_Source]) -> bool:
        candidates = self.sim.state.candidates
        return any(
            next(self._eligible(s, evicted), None) is not None
            for s in sources
            if may_have(candidates.get(s[0].name), self._policy(s), self.job.priority)
            for evicted in (True, False)
        )

    def _variant(self, workload: AdmittedWorkload, source: _Source) -> int:
        """``classifyPreemptionVariant`` for a Workload that uses a needed resource and passes the policy."""
        queue, _, advantage = source
        if queue is self.job.queue:
            return WITHIN_CQ
        if advantage:
            return HIERARCHICAL
        if self.policy.borrow_within_cohort == "Never":
            return WITHOUT_BORROWING
        threshold = self.policy.max_priority_threshold
        if workload.priority >= self.job.priority or (threshold is not None and workload.priority > threshold):
            return WITHOUT_BORROWING
        return WHILE_BORROWING

    def _hierarchical(self) -> None:
        """``collectCandidatesForHierarchicalReclaim``: subtree by subtree up from the job's queue."""
        advantage, remaining = fits_in_quota(self.job.queue, self.job.usage)
        previous: Node | None = None
        for root in self.job.queue.ancestors():
            self._in_subtree(root, root, previous, advantage, self.hierarchy if advantage else self.lower)
            fits, remaining = fits_in_quota(root, remaining)
            advantage = advantage or fits
            previous = root

    def _in_subtree(self, cohort: Node, root: Node, skip: Node | None, advantage: bool, out: list[_Source]) -> None:
        need = self.job.need
        for child in cohort.child_cohorts:
            if child is skip or child.within_nominal(need):
                continue
            self._in_subtree(child, root, skip, advantage, out)
        for queue in cohort.child_queues:
            if queue is not self.job.queue and not queue.within_nominal(need):
                out.append((queue, root, advantage))

    def _ordered(self) -> Iterator[tuple[AdmittedWorkload, _Source]]:
        """Evicted first (hierarchy, lower priority, own queue), then the rest in the same groups."""
        now = self.sim.state.now
        for evicted in (True, False):
            for sources in (self.hierarchy, self.lower, self.same):
                by_queue = {s[0].name: s for s in sources}
                for workload in merged((self._eligible(s, evicted) for s in sources), now):
                    yield workload, by_queue[workload.cluster_queue]

    def valid(self, borrowing: bool) -> Iterator[tuple[AdmittedWorkload, str]]:
        """``Next``: each candidate still valid given the removals before it, with its reason."""
        need = self.job.need
        for workload, source in self._ordered():
            if not self.sim.examine():
                return
            variant = self._variant(workload, source)
            if workload.cluster_queue != self.job.queue.name:
                if borrowing and variant == WITHOUT_BORROWING:
                    continue
                queue = self.sim.tree.queues[workload.cluster_queue]
                if queue.within_nominal(need):
                    continue
                if any(node.within_nominal(need) for node in _up_to(queue, source[1])):
                    continue
            yield workload, _REASON[variant]


def _queue_candidates(index: QueueIndex | None, policy: str, job: Preemptor) -> Peekable[AdmittedWorkload]:
    evicted_first = (eligible(index, policy, job.priority, job.created, job.need, e) for e in (True, False))
    return Peekable(chain.from_iterable(evicted_first))


class _Lazy:
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


def _up_to(queue: Node, lca: Node | None) -> Iterator[Node]:
    for node in queue.ancestors():
        if node is lca:
            return
        yield node


class _TargetOrdering:
    """``TargetClusterQueueOrdering``: from the root, the child with the highest share, down to a queue."""

    def __init__(self, sim: Simulation, job: Preemptor, by_queue: _Lazy) -> None:
        self.sim = sim
        self.job = job
        self.ancestors = set(map(id, job.queue.ancestors()))
        self.by_queue = by_queue
        self.pruned_queues: set[int] = set()
        self.pruned_cohorts: set[int] = set()
        self._key = ordering_key(job.queue.name, sim.state.now)
        self._keys: dict[str, tuple[int, int, int, float, str]] = {}

    def has(self, queue: Node) -> bool:
        return not self.sim.exhausted and bool(self.by_queue.get(queue.name))

    def pop(self, queue: Node) -> AdmittedWorkload:
        found = self.by_queue.get(queue.name)
        assert found is not None
        self.sim.examine()
        return found.pop()

    def _order(self, workload: AdmittedWorkload) -> tuple[int, int, int, float, str]:
        key = self._keys.get(workload.key)
        if key is None:
            key = self._keys[workload.key] = self._key(workload)
        return key

    def _head(self, queue: Node) -> AdmittedWorkload:
        found = self.by_queue.get(queue.name)
        assert found is not None
        return found.peek()

    def drop(self, queue: Node) -> None:
        self.pruned_queues.add(id(queue))

    def __iter__(self) -> Iterator[Node]:
        own = self.job.queue
        if own.parent is None:
            while id(own) not in self.pruned_queues and self.has(own):
                yield own
            return
        root = own.parent.root()
        while id(root) not in self.pruned_cohorts and not self.sim.exhausted:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: Node) -> Node | None:
        best_queue: Node | None = None
        best_queue_drs = NEGATIVE_DRS
        for queue in cohort.child_queues:
            if id(queue) in self.pruned_queues:
                continue
            if not self.has(queue):
                self.pruned_queues.add(id(queue))
                continue
            drs = dominant_resource_share(queue)
            compared = compare_drs(drs, best_queue_drs)
            if not drs.borrowing and queue is not self.job.queue:
                self.pruned_queues.add(id(queue))
            elif compared == 0 and best_queue is not None:
                if self._order(self._head(queue)) < self._order(self._head(best_queue)):
                    best_queue = queue
            elif compared == 1:
                best_queue, best_queue_drs = queue, drs
        best_cohort: Node | None = None
        best_cohort_drs = NEGATIVE_DRS
        for child in cohort.child_cohorts:
            if id(child) in self.pruned_cohorts:
                continue
            drs = dominant_resource_share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif compare_drs(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_queue is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if best_cohort is not None and compare_drs(best_cohort_drs, best_queue_drs) >= 0:
            return self._next(best_cohort)
        return best_queue

    def _almost_lca(self, queue: Node, lca: Node) -> Node:
        below: Node = queue
        for node in queue.ancestors():
            if node is lca:
                return below
            below = node
        return below

    def _lca(self, target: Node) -> Node:
        for node in target.ancestors():
            if id(node) in self.ancestors:
                return node
        return target.root()

    def shares(self, target: Node) -> tuple[DRS, DRS]:
        """``ComputeShares``: the preemptor's and the target's share at their almost-common ancestors."""
        lca = self._lca(target)
        mine = dominant_resource_share(self._almost_lca(self.job.queue, lca))
        return mine, dominant_resource_share(self._almost_lca(target, lca))

    def share_after_removal(self, target: Node, workload: AdmittedWorkload) -> DRS:
        self.sim.remove(workload)
        try:
            return dominant_resource_share(self._almost_lca(target, self._lca(target)))
        finally:
            self.sim.add(workload)
