"""Classical preemption (``pkg/scheduler/preemption/classical``).

Candidates come only from where Kueue looks: the job's own ClusterQueue
(``withinClusterQueue``), and, for ``reclaimWithinCohort``, queues of its cohort tree that
use more than their quota in a needed (flavor, resource). They are removed in order until
the job fits (with or without borrowing, in the order Kueue tries those), each checked
still valid after the removals before it; then every removed one the job does not need
is put back. Hierarchical cohorts: a queue whose subtree has room for the job reclaims
from the rest of the tree (``InCohortReclamation``); otherwise only lower priority, and
with ``borrowWithinCohort`` only below its threshold.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from webhook.kueue.preemption.candidates import eligible, may_have, merged
from webhook.kueue.preemption.common import (
    HIERARCHICAL,
    REASON,
    WHILE_BORROWING,
    WITHIN_CQ,
    WITHOUT_BORROWING,
    Preemptor,
    Search,
    Victim,
    up_to,
)
from webhook.kueue.resource_node import Node, fits_in_quota
from webhook.kueue.workload import AdmittedWorkload


def classical_targets(search: Search, job: Preemptor) -> list[Victim]:
    """``classical.GetTargets``: the victims, or ``[]`` when none let the job fit."""
    candidates = _Candidates(search, job)
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
            search.remove(workload)
            victims.append(Victim(workload, reason))
            if search.fits(job, borrowing):
                victims = search.fill_back(job, victims, borrowing)
                search.restore(victims)
                return victims
        search.restore(victims)
    return []


def _under_nominal(job: Preemptor) -> bool:
    """``queueUnderNominalInResourcesNeedingPreemption``."""
    return all(job.queue.quota(fr).nominal > job.queue.usage.get(fr, Decimal(0)) for fr in job.need)


#: where classical candidates come from: a queue, the subtree root it was found under, and
#: whether the preemptor has hierarchical advantage over it
_Source = tuple[Node, Node | None, bool]


class _Candidates:
    """``candidateIterator``: classical candidates in Kueue's order, each with its variant, read lazily."""

    def __init__(self, sim: Search, job: Preemptor) -> None:
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
        index = self.sim.candidates.get(source[0].name)
        return eligible(index, self._policy(source), job.priority, job.created, job.need, evicted)

    def _policy(self, source: _Source) -> str:
        own = source[0] is self.job.queue
        return self.policy.within_cluster_queue if own else self.policy.reclaim_within_cohort

    def _any(self, sources: list[_Source]) -> bool:
        candidates = self.sim.candidates
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
        now = self.sim.now
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
                if any(node.within_nominal(need) for node in up_to(queue, source[1])):
                    continue
            yield workload, REASON[variant]
