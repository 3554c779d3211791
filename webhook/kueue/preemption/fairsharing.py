"""Fair-sharing preemption (``pkg/scheduler/preemption/fairsharing``).

Target queues are picked from the root by the highest dominant resource share, per the
configured strategies in order, compared at the two nodes just below the queues' common
ancestor (``TargetClusterQueueOrdering``, ``ComputeShares``); the same put-back of
victims the job does not need at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from functools import partial
from itertools import chain

from webhook.kueue.fair_sharing import DEFAULT_STRATEGIES, DRS, NEGATIVE_DRS, compare_drs, dominant_resource_share
from webhook.kueue.hierarchy import subtree_queues
from webhook.kueue.preemption.candidates import Peekable, QueueIndex, eligible, may_have
from webhook.kueue.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    Lazy,
    Preemptor,
    Search,
    Victim,
    ordering_key,
)
from webhook.kueue.resource_node import Node
from webhook.kueue.workload import AdmittedWorkload


def fair_sharing_targets(search: Search, job: Preemptor, strategies: tuple[str, ...]) -> list[Victim]:
    """``fairsharing``'s ``GetTargets``: the victims, or ``[]`` when none let the job fit."""
    return _FairSharing(search, strategies).targets(job)


class _FairSharing:
    def __init__(self, search: Search, strategies: tuple[str, ...]) -> None:
        self.search = search
        self.tree = search.tree
        self.strategies = strategies

    def targets(self, job: Preemptor) -> list[Victim]:
        candidates = self._fair_candidates(job)
        if not candidates.any():
            return []
        self.tree.add(job.queue.name, job.usage)  # SimulateUsageAddition
        strategies = self.strategies or DEFAULT_STRATEGIES
        fits, victims, retry = self._first_strategy(job, candidates, strategies[0])
        if not fits and len(strategies) > 1:
            fits = self._second_strategy(job, retry, victims)
        self.tree.remove(job.queue.name, job.usage)
        if not fits:
            self.search.restore(victims)
            return []
        victims = self.search.fill_back(job, victims, True)
        self.search.restore(victims)
        return victims

    def _fair_candidates(self, job: Preemptor) -> Lazy:
        """``findCandidates``: the job's queue, and the borrowing queues of its cohort tree, each
        queue's candidates in order, read only when the ordering reaches the queue."""
        info = job.queue.info
        assert info is not None
        sources: list[tuple[Node, str]] = []
        if info.preemption.within_cluster_queue != "Never":
            sources.append((job.queue, info.preemption.within_cluster_queue))
        if job.queue.parent is not None and info.preemption.reclaim_within_cohort != "Never":
            for queue in subtree_queues(job.queue.parent.root()):
                if queue is not job.queue and any(queue.borrowing_with(fr, Decimal(0)) for fr in job.need):
                    sources.append((queue, info.preemption.reclaim_within_cohort))
        found = Lazy()
        for queue, policy in sources:
            index = self.search.candidates.get(queue.name)
            if may_have(index, policy, job.priority):
                found.sources[queue.name] = partial(_queue_candidates, index, policy, job)
        return found

    def _fits_fair(self, job: Preemptor) -> bool:
        """``workloadFitsForFairSharing``: the job's own usage (added for the shares) taken out for the check."""
        self.tree.remove(job.queue.name, job.usage)
        try:
            return self.search.fits(job, True)
        finally:
            self.tree.add(job.queue.name, job.usage)

    def _first_strategy(
        self, job: Preemptor, candidates: Lazy, strategy: str
    ) -> tuple[bool, list[Victim], list[AdmittedWorkload]]:
        ordering = _TargetOrdering(self.search, job, candidates)
        victims: list[Victim] = []
        retry: list[AdmittedWorkload] = []
        within_nominal = not any(job.queue.borrowing_with(fr, Decimal(0)) for fr in job.need)
        for target in ordering:
            if target is job.queue or within_nominal:
                workload = ordering.pop(target)
                self.search.remove(workload)
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
                    self.search.remove(workload)
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
        lazy = Lazy()
        lazy.sources = {q: partial(Peekable, iter(ws)) for q, ws in by_queue.items()}
        ordering = _TargetOrdering(self.search, job, lazy)
        for target in ordering:
            preemptor_share, target_old = ordering.shares(target)
            workload = ordering.pop(target)
            if compare_drs(preemptor_share, target_old) < 0:  # LessThanInitialShare
                self.search.remove(workload)
                victims.append(Victim(workload, IN_COHORT_FAIR_SHARING))
                if self._fits_fair(job):
                    return True
            ordering.drop(target)
        return False


def _passes(strategy: str, preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    if strategy == "LessThanInitialShare":
        return compare_drs(preemptor_new, target_old) < 0
    return compare_drs(preemptor_new, target_new) <= 0  # LessThanOrEqualToFinalShare


def _queue_candidates(index: QueueIndex | None, policy: str, job: Preemptor) -> Peekable[AdmittedWorkload]:
    evicted_first = (eligible(index, policy, job.priority, job.created, job.need, e) for e in (True, False))
    return Peekable(chain.from_iterable(evicted_first))


class _TargetOrdering:
    """``TargetClusterQueueOrdering``: from the root, the child with the highest share, down to a queue."""

    def __init__(self, sim: Search, job: Preemptor, by_queue: Lazy) -> None:
        self.sim = sim
        self.job = job
        self.ancestors = set(map(id, job.queue.ancestors()))
        self.by_queue = by_queue
        self.pruned_queues: set[int] = set()
        self.pruned_cohorts: set[int] = set()
        self._key = ordering_key(job.queue.name, sim.now)
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
