"""One scheduling attempt of Kueue's scheduler for one job, against a frozen state.

The order is Kueue's: workload-wide blockers first, in KEP-10852's precedence
(``Deactivated``, ``Misconfigured``, ``Suspended``); then the flavor assignment with the
current usage (``assign``); in static mode, whether enough whole node pools are free
(``placement``); then, when it needs preemption, the victims Kueue's preemptor picks
(``preempt``), which must free pools too; last the job's place among the pending
Workloads of its ClusterQueue. Where the state lacks what decides the answer the outcome
is ``unknown``, naming what is missing: a guess that promises a start Kueue would not
give, or names a victim Kueue would not touch, is the worst answer this can give.

``Simulator`` builds the tree once per state and answers any number of jobs; each answer
puts back every usage it moved, so the state is never changed.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal, localcontext

from webhook.kube.quantity import CONTEXT
from webhook.kube.scheduling import describe_selector, selector_matches
from webhook.kueue.amounts import format_amount
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortMembers
from webhook.kueue.flavorassigner import (
    EXCEEDS_MAX_QUOTA,
    FIT,
    NO_MATCHING_FLAVOR,
    NOFIT,
    PREEMPT,
    Assignment,
    FlavorAssigner,
)
from webhook.kueue.podset import PodSetDemand
from webhook.kueue.potential import ResourceNodes
from webhook.kueue.preemption.common import Preemptor, Victim
from webhook.kueue.preemption.preemptor import Oracle
from webhook.kueue.resource_node import Node, available
from webhook.kueue.resources import FlavorResource
from webhook.kueue.workload import PendingWorkload
from webhook.objects.workloadschema import exceeded
from webhook.quota.feasibility import Exceeded, Feasibility, FeasibilityCheck
from webhook.simulate.placement import PoolNeed, PoolTracker, pool_needs
from webhook.simulate.result import (
    ADMIT,
    LISTED,
    NEVER,
    UNKNOWN,
    WAIT,
    Numbers,
    PodSetResult,
    Pools,
    Position,
    PreemptionResult,
    Result,
    plural,
)
from webhook.simulate.result import PREEMPT as PREEMPT_OUTCOME
from webhook.simulate.state import (
    COHORTS,
    FLAVORS,
    LOCAL_QUEUES,
    TPU,
    WORKLOADS,
    State,
    simulation_of,
    tree_of,
)

ZERO = Decimal(0)
#: a Workload ahead of the job that fits now and goes first (``Simulator._goes_first``)
_GOES = "goes"
#: Workloads ahead of the job admitted first whose usage is followed; past it the answer is unknown
#: rather than a search as long as the queue (those that do not go cost nothing per Workload)
FIRST_FOLLOWED = 256
#: the largest holders a wait names, in its queue and in its cohort tree
HOLDERS = 3


class Simulator:
    """Answers "what would Kueue do with this job now" for jobs against one state."""

    def __init__(
        self, state: State, tpu: str = TPU, budget: int = 20_000, priority_names: Mapping[int, str] | None = None
    ) -> None:
        self.state = state
        self.tpu = tpu
        #: priority -> its name for people (a tier: ``guaranteed``, ``best-effort``), for the webhook line
        self.priority_names = dict(priority_names or {})
        with localcontext(CONTEXT):
            self.tree = tree_of(state)
        self.sim = simulation_of(state, self.tree, budget)
        #: the largest holders per (scope, flavor, resource), worked out once per state and usage
        #: (``rebase`` drops them)
        self.ranked: dict[tuple[str, str, str], tuple[tuple[str, Decimal], ...]] = {}
        self._feasibility: FeasibilityCheck | None = None

    @property
    def feasibility(self) -> FeasibilityCheck:
        """The capacity rules' question over this state: could any choice of flavors ever hold a job
        (usage zero). The state's own when it has one (a snapshot's queue part, memoized there);
        else made the first time a job does not fit now, with nothing memoized in it."""
        if self._feasibility is None:
            self._feasibility = self.state.feasibility or _feasibility_of(self.state)
        return self._feasibility

    def rebase(self, state: State) -> None:
        """Answer for ``state`` from now on, its usage already moved into ``tree`` by the caller (a
        live snapshot's successor takes the tree over): what was worked out from the old usage goes."""
        self.state = state
        self._feasibility = None
        self.sim = simulation_of(state, self.tree, self.sim.budget)
        self.ranked.clear()

    def simulate(self, job: PendingWorkload, kind: str = "Workload", source: str = "") -> Result:
        self.sim.reset()
        with localcontext(CONTEXT):
            result = self._simulate(job)
        if self.sim.exhausted:
            message = f"the preemption search passed {self.sim.budget} candidates and was stopped"
            result = Result(UNKNOWN, "", result.cluster_queue, message, result.podsets, (), result.position)
        namespace, _, name = job.key.rpartition("/")
        notes = tuple(self.tree.notes[:LISTED]) + tuple(
            f"cohort cycle: {' → '.join((*c, c[0]))}" for c in self.tree.cycles[:LISTED]
        )
        return dataclasses.replace(
            result,
            source=source,
            kind=kind,
            namespace=namespace,
            name=name,
            notes=notes,
            chips=self.tpu,
            priority_names=self.priority_names,
        )

    def _assigner(self, node: Node, priority: int, created: datetime) -> FlavorAssigner:
        """Kueue's flavor assigner for a job of ``priority`` in ``node``, its preemptor the simulation's."""
        state = self.state
        return FlavorAssigner(node, state.flavors, state.fair_sharing.enabled, Oracle(self.sim, priority, created))

    def _simulate(self, job: PendingWorkload) -> Result:
        state = self.state
        if not job.active:
            return Result(NEVER, "Deactivated", "", "the Workload is deactivated (spec.active: false)")
        if not job.podsets:
            return Result(NEVER, "Misconfigured", "", "the Workload has no podSets")
        beyond = [limit.words() for limit in exceeded([(p.name, p.count) for p in job.podsets])]
        if beyond:  # the API server refuses such a Workload: Kueue cannot create it
            return Result(NEVER, "Misconfigured", "", "beyond Kueue's Workload schema: " + "; ".join(beyond))
        if LOCAL_QUEUES in state.missing:
            return Result(UNKNOWN, "", "", "LocalQueues are not in the state: its ClusterQueue is unknown")
        local = state.local_queues.get((job.namespace, job.queue_name))
        if local is None:
            return Result(NEVER, "Misconfigured", "", f"LocalQueue {job.namespace}/{job.queue_name} does not exist")
        queue = state.cluster_queues.get(local.cluster_queue)
        node = self.tree.queues.get(local.cluster_queue)
        if queue is None or node is None:
            return Result(
                NEVER, "Misconfigured", local.cluster_queue, f"ClusterQueue {local.cluster_queue} does not exist"
            )
        selector = self._selector(queue, job.namespace)
        if selector is not None:
            return Result(NEVER, "Misconfigured", queue.name, selector)
        if node.cyclic:
            message = f"ClusterQueue {queue.name} is inactive: its cohort tree has a cycle"
            return Result(NEVER, "Misconfigured", queue.name, message)
        holding = next((w for w in state.admitted_by_queue.get(queue.name, ()) if w.key == job.key), None)
        if holding is not None:
            return Result(ADMIT, "", queue.name, f"Workload {job.key} already holds quota in ClusterQueue {queue.name}")
        if FLAVORS in state.missing:
            return Result(
                UNKNOWN,
                "",
                queue.name,
                "ResourceFlavors are not in the state: which flavors the job can use is unknown",
            )
        assigner = self._assigner(node, job.priority, job.created)
        unmatched = _unmatched(assigner, job.podsets)  # KEP-10852: NoMatchingFlavor comes before Suspended
        if unmatched is not None:
            return Result(NEVER, NO_MATCHING_FLAVOR, queue.name, unmatched)
        for kind, policy in (
            ("ClusterQueue " + queue.name, queue.stop_policy),
            ("LocalQueue " + local.name, local.stop_policy),
        ):
            if policy != "None":
                return Result(WAIT, "Suspended", queue.name, f"{kind} is stopped (stopPolicy {policy})")
        if COHORTS in state.missing and queue.cohort:
            message = f"Cohorts are not in the state: what cohort {queue.cohort} could lend is unknown"
            return Result(UNKNOWN, "", queue.name, message)
        assignment = assigner.assign(job.podsets)
        if assignment.mode == NOFIT:
            # ``never`` is the capacity rules' answer (could any choice of flavors ever hold the job),
            # not the NoFit of Kueue's first choice at the current usage: Kueue's assigner takes the
            # first flavor that fits each podSet in turn, so usage decides which choice it tries
            feasible = self.feasibility.assign(queue.name, job.podsets)
            kueue_never = assignment.reason in (EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR)
            if feasible.status == "nofit":
                reason = assignment.reason if kueue_never else EXCEEDS_MAX_QUOTA
                why = _why_not(assignment) if kueue_never else _infeasible(feasible)
                return Result(NEVER, reason, queue.name, why, self._podsets(assignment, node, [], False))
            if kueue_never and feasible.status == "unknown":
                return Result(UNKNOWN, "", queue.name, feasible.doubt, self._podsets(assignment, node, [], False))
        if WORKLOADS in state.missing:
            message = "Workloads are not in the state: what the queues use now is unknown"
            return Result(UNKNOWN, "", queue.name, message, self._podsets(assignment, node, [], False))
        ahead = self._ahead(job, queue.name)
        chips_ahead = sum((ps.total(self.tpu) for p in ahead for ps in p.podsets), ZERO)
        position = Position(len(ahead), chips_ahead, queue.queueing_strategy)
        result = self._attempt(job, node, assignment, position)
        return self._behind(job, node, result, ahead, queue.queueing_strategy)

    def _attempt(self, job: PendingWorkload, node: Node, assignment: Assignment, position: Position) -> Result:
        """The job's answer from its flavor assignment on, as if no Workload waited in front of it."""
        queue, state = node.info, self.state
        assert queue is not None
        wanted = self._pool_needs(job, assignment) if assignment.mode != NOFIT else ()
        unplaceable = self._placement_unknown(wanted)
        tracker = PoolTracker(state.placement, wanted) if wanted and state.placement and not unplaceable else None
        if assignment.mode == FIT and (tracker is None or tracker.fits()):
            podsets = self._podsets(assignment, node, [])
            result = Result(ADMIT, "", queue.name, _fits(podsets, queue.name, self.tpu), podsets, (), position)
        elif tracker is not None and not tracker.possible():  # Kueue: NoFit even with every Workload gone
            result = self._unplaced(assignment, node, position, tracker, "not even with every Workload gone")
        elif assignment.mode == PREEMPT or tracker is not None:
            need = assignment.need_preemption()
            if tracker is not None:  # ``updateModeForTASRequests``: the placed podSets' resources need preemption
                flavors = {n.flavor for n in tracker.wanted}
                placed = [p for p in assignment.podsets if p.flavors.get(self.tpu) in flavors]
                need |= {(f, r) for p in placed for r, f in p.flavors.items()}
            placing = tracker is not None
            job_usage = Preemptor(node, job.priority, job.created, assignment.usage, frozenset(need), placing)
            self.sim.pools = tracker
            try:
                victims = self.sim.targets(job_usage)
            finally:
                self.sim.pools = None
            if not victims and tracker is not None:
                quota_only = assignment.mode == FIT or self.sim.targets(
                    Preemptor(node, job.priority, job.created, assignment.usage, assignment.need_preemption())
                )
                if quota_only:
                    why = "no preemption Kueue would make frees enough of them"
                    result = self._unplaced(assignment, node, position, tracker, why)
                else:
                    result = self._wait(assignment, node, position, "no preemption Kueue would make frees enough")
            elif victims:
                podsets = self._podsets(assignment, node, victims)
                preemptions = tuple(
                    PreemptionResult(v.workload.key, v.workload.cluster_queue, v.workload.priority, v.reason)
                    for v in sorted(victims, key=lambda v: (v.workload.cluster_queue, v.workload.key))
                )
                gone = plural(len(victims), "Workload")
                message = (
                    f"fits in ClusterQueue {queue.name} once {gone} {'is' if len(victims) == 1 else 'are'} preempted"
                )
                result = Result(PREEMPT_OUTCOME, "", queue.name, message, podsets, preemptions, position)
            else:
                result = self._wait(assignment, node, position, "no preemption Kueue would make frees enough")
        elif assignment.reason in (EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR):
            # Kueue's answer now, with the reason it gives; another choice of flavors could hold the
            # job, which Kueue makes once the usage that decides its first choice changes
            why = (
                f"{_why_not(assignment)}; Kueue's first choice of flavors at the current usage cannot hold it, "
                "another choice could, and Kueue makes it when usage changes"
            )
            podsets = self._podsets(assignment, node, [], False)
            result = Result(WAIT, assignment.reason, queue.name, why, podsets, (), position)
        else:
            result = self._wait(assignment, node, position, _why_not(assignment))
        if unplaceable and result.outcome in (ADMIT, PREEMPT_OUTCOME):
            return Result(UNKNOWN, "", queue.name, unplaceable, result.podsets, (), position)
        return result

    # ------------------------------------------------------------ static placement

    def _pool_needs(self, job: PendingWorkload, assignment: Assignment) -> tuple[PoolNeed, ...]:
        placement = self.state.placement
        if placement is None:
            return ()
        assigned = [p.flavors for p in assignment.podsets]
        label = placement.topology_label
        return pool_needs(job.podsets, assigned, self.state.flavors, label, self.tpu)

    def _placement_unknown(self, wanted: Sequence[PoolNeed]) -> str:
        """Why whether the job's pools are free cannot be told ("" when it can, or nothing is placed)."""
        placement = self.state.placement
        if not wanted or placement is None:
            return ""
        slices = ", ".join(f"{plural(n.slices, 'whole node pool')} of {n.topology}" for n in wanted)
        if placement.missing:
            return f"{placement.missing}: whether it finds {slices} with every host free is unknown"
        unread = placement.unreadable(frozenset(n.flavor for n in wanted))
        if unread:
            listed = ", ".join(unread[:3]) + (f" and {len(unread) - 3} more" if len(unread) > 3 else "")
            return (
                f"the topologyAssignment of {listed} cannot be read: which node pools it holds, and so whether "
                f"the job finds {slices} with every host free, is unknown"
            )
        return ""

    def _unplaced(
        self, assignment: Assignment, node: Node, position: Position, tracker: PoolTracker, why: str
    ) -> Result:
        """``wait`` ``TopologyPlacementFailed``: the quota fits, the topology has too few whole pools free."""
        need = tracker.short() or tracker.wanted[0]
        at = tracker.index_of(need)
        free, total = tracker.free[at], len(tracker.usable[at])
        placement = self.state.placement
        assert placement is not None
        holders = tuple((key, placement.queue_of(key), count) for key, count in tracker.holders(need)[:LISTED])
        held = ", ".join(f"{key} ({plural(count, 'pool')})" for key, _, count in holders[:3])
        message = (
            f"needs {plural(need.slices, 'whole node pool')} of {need.topology} (flavor {need.flavor}) with every "
            f"host free; {free} of {total} free" + (f"; held by {held}" if held else "") + f"; {why}"
        )
        pools = Pools(need.topology, need.flavor, need.slices, free, total, holders)
        return Result(
            WAIT,
            "TopologyPlacementFailed",
            node.name,
            message,
            self._podsets(assignment, node, [], assignment.mode == FIT),  # the quota's flavors are found
            (),
            position,
            pools=pools,
        )

    def _selector(self, queue: ClusterQueueInfo, namespace: str) -> str | None:
        """Why ``queue``'s namespaceSelector refuses ``namespace``; ``None`` when it admits it or the
        namespace's labels are not in the state (the ``namespace-not-selected`` rule decides that)."""
        if queue.namespace_selector is None:
            return f"ClusterQueue {queue.name} has no namespaceSelector: it matches no namespace"
        labels = (self.state.namespace_labels or {}).get(namespace)
        if labels is None or selector_matches(queue.namespace_selector, labels):
            return None
        selector = describe_selector(queue.namespace_selector)
        return f"namespace {namespace} does not match ClusterQueue {queue.name}'s namespaceSelector {selector}"

    # ------------------------------------------------------------ the queue in front

    def _ahead(self, job: PendingWorkload, queue: str) -> list[PendingWorkload]:
        ahead = [
            p
            for p in self.state.pending_by_queue.get(queue, ())
            if p.key != job.key
            and (p.priority > job.priority or (p.priority == job.priority and p.created < job.created))
        ]
        ahead.sort(key=lambda p: (-p.priority, p.created, p.key))
        return ahead

    def _behind(
        self, job: PendingWorkload, node: Node, result: Result, pending: Sequence[PendingWorkload], strategy: str
    ) -> Result:
        """A start, with the queue in front (``pending``, in Kueue's order) tried first, as Kueue's
        scheduler tries a ClusterQueue's heads one after another.

        Each one ahead either fits with the usage of those admitted before it, and is admitted (its
        usage moved into the tree), or does not and is skipped (BestEffortFIFO) or blocks the queue
        (StrictFIFO). One ahead that would start by preempting, or that needs static node pools that
        are free, is not followed further: the answer is ``unknown``. Workloads of one shape and
        priority that did not go cannot go later either, as usage only grows along the queue (and a
        later one of the same priority is newer, so it may preempt no more): each such group is
        tried once, so the cost grows with the shapes in front, and with the Workloads admitted
        first (at most ``FIRST_FOLLOWED``), not with the length of the queue. Then the job is tried
        again on the moved usage; every usage moved is put back."""
        if result.outcome not in (ADMIT, PREEMPT_OUTCOME) or not pending:
            return result
        cq = result.cluster_queue
        moved: list[Mapping[FlavorResource, Decimal]] = []
        stuck: set[tuple[object, int]] = set()
        untried: dict[tuple[str, str], bool] = {}  # per LocalQueue: whether Kueue tries its Workloads
        ranked, self.ranked = self.ranked, {}  # the holders below are ranked on the moved usage
        try:
            for other in pending:
                group = (other.podsets, other.priority)
                if group in stuck:
                    continue
                where = (other.namespace, other.queue_name)
                skip = untried.get(where)
                if skip is None:
                    skip = untried[where] = self._not_tried(other, node)
                if skip:
                    continue
                assigned = self._assigner(node, other.priority, other.created).assign(other.podsets)
                why = self._goes_first(other, node, assigned)
                if why == _GOES and len(moved) == FIRST_FOLLOWED:
                    message = (
                        f"more than {FIRST_FOLLOWED} Workloads ahead of it in ClusterQueue {cq} fit now;"
                        " whether room is left after them is not worked out"
                    )
                    return Result(UNKNOWN, "", cq, message, result.podsets, (), result.position)
                if why == _GOES:
                    self.tree.add(cq, assigned.usage)
                    self.sim.answers.clear()
                    moved.append(assigned.usage)
                    continue
                if why:
                    return Result(
                        UNKNOWN,
                        "",
                        cq,
                        f"Workload {other.key}, ahead of it in ClusterQueue {cq}, {why}",
                        result.podsets,
                        (),
                        result.position,
                    )
                if strategy == "StrictFIFO":
                    message = (
                        f"behind {plural(len(pending), 'Workload')} in StrictFIFO ClusterQueue {cq}, "
                        f"whose head {other.key} does not fit now"
                    )
                    return Result(WAIT, "StrictFIFO", cq, message, result.podsets, (), result.position)
                stuck.add(group)
            if not moved:
                them = "them" if len(pending) > 1 else "it"
                ahead = plural(len(pending), "Workload")
                note = f"; {ahead} ahead of it cannot start now: BestEffortFIFO lets it pass {them}"
                return dataclasses.replace(result, message=result.message + note)
            assignment = self._assigner(node, job.priority, job.created).assign(job.podsets)
            again = self._attempt(job, node, assignment, result.position)
            first = (
                f"once {plural(len(moved), 'Workload')} ahead of it {'is' if len(moved) == 1 else 'are'} admitted first"
            )
            if again.outcome in (ADMIT, PREEMPT_OUTCOME, UNKNOWN):
                return dataclasses.replace(again, message=f"{again.message}, {first}")
            return dataclasses.replace(again, message=f"{first}: {again.message}")
        finally:
            for usage in reversed(moved):
                self.tree.remove(cq, usage)
            if moved:
                self.sim.answers.clear()
            self.ranked = ranked

    def _not_tried(self, other: PendingWorkload, node: Node) -> bool:
        """Whether Kueue leaves a Workload ahead untried: held in its LocalQueue (a ``stopPolicy``),
        or of a namespace the ClusterQueue's namespaceSelector refuses."""
        local = self.state.local_queues.get((other.namespace, other.queue_name))
        if local is not None and local.stop_policy != "None":
            return True
        return node.info is not None and self._selector(node.info, other.namespace) is not None

    def _goes_first(self, other: PendingWorkload, node: Node, assigned: Assignment) -> str:
        """Whether a Workload ahead goes before the job: ``_GOES`` when it fits now on quota alone
        (and needs no node pools), why it is not followed when it would start some other way, ``""``
        when it does not start now."""
        if assigned.mode == FIT:
            wanted = self._pool_needs(other, assigned)
            if not wanted:
                return _GOES
            placement = self.state.placement
            assert placement is not None
            if self._placement_unknown(wanted) or PoolTracker(placement, wanted).fits():
                return "could be admitted first on static node pools; which pools it takes is not worked out"
            return ""
        if assigned.mode == PREEMPT and self.sim.targets(
            Preemptor(node, other.priority, other.created, assigned.usage, assigned.need_preemption())
        ):
            return "could be admitted first by preempting"
        return ""

    # ------------------------------------------------------------ numbers

    def _podsets(
        self, assignment: Assignment, node: Node, victims: Sequence[Victim], made: bool = True
    ) -> tuple[PodSetResult, ...]:
        """Each podSet's flavors and what it borrows of its main resource, with ``victims`` gone.

        Only an assignment that is made (the job starts, with or without preemption) has flavors and
        borrows: a job that waits or never starts has none yet, whatever flavor the assigner tried,
        and a queue outside any cohort borrows nothing."""
        if not made:
            return tuple(PodSetResult(p.name, p.count, {}, ZERO, "") for p in assignment.podsets)
        for victim in victims:
            self.sim.remove(victim.workload)
        results = []
        assumed: dict[tuple[str, str], Decimal] = {}
        for podset in assignment.podsets:
            borrows = ZERO
            main = self.tpu if self.tpu in podset.flavors else min(podset.flavors, default="")
            for fr, value in podset.usage.items():
                before = node.usage.get(fr, ZERO) + assumed.get(fr, ZERO)
                nominal = node.quota(fr).nominal
                if fr[1] == main and node.parent is not None:
                    borrows += max(ZERO, before + value - nominal) - max(ZERO, before - nominal)
                assumed[fr] = assumed.get(fr, ZERO) + value
            results.append(PodSetResult(podset.name, podset.count, dict(podset.flavors), borrows, main))
        self.sim.restore(list(victims))
        return tuple(results)

    def _wait(self, assignment: Assignment, node: Node, position: Position, why: str) -> Result:
        numbers = self._numbers(assignment, node)
        message = why
        if numbers is not None:
            n = numbers
            r = n.resource
            message = (
                f"needs {format_amount(n.needs, r)} {r} on {n.flavor}; ClusterQueue {node.name} uses "
                f"{format_amount(n.uses, r)} of {format_amount(n.nominal, r)}"
                + (f", cohort {n.cohort} lends {format_amount(n.lends, r)}" if n.cohort else "")
                + f"; {why}"
            )
            if n.lent_out:
                message += (
                    f"; its own nominal quota is borrowed by other queues of cohort {n.cohort}, and ClusterQueue "
                    f"{node.name} does not reclaim it (preemption.reclaimWithinCohort: Never): it starts when they "
                    "give it back, or sooner with reclaimWithinCohort: LowerPriority or Any"
                )
        return Result(
            WAIT,
            "WaitingForQuota",
            node.name,
            message,
            self._podsets(assignment, node, [], False),
            (),
            position,
            numbers=numbers,
        )

    def _numbers(self, assignment: Assignment, node: Node) -> Numbers | None:
        """The (flavor, resource) a wait is about: the job's main resource on the flavor it got or first tried."""
        failed = next((p for p in assignment.podsets if p.reason), None)
        target = None
        for podset in assignment.podsets:
            if self.tpu in podset.flavors:
                target = (podset.flavors[self.tpu], self.tpu)
        if target is None and failed is not None:
            waiting = [t for tries in failed.tries for t in tries if t.reason == "WaitingForQuota" and t.resource]
            if waiting:
                target = (waiting[0].flavor, waiting[0].resource)
        if target is None and assignment.usage:
            target = min(assignment.usage)
        if target is None:
            return None
        uses = node.usage.get(target, ZERO)
        nominal = node.quota(target).nominal
        lends = max(ZERO, available(node, target) - max(ZERO, nominal - uses)) if node.parent is not None else ZERO
        needs = assignment.usage.get(target, ZERO)
        if failed is not None:  # what the podSet that did not fit asks, on top of those before it
            needs += failed.requests.get(target[1], ZERO)
        cohort = node.parent.name if node.parent is not None else None
        never = node.info is not None and node.info.preemption.reclaim_within_cohort == "Never"
        return Numbers(
            target[0],
            target[1],
            needs,
            uses,
            nominal,
            lends,
            cohort,
            self._largest_queues(node, target),
            self._largest_workloads(node.name, target),
            lent_out=cohort is not None and never and uses + needs <= nominal,
        )

    def _largest_queues(self, node: Node, target: FlavorResource) -> tuple[tuple[str, Decimal], ...]:
        """The three ClusterQueues of the queue's cohort tree (or the queue alone) using most of ``target``:
        one pass over the tree's queues per (tree, flavor, resource), kept until the usage moves."""
        root = node.root() if node.parent is not None else node
        scope = [node] if node.parent is None else _queues(root)
        return self._largest((root.name, *target), ((q.name, q.usage.get(target, ZERO)) for q in scope))

    def _largest_workloads(self, queue: str, target: FlavorResource) -> tuple[tuple[str, Decimal], ...]:
        """The three admitted Workloads of ``queue`` using most of ``target`` (its index, read once)."""
        admitted = self.state.admitted_by_queue.get(queue, ())
        return self._largest(("queue " + queue, *target), ((w.key, w.usage.get(target, ZERO)) for w in admitted))

    def _largest(
        self, key: tuple[str, str, str], amounts: Iterator[tuple[str, Decimal]]
    ) -> tuple[tuple[str, Decimal], ...]:
        """The ``HOLDERS`` largest of ``amounts`` (name, amount) above zero, most first, kept under
        ``key``; ``amounts`` is a generator, walked only the first time."""
        held = self.ranked.get(key)
        if held is None:
            top = heapq.nsmallest(HOLDERS, ((-amount, name) for name, amount in amounts if amount > 0))
            held = self.ranked[key] = tuple((name, -amount) for amount, name in top)
        return held


def _unmatched(assigner: FlavorAssigner, podsets: Sequence[PodSetDemand]) -> str | None:
    """``NoMatchingFlavor`` for the first podSet with no flavor it could ever use, unless a podSet
    before it already fails: Kueue assigns podSets in order and stops at the first that fails,
    whose reason (``ExceedsMaxQuota``, ``WaitingForQuota``) is then the Workload's."""
    for index, podset in enumerate(podsets):
        found = assigner.unmatched([podset])
        if found is not None:
            return None if index and assigner.assign(podsets[:index]).mode == NOFIT else found
    return None


def _queues(cohort: Node) -> list[Node]:
    found = list(cohort.child_queues)
    for child in cohort.child_cohorts:
        found += _queues(child)
    return found


def _fits(podsets: Sequence[PodSetResult], queue: str, chips: str) -> str:
    borrowed: dict[str, Decimal] = {}
    for p in podsets:
        if p.borrows:
            borrowed[p.resource] = borrowed.get(p.resource, ZERO) + p.borrows
    flavors = sorted({f for p in podsets for f in p.flavors.values()})
    text = f"fits now in ClusterQueue {queue}" + (f" on {', '.join(flavors)}" if flavors else "")
    amounts = ", ".join(
        f"{format_amount(v)} chips" if r == chips else f"{format_amount(v, r)} {r}" for r, v in sorted(borrowed.items())
    )
    return text + (f", borrowing {amounts}" if amounts else "")


def _feasibility_of(state: State) -> FeasibilityCheck:
    members = CohortMembers()
    for queue in state.cluster_queues.values():
        members.add(queue)
    nodes = ResourceNodes(state, members, _nothing_kept, _keep_nothing)
    return FeasibilityCheck(state, nodes, _nothing_kept, _keep_nothing)


def _nothing_kept(key: object) -> object:
    return None


def _keep_nothing(key: object, value: object) -> None:
    return None


def _infeasible(feasible: Feasibility) -> str:
    """Why no choice of flavors could ever hold the podSets, in the capacity rules' terms."""
    index = feasible.first_unassigned()
    if index is not None:
        podset = feasible.podsets[index]
        over = [_beyond(e, "") for e in podset.exceeded]
        passed = [f"{a.flavor}: {a.detail}" for a in podset.passed_over]
        return f"podSet {podset.name}: no flavor could ever hold it: " + "; ".join([*over, *passed][:LISTED])
    contended = [_beyond(e, " in all") for e in feasible.contended]
    return "no choice of flavors could ever hold the podSets together: " + "; ".join(contended[:LISTED])


def _beyond(exceeded: Exceeded, scope: str) -> str:
    n, r = format_amount, exceeded.resource
    return f"{exceeded.flavor}: {n(exceeded.needed, r)} {r}{scope} > at most {n(exceeded.most, r)}"


def _why_not(assignment: Assignment) -> str:
    """The flavors tried for the podSet that did not fit, and why each fell through."""
    failed = next((p for p in assignment.podsets if p.reason), None)
    if failed is None:
        return "it does not fit"
    details = [
        f"{t.flavor or 'no flavor'}: {t.detail or t.reason}" for tries in failed.tries for t in tries if t.mode == NOFIT
    ]
    return f"podSet {failed.name}: " + "; ".join(details[:LISTED])
