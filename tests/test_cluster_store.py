"""The store's incremental totals and published snapshots against a recomputation from scratch.

The store keeps totals current as events arrive (the chips ledger, what ClusterQueues
store in their cohorts, the node index's shapes, pools and chips) and publishes immutable
snapshots that share what did not change, answers memoized on them included. Each case
applies a random sequence of watch events (adds, updates, status-only updates, deletes,
duplicates of an event already applied, relists of a kind in any order, objects arriving
before the ones they name) with a fixed seed, and after every event compares each total
with the same total worked out from the objects alone, every answer a rule reads of the
published snapshot with the answer of a snapshot built from scratch from the objects then
held, and the answers of the snapshot published before the event with what it said then.
"""

from __future__ import annotations

import copy
import json
import random
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from builders import jobset
from cluster_fixtures import OBJECTS, POLICY

from webhook.cluster import kinds as k
from webhook.cluster.nodes import NodeIndex
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.store import ClusterStore, Key, object_key
from webhook.engine.decision import AdmissionFacts, decide
from webhook.kueue.cohort import stored_in_parent
from webhook.kueue.workload import HOLDS, WAITS
from webhook.objects.readers import read_workload
from webhook.quota.podsets import demands_of

TPU = "google.com/tpu"
STEPS = 150
TOPOLOGIES = ("4x4x4", "4x4x8", "4x8x8")
QUEUE_NAMES = ("team-a-queue", "team-b-queue", "team-c-queue", "default", "missing-queue")
CLUSTER_QUEUES = ("team-a", "team-b", "dev", "team-c", "team-z")
COHORTS = ("tpu-pool", "pool-root", "pool-other")
FIXTURES: dict[k.Kind, list[dict[str, Any]]] = defaultdict(list)
for _obj in OBJECTS:
    if _obj["kind"] in k.BY_KIND:
        FIXTURES[k.BY_KIND[_obj["kind"]]].append(_obj)

Objects = dict[k.Kind, dict[Key, dict[str, Any]]]


# ---------------------------------------------------------------- random objects


def _workload(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    spec, status = obj["spec"], obj.setdefault("status", {})
    change = rng.choice(["status", "queue", "priority", "admit", "pend", "finish", "deactivate", "refuse", "count"])
    if change == "status":  # what most Workload events are: a condition's time or message
        status["conditions"] = [{**c, "message": f"step {rng.random()}"} for c in status.get("conditions") or []]
    elif change == "queue":
        spec["queueName"] = rng.choice(QUEUE_NAMES)
    elif change == "priority":
        spec["priorityClassRef"] = {"name": rng.choice(["guaranteed", "best-effort"])}
    elif change == "admit":
        flavor = f"tpu7x-{rng.choice(TOPOLOGIES)}"
        status["conditions"] = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]
        status["admission"] = {
            "clusterQueue": rng.choice(CLUSTER_QUEUES),
            "podSetAssignments": [
                {"name": "workers", "flavors": {TPU: flavor}, "resourceUsage": {TPU: str(rng.choice([16, 64, 128]))}}
            ],
        }
    elif change == "pend":
        obj["status"] = {"conditions": []}
    elif change == "finish":
        status["conditions"] = [*(status.get("conditions") or []), {"type": "Finished", "status": "True"}]
    elif change == "deactivate":
        spec["active"] = rng.random() < 0.3
    elif change == "refuse":
        status["conditions"] = [{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible"}]
        status.pop("admission", None)
    else:
        podset = spec["podSets"][0]
        podset["count"] = rng.choice([4, 16, 32, 64])
        selector = podset["template"]["spec"].setdefault("nodeSelector", {})
        selector["cloud.google.com/gke-tpu-topology"] = rng.choice(TOPOLOGIES)
    return obj


def _cluster_queue(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    spec = obj["spec"]
    change = rng.choice(["status", "nominal", "cohort", "lending"])
    tpu = next(
        (r for f in spec["resourceGroups"][0]["flavors"] for r in f["resources"] if r["name"] == TPU),
        spec["resourceGroups"][0]["flavors"][0]["resources"][0],
    )
    if change == "status":
        obj["status"] = {"admittedWorkloads": rng.randrange(10)}
    elif change == "nominal":
        tpu["nominalQuota"] = rng.choice([0, 64, 256, 512])
    elif change == "cohort":
        spec["cohortName"] = rng.choice([*COHORTS, None])
    else:
        tpu["lendingLimit"] = rng.choice([0, 64, 128])
    return obj


def _cohort(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    obj["metadata"]["name"] = rng.choice(COHORTS)
    parent = rng.choice([None, "pool-root", "pool-other"])
    obj["spec"] = {"parentName": parent} if parent and parent != obj["metadata"]["name"] else {}
    if rng.random() < 0.5:
        flavor = f"tpu7x-{rng.choice(TOPOLOGIES)}"
        quota = {"name": TPU, "nominalQuota": rng.choice([64, 128])}
        obj["spec"]["resourceGroups"] = [
            {"coveredResources": [TPU], "flavors": [{"name": flavor, "resources": [quota]}]}
        ]
    return obj


def _node(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    change = rng.choice(["heartbeat", "cordon", "allocatable", "topology"])
    if change == "heartbeat":
        obj.setdefault("status", {})["conditions"] = [{"type": "Ready", "lastHeartbeatTime": str(rng.random())}]
    elif change == "cordon":
        obj.setdefault("spec", {})["unschedulable"] = rng.random() < 0.5
    elif change == "allocatable":
        obj["status"]["allocatable"]["cpu"] = rng.choice(["96", "208", "300"])
    else:
        obj["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] = rng.choice(TOPOLOGIES)
    return obj


def _local_queue(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    obj["spec"]["clusterQueue"] = rng.choice(CLUSTER_QUEUES)
    return obj


def _flavor(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    spec = obj.setdefault("spec", {})
    if rng.random() < 0.5:
        spec.pop("topologyName", None)
    else:
        spec["topologyName"] = "nodepool-topology"
    return obj


def _namespace(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    obj["metadata"]["labels"]["scheduling.antgroup.com/kueue-tier"] = rng.choice(["production", "dev"])
    return obj


CHANGES = {
    k.WORKLOADS: _workload,
    k.CLUSTER_QUEUES: _cluster_queue,
    k.COHORTS: _cohort,
    k.NODES: _node,
    k.LOCAL_QUEUES: _local_queue,
    k.RESOURCE_FLAVORS: _flavor,
    k.NAMESPACES: _namespace,
}
#: Workloads come and go most, then Nodes and queues
WEIGHTS = {
    k.WORKLOADS: 8,
    k.NODES: 3,
    k.CLUSTER_QUEUES: 2,
    k.LOCAL_QUEUES: 2,
    k.COHORTS: 1,
    k.RESOURCE_FLAVORS: 1,
    k.NAMESPACES: 1,
}


def _variant(rng: random.Random, kind: k.Kind, held: dict[Key, dict[str, Any]]) -> dict[str, Any]:
    """A changed copy of a held object, or of a fixture (an object added, perhaps under a new name)."""
    if held and rng.random() < 0.6:
        base = rng.choice(list(held.values()))
    else:
        base = copy.deepcopy(rng.choice(FIXTURES[kind]))
        if kind in (k.WORKLOADS, k.NODES) and rng.random() < 0.5:
            base["metadata"]["name"] = f"{base['metadata']['name']}-{rng.randrange(8)}"
    return CHANGES[kind](rng, base)


class Versions:
    """The API server's resourceVersion: one counter for every kind."""

    def __init__(self) -> None:
        self.last = 0

    def stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.last += 1
        obj["metadata"]["resourceVersion"] = str(self.last)
        return obj


def events(
    seed: int, store: ClusterStore, weights_of: dict[k.Kind, int] = WEIGHTS, held: Objects | None = None
) -> Iterator[tuple[str, Objects]]:
    """Apply ``STEPS`` random events to ``store`` (``held``: what it holds already); after each,
    (what it was, the objects now held)."""
    rng = random.Random(seed)
    versions = Versions()
    held = held if held is not None else {kind: {} for kind in k.KINDS}
    kinds = list(weights_of)
    weights = list(weights_of.values())
    for _ in range(STEPS):
        kind = rng.choices(kinds, weights)[0]
        roll = rng.random()
        objects = held[kind]
        if roll < 0.6:
            obj = versions.stamp(_variant(rng, kind, objects))
            key = object_key(kind, obj)
            event = "MODIFIED" if key in objects else "ADDED"
            store.apply(kind, event, obj)
            objects[key] = obj
            yield f"{event} {kind.name} {key}", held
        elif roll < 0.75 and objects:
            key = rng.choice(list(objects))
            store.apply(kind, "DELETED", objects.pop(key))
            yield f"DELETED {kind.name} {key}", held
        elif roll < 0.82 and objects:
            key = rng.choice(list(objects))  # the same event again (a watch resumed from an older version)
            store.apply(kind, "MODIFIED", copy.deepcopy(objects[key]))
            yield f"duplicate {kind.name} {key}", held
        else:
            listed = {key: obj for key, obj in objects.items() if rng.random() < 0.8}
            for _ in range(rng.randrange(3)):
                obj = versions.stamp(_variant(rng, kind, objects))
                listed[object_key(kind, obj)] = obj
            order = list(listed.values())
            rng.shuffle(order)
            store.replace(kind, [copy.deepcopy(obj) for obj in order], atomic=rng.random() < 0.5)
            held[kind] = listed
            yield f"relist {kind.name} ({len(listed)})", held


def synced(store: ClusterStore) -> ClusterStore:
    for kind in k.KINDS:
        store.availability.mark_synced(kind.name)
    return store


def from_scratch(held: Objects) -> ClusterStore:
    store = ClusterStore(POLICY)
    for kind in k.KINDS:
        store.replace(kind, [copy.deepcopy(obj) for obj in held[kind].values()])
    return synced(store)


# ---------------------------------------------------------------- the totals, recomputed


def _nonzero(counter: dict[Any, Any]) -> dict[Any, Any]:
    return {key: value for key, value in counter.items() if value}


def ledger_totals(store: ClusterStore) -> tuple[dict[Any, int], dict[Any, int], dict[Any, dict[Any, int]]]:
    """Chips in use, guaranteed chips held and guaranteed shapes waiting, summed over the Workloads held."""
    in_use: dict[tuple[str, str], int] = defaultdict(int)
    holding: dict[tuple[str, str], int] = defaultdict(int)
    waiting: dict[tuple[str, str], dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    guaranteed = POLICY.guaranteed_priority_class
    for (namespace, _), entry in store.counted.entries.items():
        if entry.state == HOLDS:
            for flavor, chips in entry.chips:
                in_use[(entry.cluster_queue, flavor)] += chips
                if entry.priority == guaranteed:
                    holding[(entry.cluster_queue, flavor)] += chips
        elif entry.state == WAITS and entry.priority == guaranteed:
            waiting[(namespace, entry.local_queue)][entry.shape] += 1
    return _nonzero(in_use), _nonzero(holding), {q: dict(shapes) for q, shapes in waiting.items()}


def usage_totals(store: ClusterStore) -> dict[tuple[str, str, str], Decimal]:
    """Usage per (ClusterQueue, flavor, resource) of every admitted Workload, summed over the Workloads held."""
    usage: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for entry in store.counted.entries.values():
        if entry.state == HOLDS:
            for flavor, resource, amount in entry.usage:
                usage[(entry.cluster_queue, flavor, resource)] += amount
    return _nonzero(usage)


def cohort_totals(store: ClusterStore) -> dict[str, dict[Any, Decimal]]:
    """What the member ClusterQueues store in each cohort, summed over the ClusterQueues held."""
    totals: dict[str, dict[Any, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for queue in store.cluster_queues.values():
        if queue.cohort:
            for key, amount in stored_in_parent(queue).items():
                totals[queue.cohort][key] += amount
    return {cohort: _nonzero(sums) for cohort, sums in totals.items()}


def pending_totals(store: ClusterStore) -> dict[str, dict[str, int]]:
    """Per ClusterQueue, its guaranteed chips pending per flavor, summed over the Workloads held."""
    out: dict[str, dict[str, int]] = {}
    for queue in sorted({*store.cluster_queues, *CLUSTER_QUEUES}):
        sums: dict[str, int] = defaultdict(int)
        for (namespace, _), entry in store.counted.entries.items():
            if entry.state != WAITS or entry.priority != POLICY.guaranteed_priority_class:
                continue
            if store.local_queues.get((namespace, entry.local_queue)) != queue:
                continue
            assignment = store.snapshot().queues.assigner.assign(queue, entry.shape)
            if assignment.fits:
                for flavor, chips in assignment.usage(entry.shape, TPU).items():
                    sums[flavor] += int(chips)
        out[queue] = _nonzero(sums)
    return out


def node_totals(index: NodeIndex) -> tuple[Any, ...]:
    return (
        index.accelerator_chips,
        {t: _nonzero(dict(pools)) for t, pools in index.pools.items() if _nonzero(dict(pools))},
        _nonzero(dict(index.advertised)),
        {shape: names for shape, names in index.shapes.items() if names},
        {item: names for item, names in index.label_index.items() if names},
    )


def probes() -> list[dict[str, Any]]:
    """Jobs whose decisions read every cluster answer: guaranteed and not, one and two slices, each topology."""
    jobs = []
    for queue in ("team-a-queue", "team-b-queue", "team-c-queue", "missing-queue"):
        for topology in TOPOLOGIES:
            for replicas, priority in ((1, "guaranteed"), (2, "guaranteed"), (2, "best-effort")):
                job = jobset().queue(queue).priority(priority).replicas(replicas)
                job.node_selector("cloud.google.com/gke-tpu-topology", topology)
                jobs.append(job.obj())
    return jobs


PROBES = probes()
PROBE_TEXTS = [json.dumps(job).encode() for job in PROBES]
FACTS = AdmissionFacts(namespace="kubemaker", stage="validate", path_tier="production")


def answers(store: ClusterStore | Snapshot) -> list[Any]:
    """Every quota and node answer the cluster rules read, for every queue and flavor held or named."""
    out: list[Any] = []
    view = store.snapshot()
    queues = view.queues
    flavors = sorted({*queues.flavors, *(f"tpu7x-{t}" for t in TOPOLOGIES)})
    for queue in sorted({*queues.cluster_queues, *CLUSTER_QUEUES}):
        for flavor in flavors:
            out.append((queue, flavor, view.balance(queue, flavor), view.in_use(queue, flavor)))
            out += [view.potential(queue, flavor, r) for r in (TPU, "cpu", "ephemeral-storage")]
        for job in PROBES[::3]:
            demands = demands_of(read_workload("JobSet", job, POLICY, "kubemaker"))
            out += [view.assign(queue, demands), view.assign(queue, demands, within_balance=True)]
    out += [view.accelerator_chips(), view.static_topologies(), [view.node_pools(t) for t in TOPOLOGIES]]
    # decoded and as the API server sends them (their text), each memoized on the snapshot
    for job in (*PROBES, *PROBE_TEXTS):
        decision = decide(job, FACTS, POLICY, store)
        out.append(([f.line() for f in decision.findings], decision.warnings))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_totals_match_a_recomputation_after_every_event(seed: int) -> None:
    store = synced(ClusterStore(POLICY))
    before: tuple[Snapshot, list[Any]] | None = None
    for step, (event, held) in enumerate(events(seed, store)):
        where = f"seed {seed}, step {step}: {event}"
        fresh = from_scratch(held)
        ledger = store.counted.ledger
        assert (_nonzero(ledger.in_use), _nonzero(ledger.holding), dict(ledger.waiting)) == ledger_totals(store), where
        assert ledger_totals(store) == ledger_totals(fresh), where
        members = store.members
        assert {c: _nonzero(dict(members.stored(c) or {})) for c in cohort_totals(store)} == cohort_totals(store), where
        assert all(members.stored(c) is None for c in COHORTS if c not in cohort_totals(store)), where
        assert cohort_totals(store) == cohort_totals(fresh), where
        assert node_totals(store.node_index) == node_totals(fresh.node_index), where
        assert _nonzero(ledger.usage) == usage_totals(store) == usage_totals(fresh), where
        # the guaranteed chips pending per queue, as the published snapshot sums them
        kept = {queue: store.snapshot().quota.pending(queue) for queue in pending_totals(store)}
        assert kept == pending_totals(store) == pending_totals(fresh), where
        assert {kind: set(store.held_keys(kind)) for kind in k.KINDS} == {kind: set(held[kind]) for kind in k.KINDS}, (
            where
        )
        assert store.documents.by_kind == fresh.documents.by_kind, where  # the admin guard's copy of Kueue's objects
        # and as the published snapshot carries it (copied only for the kinds that changed)
        assert store.snapshot().documents.by_kind == fresh.snapshot().documents.by_kind, where
        if before is not None:  # a snapshot published before the event answers as it did then
            assert answers(before[0]) == before[1], where
            before = None
        if step % 3 == 0 or step == STEPS - 1:  # the answers (their memos warm between events)
            now = answers(store)
            assert now == answers(fresh), where
            before = (store.snapshot(), now)


@pytest.mark.parametrize("seed", [4, 5])
def test_pending_chips_move_with_workload_events(seed: int) -> None:
    """Between two changes to the queues, each queue's pending chips move with every Workload event."""
    store = synced(ClusterStore(POLICY))
    held: Objects = {kind: {} for kind in k.KINDS}
    for kind, objects in FIXTURES.items():
        if kind is not k.WORKLOADS:
            store.replace(kind, copy.deepcopy(objects))
            held[kind] = {object_key(kind, obj): obj for obj in objects}
    for step, (event, now) in enumerate(events(seed, store, {k.WORKLOADS: 1}, held)):
        kept = {queue: store.snapshot().quota.pending(queue) for queue in pending_totals(store)}
        assert kept == pending_totals(store) == pending_totals(from_scratch(now)), f"seed {seed}, step {step}: {event}"
        assert answers(store)[-len(PROBES) :] == answers(from_scratch(now))[-len(PROBES) :], event


def test_a_status_only_workload_update_moves_nothing() -> None:
    """Kueue writes a Workload's status many times over its life: the snapshot's parts, and its memos,
    survive it (only the Workload records explain reads are new)."""
    store = synced(ClusterStore(POLICY))
    for kind, objects in FIXTURES.items():
        store.replace(kind, objects)
    pending = copy.deepcopy(next(o for o in FIXTURES[k.WORKLOADS] if "pending" in o["metadata"]["name"]))
    snapshot = store.snapshot()
    before = snapshot.balance("team-a", "tpu7x-4x4x4")
    pending["metadata"]["resourceVersion"] = "status-1"
    pending.setdefault("status", {})["conditions"] = [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]
    store.apply(k.WORKLOADS, "MODIFIED", pending)
    new = store.snapshot()
    assert [new.memo, new.queues, new.nodes, new.ledger, new.workloads, new.version] == [
        snapshot.memo,
        snapshot.queues,
        snapshot.nodes,
        snapshot.ledger,
        snapshot.workloads,
        snapshot.version,
    ]
    assert all(
        a is b
        for a, b in zip(
            [new.memo, new.queues, new.ledger], [snapshot.memo, snapshot.queues, snapshot.ledger], strict=True
        )
    )
    assert store.snapshot() is new
    assert new.balance("team-a", "tpu7x-4x4x4") == before
    pending["metadata"]["resourceVersion"] = "admitted"
    pending["spec"]["priorityClassRef"]["name"] = "best-effort"  # no longer counts in the balance
    store.apply(k.WORKLOADS, "MODIFIED", pending)
    after = store.snapshot().balance("team-a", "tpu7x-4x4x4")
    assert after.waiting == before.waiting - 64 and after.holding == before.holding
