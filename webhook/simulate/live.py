"""The simulator on a live ``Snapshot``: the one path the CLI, the webhook and the advisor's simulations take.

The engine's ``State`` for a snapshot is built from the snapshot and memoized on it. Its
cost is not O(all Workloads): the cohort tree's usage comes from the snapshot's counters
(O(queues × flavors)); a ClusterQueue's admitted Workloads (its candidate index) and its
pending ones are built from the snapshot's per-queue index the first time an attempt
reads that queue, O(that queue's Workloads), and kept on that index part
(``Snapshot.part_memo``), which later snapshots share while the queue's Workloads are unchanged. Everything else is the
snapshot's own parts: the queue tables, and the kept documents for LocalQueues'
``stopPolicy``, Kueue's Configuration (fair sharing) and WorkloadPriorityClasses' values.

A ``Simulator`` moves usage in its tree and puts it back; one is kept per snapshot and
answers one job at a time (its lock). The webhook's ``[simulate]`` lines have a simulator
of their own per snapshot (``LINE_SIMULATOR``), so working out a line never waits on that
lock behind the advisor's simulations or ``explain``, nor they behind it. ``simulate_object`` reads a JobSet, Job,
Deployment or Workload as Kueue would make its Workload; ``simulate_stored`` answers for
a stored Workload as if it were submitted now, itself left out.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import localcontext
from typing import Any, Final

import yaml

from webhook.cluster import kinds as k
from webhook.cluster.snapshot import Snapshot
from webhook.kube.quantity import CONTEXT
from webhook.kueue.fair_sharing import FairSharing, fair_sharing
from webhook.kueue.localqueue import LocalQueueInfo, parse_local_queue
from webhook.kueue.preemption.candidates import QueueIndex, build_index
from webhook.kueue.workload import HOLDS, WAITS, AdmittedWorkload, PendingWorkload, submitted_workload
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.objects.readers import read_workload
from webhook.objects.workload import Workload
from webhook.policy.config import Policy
from webhook.quota.podsets import demands_of
from webhook.simulate.engine import Simulator
from webhook.simulate.placement import Placement
from webhook.simulate.result import ADMIT, PREEMPT, UNKNOWN, Result
from webhook.simulate.state import COHORTS, FLAVORS, LOCAL_QUEUES, WORKLOADS, State

#: the job kinds read as Kueue's job integrations make their Workloads
JOB_KINDS: Final = (JOBSET, JOB, DEPLOYMENT)
WORKLOAD: Final = "Workload"
#: the engine's kinds, by the store's kind names
_MISSING: Final = {
    k.WORKLOADS.name: WORKLOADS,
    k.COHORTS.name: COHORTS,
    k.RESOURCE_FLAVORS.name: FLAVORS,
    k.LOCAL_QUEUES.name: LOCAL_QUEUES,
}


class _PerQueue(Mapping[str, Any]):
    """ClusterQueue -> a part worked out when read: the queues an attempt never reads cost
    nothing. Nothing is kept here: a part is kept on the snapshot's index part it is made from
    (``Snapshot.part_memo``), which every snapshot shares while that part is unchanged."""

    __slots__ = ("_make", "_names")

    def __init__(self, names: Callable[[], Iterator[str]], make: Callable[[str], Any]) -> None:
        self._names, self._make = names, make

    def __getitem__(self, queue: str) -> Any:
        return self._make(queue)

    def get(self, queue: str, default: Any = None) -> Any:
        return self._make(queue)

    def __iter__(self) -> Iterator[str]:
        return self._names()

    def __len__(self) -> int:
        return sum(1 for _ in self._names())


def _on_part(snapshot: Snapshot, where: tuple[str, str, str], key: Hashable, make: Callable[[], Any]) -> Any:
    """``make()``, kept on the index part at ``where``; not at all for an empty part (nothing to work out)."""
    memo = snapshot.part_memo(where)
    return memo.remember(key, make, derived=True) if memo is not None else make()


def _configuration(snapshot: Snapshot, policy: Policy) -> Mapping[str, Any] | None:
    """Kueue's Configuration from the kept ConfigMap; ``None`` when absent or unreadable."""
    kueue = policy.kueue
    for document in snapshot.kept_documents(k.KUEUE_CONFIG):
        metadata = document.get("metadata") or {}
        if (metadata.get("namespace"), metadata.get("name")) != (kueue.namespace, kueue.config_map):
            continue
        text = (document.get("data") or {}).get(kueue.config_key)
        try:
            config = yaml.safe_load(text) if isinstance(text, str) else None
        except yaml.YAMLError:
            return None
        return config if isinstance(config, dict) else None
    return None


def priority_values(snapshot: Snapshot) -> dict[str, int]:
    """WorkloadPriorityClass name -> its value, from the kept documents."""
    out = {}
    for document in snapshot.kept_documents(k.WORKLOAD_PRIORITY_CLASSES):
        name, value = (document.get("metadata") or {}).get("name"), document.get("value")
        if isinstance(name, str) and type(value) is int:
            out[name] = value
    return out


def state_of(snapshot: Snapshot, policy: Policy, now: datetime | None = None) -> State:
    """The engine's state for ``snapshot`` (memoized on it unless ``now`` is given)."""

    def make() -> State:
        moment = now or datetime.now(UTC)
        queues = snapshot.queues
        local_queues = _local_queues(snapshot)
        missing = frozenset(_MISSING[name] for name in snapshot.unread if name in _MISSING)
        labels = None if k.NAMESPACES.name in snapshot.unread else queues.namespaces
        # an index built at another moment than the one asked for is not this state's
        indexed = "simulate candidates" if now is None else ("simulate candidates", now)

        def names() -> Iterator[str]:
            return iter(queues.cluster_queues)

        def admitted(queue: str) -> tuple[AdmittedWorkload, ...]:
            return _on_part(  # type: ignore[no-any-return]
                snapshot,
                (HOLDS, queue, ""),
                "simulate admitted",
                lambda: tuple(entry.admitted(ns, name) for ns, name, entry in snapshot.holding_in(queue)),
            )

        def candidates(queue: str) -> QueueIndex:
            return _on_part(  # type: ignore[no-any-return]
                snapshot, (HOLDS, queue, ""), indexed, lambda: build_index(admitted(queue), moment)
            )

        def waiting(namespace: str, local: str) -> tuple[PendingWorkload, ...]:
            return _on_part(  # type: ignore[no-any-return]
                snapshot,
                (WAITS, namespace, local),
                "simulate pending",
                lambda: tuple(entry.pending(ns, name) for ns, name, entry in snapshot.waiting_at(namespace, local)),
            )

        def pending(queue: str) -> tuple[PendingWorkload, ...]:
            parts = [waiting(namespace, local) for namespace, local in snapshot.local_queues_of(queue)]
            if len(parts) == 1:
                return parts[0]  # the LocalQueue's own part, as kept
            return tuple(workload for part in parts for workload in part)

        return State(
            queues.cluster_queues,
            queues.cohorts,
            queues.flavors,
            local_queues,
            fair_sharing=_fair_sharing(snapshot, policy),
            missing=missing,
            namespace_labels=labels,
            now=moment,
            usage=snapshot.queue_usages(),
            admitted_by_queue=_PerQueue(names, admitted),
            pending_by_queue=_PerQueue(names, pending),
            candidates=_PerQueue(names, candidates),
            placement=_placement(snapshot, policy),
            feasibility=queues.assigner,
        )

    if now is not None or policy is not snapshot.policy:  # memoized for the snapshot's own policy alone
        return make()
    return snapshot.remember(_STATE_KEY, make, derived=True)  # type: ignore[no-any-return]


def _placement(snapshot: Snapshot, policy: Policy) -> Placement | None:
    """Static mode's node pools and who occupies them, read from the snapshot when a placed job first
    asks: the pools from the node index (memoized per selector on its node part), the occupants from
    the index of the topology domains admitted Workloads hold (O(domains); a pool's Workloads are
    listed when a job first asks about that pool), never all Workloads.
    ``None`` in dynamic mode (sub-slice placement is not simulated)."""
    if policy.mode != "static":
        return None
    missing = "Nodes are not in the state" if k.NODES.name in snapshot.unread else None
    nodes = snapshot.nodes
    return Placement(
        policy.tpu.topology_label, nodes.pools, nodes.pool_of, snapshot.occupied, snapshot.workloads, missing
    )


def _local_queues(snapshot: Snapshot) -> Mapping[tuple[str, str], LocalQueueInfo]:
    """The LocalQueues with their stop policies: the queue part's map, read through the stop
    policies of the kept documents (worked out once per kept documents, on their memo)."""
    stops = snapshot.documents.memo.remember("simulate stop policies", lambda: _stop_policies(snapshot), derived=True)
    return _LocalQueues(snapshot.queues.local_queues, stops)


def _stop_policies(snapshot: Snapshot) -> Mapping[tuple[str, str], str]:
    stops = {}
    for document in snapshot.kept_documents(k.LOCAL_QUEUES):
        local = parse_local_queue(document)
        if local.stop_policy != "None":
            stops[(local.namespace, local.name)] = local.stop_policy
    return stops


class _LocalQueues(Mapping[tuple[str, str], LocalQueueInfo]):
    """(namespace, LocalQueue) -> its ClusterQueue and stop policy, made when read: the two maps it
    joins come from parts the store shares between snapshots on their own."""

    __slots__ = ("_queues", "_stops")

    def __init__(self, queues: Mapping[tuple[str, str], str], stops: Mapping[tuple[str, str], str]) -> None:
        self._queues, self._stops = queues, stops

    def __getitem__(self, key: tuple[str, str]) -> LocalQueueInfo:
        return LocalQueueInfo(key[0], key[1], self._queues[key], self._stops.get(key, "None"))

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._queues)

    def __len__(self) -> int:
        return len(self._queues)


def _fair_sharing(snapshot: Snapshot, policy: Policy) -> FairSharing:
    """Fair sharing as Kueue's Configuration sets it (a YAML text to parse: once per kept documents)."""
    kueue = policy.kueue
    where = (kueue.namespace, kueue.config_map, kueue.config_key)
    return snapshot.documents.memo.remember(  # type: ignore[no-any-return]
        ("simulate fair sharing", where), lambda: fair_sharing(_configuration(snapshot, policy)), derived=True
    )


_STATE_KEY: Final = "simulate state"
_SIMULATOR_KEY: Final = "simulator"
#: the memo key of the simulators that work out the webhook's ``[simulate]`` lines
LINE_SIMULATOR: Final = "line simulator"


class LiveSimulator:
    """One snapshot's ``Simulator``, answering one job at a time.

    After a Workload event (the queues, the kept documents and what cannot be read all
    unchanged) the previous snapshot's cohort tree is taken over (``Memo.take_previous``)
    instead of built again: each ClusterQueue whose counted usage moved gets the difference,
    O(queues × flavors) to compare. The previous snapshot works out a simulator of its own if
    it is asked again.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        policy: Policy,
        budget: int = 20_000,
        now: datetime | None = None,
        key: str = _SIMULATOR_KEY,
    ) -> None:
        self.snapshot = snapshot
        #: the memo key it is kept under: the previous snapshot's simulator under the same key hands on its tree
        self.key = key
        self.policy = policy
        self.budget = budget
        self.priorities = priority_values(snapshot)
        self.names = {value: name for name, value in self.priorities.items()}
        self.lock = threading.Lock()
        state = state_of(snapshot, policy, now)
        self.state = state
        carried = self._carried(state) if now is None else None
        self.simulator: Simulator | None = carried or self._built(state)

    def _built(self, state: State) -> Simulator:
        tpu = self.policy.tpu.resource_name
        return Simulator(state, tpu=tpu, budget=self.budget, priority_names=self.names)

    def _carried(self, state: State) -> Simulator | None:
        """The tree of the previous snapshot's simulator under the same key, taken over through the
        memo when only Workloads changed in between (the same queues, kept documents, unreadable
        kinds and policy)."""
        snapshot = self.snapshot
        if self.policy is not snapshot.policy or state.usage is None:
            return None
        before = snapshot.memo.take_previous(self.key)
        if not isinstance(before, LiveSimulator) or before.budget != self.budget or before.state.usage is None:
            return None
        earlier = before.snapshot
        if (
            earlier.policy is not snapshot.policy
            or earlier.queues is not snapshot.queues
            or earlier.kept is not snapshot.kept
            or earlier.unread != snapshot.unread
        ):
            return None
        with before.lock:
            simulator, before.simulator = before.simulator, None
        if simulator is None:
            return None
        old, new = before.state.usage, state.usage
        tree = simulator.tree
        with localcontext(CONTEXT):
            for queue in old.keys() | new.keys():
                was, now = old.get(queue, {}), new.get(queue, {})
                if was is now or was == now:
                    continue
                tree.remove(queue, was)
                tree.add(queue, now)
        simulator.rebase(state)
        return simulator

    def simulate(self, job: PendingWorkload, kind: str = WORKLOAD, source: str = "") -> Result:
        with self.lock:
            if self.simulator is None:  # its tree went to the next snapshot's simulator
                self.simulator = self._built(self.state)
            return self.simulator.simulate(job, kind, source)


def live(snapshot: Snapshot, policy: Policy, key: str = _SIMULATOR_KEY) -> LiveSimulator:
    """The snapshot's simulator (memoized on it under ``key``: one per key, each with its own lock)."""
    if policy is not snapshot.policy:  # memoized for the snapshot's own policy alone
        return LiveSimulator(snapshot, policy, key=key)
    return snapshot.remember(key, lambda: LiveSimulator(snapshot, policy, key=key), derived=True)  # type: ignore[no-any-return]


def simulate_object(simulator: LiveSimulator, obj: Mapping[str, Any], source: str = "", namespace: str = "") -> Result:
    """One object (JobSet, Job, Deployment, or a ``kueue.x-k8s.io`` Workload) as Kueue would see
    it submitted now. A Deployment is one Workload per pod: the answer is for its first pod, and
    the message says how many of its pods start now."""
    kind = str(obj.get("kind") or "")
    policy = simulator.policy
    tpu = policy.tpu.resource_name
    if kind == WORKLOAD:
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        document = obj if not namespace or (metadata or {}).get("namespace") else _with_namespace(obj, namespace)
        return simulator.simulate(submitted_workload(document, tpu), WORKLOAD, source)
    if kind not in JOB_KINDS:
        raise ValueError(f"kind {kind!r} cannot be simulated: give a JobSet, Job, Deployment or Workload")
    workload = read_workload(kind, dict(obj), policy, namespace)
    if workload.malformed:
        raise ValueError(f"{kind} {workload.name}: {workload.malformed[0].message}")
    return simulate_workload(simulator, workload, workload.labels, source)


def simulate_workload(
    simulator: LiveSimulator, workload: Workload, labels: Mapping[str, str], source: str = ""
) -> Result:
    """A job already read (``read_workload``), with the labels it will carry (the tier's defaults added)."""
    policy = simulator.policy
    kind = workload.kind
    queue = labels.get(policy.queue_label, "")
    priority_class = labels.get(policy.priority_label, "")
    ns = workload.namespace or "default"
    if priority_class and priority_class not in simulator.priorities:
        return Result(
            UNKNOWN,
            "",
            "",
            f"WorkloadPriorityClass {priority_class} is not in the state: the job's priority is unknown",
            source=source,
            kind=kind,
            namespace=ns,
            name=workload.name,
        )
    priority = simulator.priorities.get(priority_class, 0)
    key = f"{ns}/{workload.name}"
    job = PendingWorkload(key, key, ns, queue, priority, datetime.now(UTC), tuple(demands_of(workload)))
    result = simulator.simulate(job, kind, source)
    if kind == DEPLOYMENT and workload.replicas != 1:
        result = _pods_now(simulator, job, workload.replicas, result)
    return result


def line_key(workload: Workload, labels: Mapping[str, str], policy: Policy, shape: Hashable | None) -> Hashable:
    """The memo key of a job's ``[simulate]`` line on a snapshot: ``shape``, the key the engine
    memoizes the cluster rules' findings under (namespace, labels, tier and the spec's text), else
    the namespace, labels and podSets."""
    if shape is not None:
        return ("simulate line", shape)
    return (
        "simulate line",
        workload.kind,
        workload.namespace,
        labels.get(policy.queue_label, ""),
        labels.get(policy.priority_label, ""),
        workload.replicas,
        tuple(demands_of(workload)),
    )


def warning_line(
    snapshot: Snapshot, workload: Workload, labels: Mapping[str, str], policy: Policy, shape: Hashable | None = None
) -> str | None:
    """The webhook's ``[simulate]`` line for a job the rules admit, worked out now (on the line
    simulator); ``None`` when the answer is ``unknown`` (the cluster rules already name what the
    state lacks). Memoized on the snapshot under ``line_key``; ``kept_line`` reads it back."""

    def make() -> str:
        result = simulate_workload(live(snapshot, policy, LINE_SIMULATOR), workload, labels)
        return "" if result.outcome == UNKNOWN else result.warning()

    line: str = snapshot.remember(line_key(workload, labels, policy, shape), make)
    return line or None


def kept_line(snapshot: Snapshot, key: Hashable) -> str | None:
    """The line already worked out on ``snapshot`` under ``key`` (``""`` for one that says
    nothing), or ``None`` when none was: a dictionary read, never a simulation."""
    held = snapshot.memo.get(key)
    return held if isinstance(held, str) else None


def _pods_now(simulator: LiveSimulator, job: PendingWorkload, replicas: int, first: Result) -> Result:
    """How many of a Deployment's pods start now without preemption: the most pods that fit as one
    Workload, found by bisection (pods placed one by one could also split across flavors, so this is a
    floor)."""
    if first.outcome != ADMIT or replicas <= 1:
        note = f"a Deployment of {replicas} pods is one Workload per pod; this answer is for one pod"
        return dataclasses.replace(first, message=f"{first.message}; {note}")

    def fits(count: int) -> bool:
        podsets = tuple(dataclasses.replace(p, count=p.count * count) for p in job.podsets)
        return simulator.simulate(dataclasses.replace(job, podsets=podsets)).outcome == ADMIT

    low, high = 1, replicas
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    message = f"{first.message}; {low} of {replicas} pods start now (one Workload per pod)"
    if low < replicas:
        message += ", the rest wait or need preemption"
    return dataclasses.replace(first, message=message)


def _with_namespace(obj: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    metadata = dict(obj.get("metadata") or {})
    metadata["namespace"] = namespace
    return {**obj, "metadata": metadata}


def starts_now(result: Result) -> bool:
    return result.outcome in (ADMIT, PREEMPT)


def simulate_stored(snapshot: Snapshot, namespace: str, name: str, policy: Policy) -> Result | None:
    """The simulator's answer for the stored Workload ``namespace/name`` as if it were submitted now,
    itself left out of the state (its quota or its place in the queue); ``None`` when the snapshot
    holds no such Workload. Memoized on the snapshot per Workload: the state without it is a state of
    its own, its tree built anew, so an explain asked again of the same snapshot does not pay for it twice."""
    entry = snapshot.workloads.get((namespace, name))
    if entry is None:
        return None
    if not entry.shape:
        return Result(
            UNKNOWN,
            "",
            entry.cluster_queue,
            "the Workload holds quota or is not pending: its podSets as submitted are not kept, so it cannot be "
            "simulated as new",
            kind=WORKLOAD,
            namespace=namespace,
            name=name,
        )

    def make() -> Result:
        rest = snapshot.without([(namespace, name)])
        return live(rest, policy).simulate(entry.pending(namespace, name), WORKLOAD)

    if policy is not snapshot.policy:  # memoized for the snapshot's own policy alone
        return make()
    return snapshot.remember(("simulate stored", namespace, name), make)  # type: ignore[no-any-return]
