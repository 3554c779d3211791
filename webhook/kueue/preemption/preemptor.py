"""Kueue's preemptor (``pkg/scheduler/preemption/preemption.go``): which Workloads it would
evict for one job, by the policy the configuration sets, and the flavor assigner's oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from webhook.kueue.fair_sharing import FairSharing
from webhook.kueue.flavorassigner import NO_CANDIDATES, PREEMPT_MODE, RECLAIM
from webhook.kueue.hierarchy import Tree
from webhook.kueue.preemption.candidates import QueueIndex
from webhook.kueue.preemption.classical import classical_targets
from webhook.kueue.preemption.common import Preemptor, Search, Victim
from webhook.kueue.preemption.fairsharing import fair_sharing_targets
from webhook.kueue.resource_node import Node, lowest_fitting_height
from webhook.kueue.resources import FlavorResource


class Simulation(Search):
    """The what-if search with the configured policy: classical, or fair sharing when it is on."""

    def __init__(
        self,
        tree: Tree,
        candidates: Mapping[str, QueueIndex],
        now: datetime,
        fair_sharing: FairSharing,
        budget: int = 20_000,
    ) -> None:
        super().__init__(tree, candidates, now, budget)
        self.fair_sharing = fair_sharing
        #: answers of ``targets`` within one simulation: the flavor assigner's oracle and the final
        #: ``GetTargets`` ask the same question when the job uses one (flavor, resource)
        self.answers: dict[object, list[Victim]] = {}

    def reset(self) -> None:
        """Forget the last simulation's budget and answers (the tree itself is always restored)."""
        super().reset()
        self.answers.clear()

    def targets(self, job: Preemptor) -> list[Victim]:
        """``getTargets``: the victims, or ``[]`` when no preemption Kueue would make lets the job fit."""
        question = (job.queue.name, job.priority, job.created, frozenset(job.usage.items()), job.need, job.placed)
        answer = self.answers.get(question)
        if answer is None:
            if self.fair_sharing.enabled:
                answer = fair_sharing_targets(self, job, self.fair_sharing.strategies)
            else:
                answer = classical_targets(self, job)
            self.answers[question] = answer
        return list(answer)


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
