"""The engine's input: a frozen picture of what Kueue's scheduler reads in one cycle.

ClusterQueues and Cohorts are the Kueue model's own views (``webhook.kueue``, with their
preemption, fungibility, queueing strategy, stop policy and fair-sharing weight),
ResourceFlavors the quota model's; the rest is here. Workloads are kept small: an admitted
one (``webhook.kueue.workload``) is its ClusterQueue, priority, times and usage per
(flavor, resource); a pending one its LocalQueue, priority, creation time and podSets. A kind the state does not hold is
named in ``missing``: what it would decide is then unknown, never assumed empty.
``tree_of`` builds the state's cohort tree (``webhook.kueue.hierarchy``) with its usage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo
from webhook.kueue.fair_sharing import FairSharing
from webhook.kueue.hierarchy import Tree, build_tree
from webhook.kueue.localqueue import LocalQueueInfo
from webhook.kueue.preemption.candidates import QueueIndex, build_index
from webhook.kueue.preemption.preemptor import Simulation
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.kueue.resources import FlavorResource
from webhook.kueue.workload import AdmittedWorkload, PendingWorkload
from webhook.policy.config import TpuPolicy
from webhook.quota.feasibility import FeasibilityCheck
from webhook.simulate.placement import Placement

#: the resource counted as TPU chips when a caller names none: the policy's default
TPU = TpuPolicy().resource_name

WORKLOADS, COHORTS, FLAVORS, LOCAL_QUEUES = "Workload", "Cohort", "ResourceFlavor", "LocalQueue"


@dataclass(frozen=True)
class State:
    """One frozen cycle's worth of cluster state, with the indexes the engine reads."""

    cluster_queues: Mapping[str, ClusterQueueInfo]
    cohorts: Mapping[str, CohortInfo]
    flavors: Mapping[str, FlavorInfo]
    local_queues: Mapping[tuple[str, str], LocalQueueInfo]
    admitted: tuple[AdmittedWorkload, ...] = ()
    pending: tuple[PendingWorkload, ...] = ()
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    #: the kinds the state does not hold (``WORKLOADS``, ``COHORTS``, ...)
    missing: frozenset[str] = frozenset()
    #: namespace -> its labels, for ClusterQueue ``namespaceSelector``s; ``None``: not in the state
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    now: datetime = field(default_factory=lambda: datetime.now().astimezone())
    #: ClusterQueue -> what its admitted Workloads use; given (a live snapshot's counters), the
    #: tree is built from it instead of from ``admitted`` (which may then be empty)
    usage: Mapping[str, Mapping[FlavorResource, Decimal]] | None = None
    #: ClusterQueue -> its admitted Workloads (Kueue's ``ClusterQueueSnapshot.Workloads``);
    #: given, a mapping that builds a queue's part when it is first read (a live snapshot)
    admitted_by_queue: Mapping[str, tuple[AdmittedWorkload, ...]] = None  # type: ignore[assignment]
    #: ClusterQueue -> its pending Workloads, through their LocalQueue
    pending_by_queue: Mapping[str, tuple[PendingWorkload, ...]] = None  # type: ignore[assignment]
    #: ClusterQueue -> its admitted Workloads in Kueue's candidate order (``candidates``)
    candidates: Mapping[str, QueueIndex] = None  # type: ignore[assignment]
    #: static mode's node pools and who occupies them (``placement``); ``None``: placement is not
    #: checked (dynamic mode, or a state made by hand without nodes)
    placement: Placement | None = None
    #: the capacity rules' "could it ever fit" over these queues, when the caller has one (a
    #: snapshot's queue part, memoized there); ``None``: the engine makes its own
    feasibility: FeasibilityCheck | None = None

    def cohorts_unknown(self) -> str | None:
        """Why what the cohorts could lend is unknown (the potential quota reads it); ``None`` when known."""
        return "Cohort objects are not in the state" if COHORTS in self.missing else None

    def __post_init__(self) -> None:
        if self.admitted_by_queue is not None:
            return  # built per queue by the caller (``webhook.simulate.live``)
        admitted: defaultdict[str, list[AdmittedWorkload]] = defaultdict(list)
        for workload in self.admitted:
            admitted[workload.cluster_queue].append(workload)
        pending: defaultdict[str, list[PendingWorkload]] = defaultdict(list)
        for waiting in self.pending:
            queue = self.local_queues.get((waiting.namespace, waiting.queue_name))
            if queue is not None and waiting.active:
                pending[queue.cluster_queue].append(waiting)
        object.__setattr__(self, "admitted_by_queue", {k: tuple(v) for k, v in admitted.items()})
        object.__setattr__(self, "pending_by_queue", {k: tuple(v) for k, v in pending.items()})
        object.__setattr__(self, "candidates", {k: build_index(v, self.now) for k, v in admitted.items()})


def tree_of(state: State) -> Tree:
    """The cohort tree of ``state`` with its admitted Workloads' usage (O(queues + cohorts + Workloads))."""
    tree = build_tree(state.cluster_queues, state.cohorts)
    if COHORTS in state.missing:
        tree.notes.append("Cohort objects are not in the state: the quota above each cohort is unknown")
    if state.usage is not None:  # a live snapshot's counters: O(queues × flavors), never O(Workloads)
        for name, usage in state.usage.items():
            _add_counted(tree, state, name, usage)
        return tree
    for workload in state.admitted:
        held = state.cluster_queues.get(workload.cluster_queue)
        if held is None:
            tree.notes.append(
                f"Workload {workload.key} is admitted to ClusterQueue {workload.cluster_queue}, which the state lacks"
            )
            continue
        strange = sorted({flavor for flavor, _ in workload.usage if flavor not in {f for f, _ in held.flavors}})
        if strange:
            tree.notes.append(
                f"Workload {workload.key} holds quota of flavor {', '.join(strange)}, which ClusterQueue "
                f"{held.name} does not list; counted there all the same"
            )
        tree.add(workload.cluster_queue, workload.usage)
    return tree


def _add_counted(tree: Tree, state: State, name: str, usage: Mapping[FlavorResource, Decimal]) -> None:
    """A queue's usage as the snapshot counts it, with the notes ``tree_of`` gives Workload by Workload."""
    held = state.cluster_queues.get(name)
    if held is None:
        tree.notes.append(f"Workloads are admitted to ClusterQueue {name}, which the state lacks")
        return
    strange = sorted({flavor for flavor, _ in usage if flavor not in {f for f, _ in held.flavors}})
    if strange:
        tree.notes.append(
            f"ClusterQueue {name} holds quota of flavor {', '.join(strange)}, which it does not list; "
            "counted there all the same"
        )
    tree.add(name, usage)


def simulation_of(state: State, tree: Tree, budget: int = 20_000) -> Simulation:
    """Kueue's preemptor over ``tree``, with the state's candidates, clock and fair-sharing configuration."""
    return Simulation(tree, state.candidates, state.now, state.fair_sharing, budget)
