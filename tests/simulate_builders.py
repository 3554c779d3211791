"""Builders for the simulator's tests: Kueue-shaped objects in, the engine's state out.

ClusterQueues, Cohorts and Workloads are built as the API server stores them and read by
the project's own parsers (``parse_cluster_queue``, ``parse_cohort``, ``from_document``),
so the tests exercise the same path a real state takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from webhook.kube.quantity import parse_quantity
from webhook.kube.scheduling import string_map
from webhook.kueue.clusterqueue import parse_cluster_queue
from webhook.kueue.cohort import parse_cohort
from webhook.kueue.fair_sharing import FairSharing, fair_sharing
from webhook.kueue.flavorassigner import Assignment, FlavorAssigner
from webhook.kueue.localqueue import LocalQueueInfo, parse_local_queue
from webhook.kueue.podset import podset_demand
from webhook.kueue.preemption.common import Preemptor
from webhook.kueue.preemption.preemptor import Oracle
from webhook.kueue.resourceflavor import FlavorInfo, parse_flavor
from webhook.kueue.workload import AdmittedWorkload, PendingWorkload, read_workload, submitted_workload
from webhook.simulate.engine import Simulator
from webhook.simulate.result import Result
from webhook.simulate.state import TPU, State, simulation_of, tree_of

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NAMESPACE = "default"

#: a quota: "6" (nominal), or (nominal, borrowingLimit[, lendingLimit]) with None for unset
QuotaSpec = str | tuple[str, str | None] | tuple[str, str | None, str | None]
#: one resource group: flavor -> resource -> quota, flavors in order
Group = Mapping[str, Mapping[str, QuotaSpec]]


def from_document(obj: Mapping[str, Any], tpu: str = TPU) -> AdmittedWorkload | PendingWorkload | None:
    """A stored Workload document as the engine counts it: the one reader's projection, counted."""
    metadata = obj.get("metadata") or {}
    return read_workload(obj, tpu).counted(str(metadata.get("namespace", "")), str(metadata.get("name", "")))


@dataclass(frozen=True)
class Written:
    """What a ``state`` was built from, kept while recording; ``unexpressed`` says why it cannot be
    written out as objects (a state told what is missing, hand-made LocalQueues ...), if so."""

    queues: tuple[dict[str, Any], ...]
    cohorts: tuple[dict[str, Any], ...]
    workloads: tuple[dict[str, Any], ...]
    flavors: tuple[dict[str, Any], ...] | None
    fair: bool
    strategies: tuple[str, ...]
    unexpressed: str | None


@dataclass(frozen=True)
class Recorded:
    """One ``simulate`` call made while recording: what its state and job were built from."""

    written: Written | None
    #: the job's Workload document; None when ``job`` built it from podSet demands alone
    incoming: dict[str, Any] | None


#: a list while recording: each ``simulate`` or ``assign`` call appends what it was asked (``Recorded``)
RECORDING: list[Recorded] | None = None
#: id of a State or job built while recording -> (the object, what it was built from)
_SOURCES: dict[int, tuple[object, Any]] = {}


def start_recording() -> list[Recorded]:
    """Record every ``simulate`` call from now on, until ``stop_recording``."""
    global RECORDING
    RECORDING = []
    return RECORDING


def stop_recording() -> None:
    global RECORDING
    RECORDING = None
    _SOURCES.clear()


def _remember(built: object, source: Any) -> None:
    if RECORDING is not None:
        _SOURCES[id(built)] = (built, source)


def _source(built: object) -> Any:
    found = _SOURCES.get(id(built))
    return found[1] if found is not None and found[0] is built else None


def _resource_groups(groups: Sequence[Group]) -> list[dict[str, Any]]:
    out = []
    for group in groups:
        covered: list[str] = []
        flavors = []
        for flavor, resources in group.items():
            entries = []
            for resource, spec in resources.items():
                if resource not in covered:
                    covered.append(resource)
                parts = (spec,) if isinstance(spec, str) else spec
                entry: dict[str, Any] = {"name": resource, "nominalQuota": parts[0]}
                if len(parts) > 1 and parts[1] is not None:
                    entry["borrowingLimit"] = parts[1]
                if len(parts) > 2 and parts[2] is not None:
                    entry["lendingLimit"] = parts[2]
                entries.append(entry)
            flavors.append({"name": flavor, "resources": entries})
        out.append({"coveredResources": covered, "flavors": flavors})
    return out


def cluster_queue(
    name: str,
    *groups: Group,
    cohort: str | None = None,
    within: str | None = None,
    reclaim: str | None = None,
    borrow_within: str | None = None,
    threshold: int | None = None,
    when_can_borrow: str | None = None,
    when_can_preempt: str | None = None,
    preference: str | None = None,
    strategy: str | None = None,
    stop: str | None = None,
    weight: str | None = None,
) -> dict[str, Any]:
    """A ClusterQueue object as stored."""
    spec: dict[str, Any] = {"resourceGroups": _resource_groups(groups), "namespaceSelector": {}}
    if cohort:
        spec["cohortName"] = cohort
    preemption: dict[str, Any] = {}
    if within:
        preemption["withinClusterQueue"] = within
    if reclaim:
        preemption["reclaimWithinCohort"] = reclaim
    if borrow_within:
        preemption["borrowWithinCohort"] = {"policy": borrow_within}
        if threshold is not None:
            preemption["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
    if preemption:
        spec["preemption"] = preemption
    fungibility = {
        k: v
        for k, v in (
            ("whenCanBorrow", when_can_borrow),
            ("whenCanPreempt", when_can_preempt),
            ("preference", preference),
        )
        if v
    }
    if fungibility:
        spec["flavorFungibility"] = fungibility
    if strategy:
        spec["queueingStrategy"] = strategy
    if stop:
        spec["stopPolicy"] = stop
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def cohort(name: str, *groups: Group, parent: str | None = None, weight: str | None = None) -> dict[str, Any]:
    """A Cohort object as stored."""
    spec: dict[str, Any] = {"resourceGroups": _resource_groups(groups)}
    if parent:
        spec["parentName"] = parent
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def _workload_metadata(name: str, namespace: str, created: datetime) -> dict[str, Any]:
    """A Workload's metadata as these builders write it: its name doubles as its uid."""
    return {
        "name": name,
        "namespace": namespace,
        "uid": name,
        "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def admitted(
    name: str,
    queue: str,
    usage: Mapping[str, str],
    flavor: str = "default",
    priority: int = 0,
    at: datetime = NOW,
    created: datetime | None = None,
    evicted: bool = False,
    namespace: str = "",
    flavors: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Workload holding quota in ``queue``: ``usage`` resource -> amount, on ``flavor`` (or ``flavors``)."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": stamp}]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted", "lastTransitionTime": stamp})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": _workload_metadata(name, namespace, created or at),
        "spec": {"priority": priority, "queueName": queue, "podSets": []},
        "status": {
            "admission": {
                "clusterQueue": queue,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {r: (flavors or {}).get(r, flavor) for r in usage},
                        "resourceUsage": dict(usage),
                    }
                ],
            },
            "conditions": conditions,
        },
    }


def pending_document(
    name: str,
    queue: str,
    requests: Mapping[str, str],
    count: int = 1,
    priority: int = 0,
    created: datetime = NOW,
    namespace: str = NAMESPACE,
    active: bool = True,
) -> dict[str, Any]:
    """A pending Workload as stored: one podSet of ``count`` pods of ``requests``."""
    container = {"name": "c", "resources": {"requests": dict(requests)}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": _workload_metadata(name, namespace, created),
        "spec": {
            "active": active,
            "priority": priority,
            "queueName": queue,
            "podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [container]}}}],
        },
    }


def job(
    queue: str,
    requests: Mapping[str, str],
    count: int = 1,
    priority: int = 0,
    created: datetime = NOW,
    name: str = "in",
    podsets: Sequence[tuple[str, int, Mapping[str, str]]] = (),
    active: bool = True,
) -> PendingWorkload:
    """The job to simulate, in LocalQueue ``queue`` of the default namespace (one per ClusterQueue)."""
    document = pending_document(name, queue, requests, count, priority, created, active=active)
    workload = submitted_workload(document, TPU)
    if podsets:
        demands = tuple(
            podset_demand(n, {"containers": [{"name": "c", "resources": {"requests": dict(r)}}]}, c)
            for n, c, r in podsets
        )
        shaped = PendingWorkload(workload.key, workload.uid, workload.namespace, queue, priority, created, demands)
        _remember(shaped, None)
        return shaped
    _remember(workload, document)
    return workload


def state(
    queues: Iterable[dict[str, Any]],
    cohorts: Iterable[dict[str, Any]] = (),
    workloads: Iterable[dict[str, Any]] = (),
    flavors: Iterable[dict[str, Any]] | None = None,
    fair: bool = False,
    strategies: Sequence[str] = (),
    missing: Iterable[str] = (),
    local_queues: Mapping[tuple[str, str], LocalQueueInfo] | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> State:
    """The engine's state; each ClusterQueue gets a LocalQueue of its name in the default namespace,
    and every flavor the queues name exists without labels unless ``flavors`` are given."""
    queues_list, workload_list, cohorts = list(queues), list(workloads), list(cohorts)
    local_queues_given = local_queues is not None
    if flavors is not None:
        flavors = list(flavors)
    infos = {q.name: q for q in map(parse_cluster_queue, queues_list)}
    if flavors is None:
        flavor_infos = {name: FlavorInfo(name, {}) for q in infos.values() for name, _ in q.flavors}
    else:
        flavor_infos = {f.name: f for f in map(parse_flavor, flavors)}
    if local_queues is None:
        local_queues = {(NAMESPACE, name): LocalQueueInfo(NAMESPACE, name, name) for name in infos}
    docs = [from_document(w) for w in workload_list]
    fair_sharing = FairSharing(fair, tuple(strategies)) if strategies else FairSharing(fair)
    built = State(
        infos,
        {c.name: c for c in map(parse_cohort, cohorts)},
        flavor_infos,
        local_queues,
        tuple(w for w in docs if isinstance(w, AdmittedWorkload)),
        tuple(w for w in docs if isinstance(w, PendingWorkload)),
        fair_sharing,
        frozenset(missing),
        namespace_labels=namespace_labels,
        now=NOW + timedelta(hours=1),
    )
    if RECORDING is not None:
        unexpressed = (
            "a state told what it lacks (missing kinds)"
            if missing
            else "LocalQueues made by hand, not as objects"
            if local_queues_given
            else "Namespace labels given without Namespace objects"
            if namespace_labels is not None
            else None
        )
        written = Written(
            tuple(queues_list),
            tuple(cohorts),
            tuple(workload_list),
            None if flavors is None else tuple(flavors),
            fair,
            tuple(strategies),
            unexpressed,
        )
        _remember(built, written)
    return built


def simulate(st: State, incoming: PendingWorkload) -> Result:
    if RECORDING is not None:
        RECORDING.append(Recorded(_source(st), _source(incoming)))
    return Simulator(st, tpu="google.com/tpu").simulate(incoming)


def victims(result: Result) -> set[tuple[str, str]]:
    """The victims as (name, reason)."""
    return {(p.workload.rpartition("/")[2], p.reason) for p in result.preemptions}


def targets(
    st: State,
    queue: str,
    requests: Mapping[str, str],
    preempt: Mapping[str, str],
    fit: Mapping[str, str] | None = None,
    priority: int = 0,
    created: datetime = NOW,
    usage: Mapping[tuple[str, str], str] | None = None,
) -> set[tuple[str, str]]:
    """Kueue's ``GetTargets`` as its tests call it: an assignment given (resource -> flavor, Preempt
    or Fit mode) and the victims asked for, as (name, reason); the tree is checked unchanged after.
    ``usage`` ((flavor, resource) -> amount) replaces ``requests`` when podSets use several flavors."""
    tree = tree_of(st)
    before = {name: dict(node.usage) for name, node in (*tree.queues.items(), *tree.cohorts.items())}
    if usage is None:
        total = {(flavor, r): parse_quantity(requests[r]) for r, flavor in {**preempt, **(fit or {})}.items()}
        need = frozenset((flavor, r) for r, flavor in preempt.items())
    else:
        total = {fr: parse_quantity(v) for fr, v in usage.items()}
        need = frozenset(total)
    found = simulation_of(st, tree).targets(Preemptor(tree.queues[queue], priority, created, total, need))
    after = {name: dict(node.usage) for name, node in (*tree.queues.items(), *tree.cohorts.items())}
    assert {k: {fr: v for fr, v in u.items() if v} for k, u in after.items()} == {
        k: {fr: v for fr, v in u.items() if v} for k, u in before.items()
    }
    return {(v.workload.key.rpartition("/")[2], v.reason) for v in found}


def assign(st: State, queue: str, incoming: PendingWorkload) -> Assignment:
    """The flavor assignment alone, as Kueue's ``TestAssignFlavors`` asks for it."""
    if RECORDING is not None:
        RECORDING.append(Recorded(_source(st), _source(incoming)))
    tree = tree_of(st)
    return FlavorAssigner(
        tree.queues[queue],
        st.flavors,
        st.fair_sharing.enabled,
        Oracle(simulation_of(st, tree), incoming.priority, incoming.created),
    ).assign(incoming.podsets)


def chosen(assignment: Assignment) -> list[dict[str, tuple[str, str]]]:
    """Per podSet: resource -> (flavor, mode)."""
    return [{r: (p.flavors[r], p.modes[r]) for r in sorted(p.flavors)} for p in assignment.podsets]


# ---------------------------------------------------------------- static placement

#: the node labels of a static TPU node pool, and the level a slice is placed at
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def tpu_flavor(topology: str = "4x4x4") -> dict[str, Any]:
    """A TAS ResourceFlavor of static ``topology`` pools, as RFC-0033 4.6 defines them."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": f"tpu7x-{topology}"},
        "spec": {
            "nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu7x", TOPOLOGY_LABEL: topology},
            "topologyName": "nodepool-topology",
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def node(pool: str, index: int = 0, topology: str = "4x4x4", cordoned: bool = False) -> dict[str, Any]:
    """One host of static node pool ``pool`` (named ``{pool}-{index}``)."""
    name = f"{pool}-{index}"
    labels = {
        HOSTNAME_LABEL: name,
        NODEPOOL_LABEL: pool,
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        TOPOLOGY_LABEL: topology,
    }
    spec: dict[str, Any] = {"taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]}
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"google.com/tpu": "4", "cpu": "200", "memory": "800Gi"}},
    }


def local_queue(name: str, cluster_queue: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def placed(document: dict[str, Any], assignment: Any) -> dict[str, Any]:
    """``document`` (an ``admitted`` Workload) with ``assignment`` as its podSet's ``topologyAssignment``."""
    (podset,) = document["status"]["admission"]["podSetAssignments"]
    podset["topologyAssignment"] = assignment
    return document


def on_pools(*pools: str) -> dict[str, Any]:
    """A v1beta2 ``topologyAssignment`` at the node-pool level: one domain per pool, 16 pods each."""
    return {
        "levels": [NODEPOOL_LABEL],
        "slices": [
            {
                "domainCount": len(pools),
                "valuesPerLevel": [{"individual": {"roots": list(pools)}}],
                "podCounts": {"universal": 16},
            }
        ],
    }


def on_hosts(pool: str, *indexes: int) -> dict[str, Any]:
    """A v1beta2 ``topologyAssignment`` at the hostname level (hosts ``{pool}-{i}``, a common prefix)."""
    return {
        "levels": [HOSTNAME_LABEL],
        "slices": [
            {
                "domainCount": len(indexes),
                "valuesPerLevel": [{"individual": {"prefix": f"{pool}-", "roots": [str(i) for i in indexes]}}],
                "podCounts": {"universal": 1},
            }
        ],
    }


def finished(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with ``Finished`` True: Kueue no longer counts it (nor its hosts)."""
    stamp = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    document["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "lastTransitionTime": stamp}
    )
    return document


def static_job(
    name: str, queue: str, slices: int, priority: int = 0, topology: str = "4x4x4", namespace: str = NAMESPACE
) -> dict[str, Any]:
    """A Workload asking ``slices`` slices of static ``topology`` (4 chips a pod, one pod per host)."""
    chips = 1
    for size in topology.split("x"):
        chips *= int(size)
    container = {"name": "c", "resources": {"requests": {"google.com/tpu": "4"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2030-01-01T00:00:00Z"},
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "workers",
                    "count": slices * chips // 4,
                    # what Kueue writes from the static job's slice annotations
                    "topologyRequest": {"podSetSliceRequiredTopology": NODEPOOL_LABEL, "podSetSliceSize": chips // 4},
                    "template": {"spec": {"nodeSelector": {TOPOLOGY_LABEL: topology}, "containers": [container]}},
                }
            ],
        },
    }


def state_from_objects(
    objects: Iterable[Mapping[str, Any]],
    configuration: Mapping[str, Any] | None = None,
    missing: Iterable[str] = (),
    now: datetime | None = None,
) -> State:
    """The engine's state of every ClusterQueue, Cohort, ResourceFlavor, LocalQueue, Namespace and
    Workload in ``objects`` (other kinds are ignored), read by the project's parsers, for tests and
    benchmarks that hand the engine documents; Namespaces' labels are used only when some are given.
    (The product builds its state from the cluster's snapshot: ``webhook.simulate.live.state_of``.)"""
    queues, cohorts, flavors, local_queues = {}, {}, {}, {}
    labels: dict[str, dict[str, str]] = {}
    admitted_workloads: list[AdmittedWorkload] = []
    pending: list[PendingWorkload] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "ClusterQueue":
            queue = parse_cluster_queue(obj)
            queues[queue.name] = queue
        elif kind == "Cohort":
            parsed = parse_cohort(obj)
            cohorts[parsed.name] = parsed
        elif kind == "ResourceFlavor":
            flavor = parse_flavor(obj)
            flavors[flavor.name] = flavor
        elif kind == "LocalQueue":
            local = parse_local_queue(obj)
            local_queues[(local.namespace, local.name)] = local
        elif kind == "Namespace":
            metadata = obj.get("metadata") or {}
            labels[str(metadata.get("name", ""))] = string_map(metadata.get("labels"))
        elif kind == "Workload":
            workload = from_document(obj)
            if isinstance(workload, AdmittedWorkload):
                admitted_workloads.append(workload)
            elif workload is not None:
                pending.append(workload)
    return State(
        queues,
        cohorts,
        flavors,
        local_queues,
        tuple(admitted_workloads),
        tuple(pending),
        fair_sharing(configuration),
        frozenset(missing),
        labels or None,
        now or datetime.now().astimezone(),
    )
