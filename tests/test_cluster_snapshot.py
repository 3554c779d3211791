"""Answers memoized on a snapshot are the fresh ones (``webhook.cluster.snapshot``).

The engine memoizes the cluster family's findings on the request's snapshot per job shape
(``webhook.rules.cluster.recall_key``). A key that leaves out something a rule reads would
hand one job another's answer, so every variant below changes one thing the cluster rules
read, and each is decided right after every other (the memo holding the other's answer)
and compared with a decision against a store whose every snapshot is new. The random
event sequences of ``tests/test_cluster_store.py`` check that every change to the store
reaches the next snapshot, and that a snapshot published before a change answers as it did.
"""

from __future__ import annotations

import copy
import gc
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from builders import deployment, job, jobset
from cluster_fixtures import OBJECTS, POLICY, team_a_workload

from webhook.cluster import kinds as k
from webhook.cluster import memo as memo_module
from webhook.cluster.availability import Availability
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.store import ClusterStore
from webhook.cluster.workloadindex import CountedWorkloads
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.kueue.workload import HOLDS, WAITS
from webhook.objects.jsontext import plain_json
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.simulate.live import warning_line

TPU = "google.com/tpu"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
TOLERATION = {"key": TPU, "operator": "Exists", "effect": "NoSchedule"}


def guaranteed(queue: str = "team-a-queue") -> Any:
    return jobset().queue(queue).priority("guaranteed").replicas(1)


def with_spec(build: Any, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj: dict[str, Any] = build.obj()
    change(obj)
    return obj


def add_replicated_job(obj: dict[str, Any]) -> None:
    jobs = obj["spec"]["replicatedJobs"]
    jobs.append(copy.deepcopy(jobs[0]) | {"name": "more"})


def facts(kind: str = JOBSET, namespace: str = "kubemaker", tier: str = "production", **more: Any) -> AdmissionFacts:
    return AdmissionFacts(namespace=namespace, stage="validate", path_tier=tier, kind=kind, **more)


def two_slices() -> Any:
    return guaranteed().replicas(2)


def big_pods() -> Any:
    return guaranteed().request("cpu", "300")


SIDECAR = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300"}}}
JOB_FACTS, DEPLOYMENT_FACTS = facts(JOB), facts(DEPLOYMENT)

#: (name, request facts, object): most differ from a neighbour in one thing a cluster rule reads
VARIANTS: list[tuple[str, AdmissionFacts, dict[str, Any]]] = [
    ("guaranteed, one slice", facts(), guaranteed().obj()),
    ("another name", facts(), guaranteed().name("other-name").obj()),
    ("team-b", facts(), guaranteed("team-b-queue").obj()),
    ("team-c (storage not covered)", facts(), guaranteed("team-c-queue").obj()),
    ("missing queue", facts(), guaranteed("missing-queue").obj()),
    ("no queue label", facts(), guaranteed().queue(None).obj()),
    ("dev tier, the default queue injected", facts(tier="dev"), guaranteed().queue(None).obj()),
    ("dev tier, the default queue written", facts(tier="dev"), guaranteed("default").obj()),
    ("namespace labels given", facts(namespace_labels={"team": "x"}), guaranteed().obj()),
    ("two slices", facts(), two_slices().obj()),
    ("two slices, best-effort", facts(), two_slices().priority("best-effort").obj()),
    ("two slices, no priority", facts(), two_slices().priority(None).obj()),
    ("two slices, team-b", facts(), two_slices().queue("team-b-queue").obj()),
    ("twenty slices", facts(), guaranteed().replicas(20).obj()),
    ("parallelism 64", facts(), guaranteed().parallelism(64).obj()),
    ("8 chips a pod", facts(), guaranteed().request(TPU, "8").request(TPU, "8", kind="limits").obj()),
    ("4 chips as a number", facts(), guaranteed().request(TPU, 4).request(TPU, 4, kind="limits").obj()),
    ("4.0 chips", facts(), guaranteed().request(TPU, 4.0).request(TPU, 4.0, kind="limits").obj()),
    ("300 CPUs", facts(), big_pods().obj()),
    (
        "300 CPUs, podSet renamed",
        facts(),
        with_spec(big_pods(), lambda o: o["spec"]["replicatedJobs"][0].update(name="w2")),
    ),
    ("301 CPUs", facts(), guaranteed().request("cpu", "301").obj()),
    ("300 CPUs as a limit", facts(), guaranteed().request("cpu", "300", kind="limits").obj()),
    ("ephemeral storage", facts(), guaranteed().request("ephemeral-storage", "10Gi").obj()),
    ("ephemeral storage, team-c", facts(), guaranteed("team-c-queue").request("ephemeral-storage", "10Gi").obj()),
    (
        "storage as a limit, team-c",
        facts(),
        guaranteed("team-c-queue").request("ephemeral-storage", "1Gi", kind="limits").obj(),
    ),
    ("a large init container", facts(), guaranteed().init_containers([SIDECAR | {"restartPolicy": "Never"}]).obj()),
    ("a large sidecar", facts(), guaranteed().init_containers([SIDECAR]).obj()),
    ("topology 4x4x8", facts(), guaranteed().node_selector(TOPOLOGY, "4x4x8").obj()),
    ("topology 8x8x8", facts(), guaranteed().node_selector(TOPOLOGY, "8x8x8").obj()),
    ("an extra selector", facts(), guaranteed().node_selector("pool", "blue").obj()),
    ("tolerates the TPU taint", facts(), guaranteed().tolerations([TOLERATION]).obj()),
    ("tolerates nothing", facts(), guaranteed().tolerations([]).obj()),
    ("affinity no flavor has", facts(), guaranteed().required_affinity(TOPOLOGY, "In", ["9x9x9"]).obj()),
    ("affinity 4x4x4", facts(), guaranteed().required_affinity(TOPOLOGY, "In", ["4x4x4"]).obj()),
    ("a second replicated job", facts(), with_spec(guaranteed(), add_replicated_job)),
    ("a second replicated job, 300 CPUs", facts(), with_spec(big_pods(), add_replicated_job)),
    ("namespace default", facts(namespace="default"), guaranteed().namespace("default").obj()),
    ("namespace falcon-jobs", facts(namespace="falcon-jobs"), guaranteed().namespace("falcon-jobs").obj()),
    ("a Job", JOB_FACTS, job().queue("team-a-queue").priority("guaranteed").obj()),
    ("a Job, 300 CPUs", JOB_FACTS, job().queue("team-a-queue").priority("guaranteed").request("cpu", "300").obj()),
    ("a Job, parallelism 64", JOB_FACTS, job().queue("team-a-queue").priority("guaranteed").parallelism(64).obj()),
    ("a Deployment, 400 replicas", DEPLOYMENT_FACTS, deployment().queue("team-a-queue").replicas(400).obj()),
    ("a Deployment, 600 replicas", DEPLOYMENT_FACTS, deployment().queue("team-a-queue").replicas(600).obj()),
    (
        "a Deployment, 600 replicas, dev tier",
        facts(DEPLOYMENT, tier="dev"),
        deployment().queue("team-a-queue").replicas(600).obj(),
    ),
]


def answer(decision: Decision) -> tuple[Any, ...]:
    """What the request is answered: every finding (rule, path, words, action), warning and skip."""
    lines = [(f.line(), f.action) for f in decision.findings]
    return decision.allowed, lines, decision.warnings, decision.skipped, decision.excepted, decision.omitted


class Forgetful(ClusterStore):
    """A store whose every snapshot is new, memos and all: every decision works everything out."""

    def snapshot(self) -> Snapshot:
        with self.lock:
            self._queues_changed = self._nodes_changed = self._counted_changed = True
            self.version += 1  # as after a change: not the last snapshot handed on with its memo
            return self._publish()


def remembered(store: ClusterStore) -> list[Any]:
    """The keys of the cluster rules' findings memoized on the store's snapshot."""
    return [key for key in store.snapshot().memo.answers if isinstance(key, tuple) and key[0] == "cluster rules"]


def filled(store: ClusterStore) -> ClusterStore:
    """``store`` holding the fixtures, every kind a job rule reads synced, and the priority classes."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in OBJECTS:
        if obj.get("kind") in k.BY_KIND:
            by_kind.setdefault(obj["kind"], []).append(obj)
    for kind in k.KINDS:
        store.replace(kind, by_kind.get(kind.kind, []))
        store.availability.mark_synced(kind.name)
    # what the [simulate] line reads besides: the priority classes' values (as state files give them)
    store.replace(k.WORKLOAD_PRIORITY_CLASSES, [o for o in OBJECTS if o.get("kind") == "WorkloadPriorityClass"])
    return store


def stores() -> tuple[ClusterStore, ClusterStore]:
    """(the fixture cluster, the same cluster remembering nothing); every kind a job rule reads is known."""
    return state_from_objects(OBJECTS, POLICY), filled(Forgetful(POLICY))


def test_the_store_remembering_nothing_hands_on_no_memo_or_part() -> None:
    """The comparisons below are only as good as the forgetful store: each of its snapshots works
    everything out again."""
    _, forgetful = stores()
    first, second = forgetful.snapshot(), forgetful.snapshot()
    assert all(getattr(first, part) is not getattr(second, part) for part in ("memo", "queues", "nodes", "counted"))


@pytest.mark.parametrize("from_wire", [False, True], ids=["as built", "from the wire"])
def test_every_variant_after_every_other_answers_as_a_fresh_decision(from_wire: bool) -> None:
    store, forgetful = stores()
    # from the wire: as the review decoder reads the object's JSON text (msgspec, its reading of numbers)
    variants = [
        (name, request, plain_json(json.dumps(obj).encode()) if from_wire else obj) for name, request, obj in VARIANTS
    ]
    # the [simulate] line worked out as the request's own (warning_line), memoized under the same shape
    expected = [answer(decide(obj, request, POLICY, forgetful, warning_line)) for _, request, obj in variants]
    assert len({repr(e) for e in expected}) >= 20  # the variants do lead to different answers
    for first, (name_a, request_a, a) in enumerate(variants):
        for second, (name_b, request_b, b) in enumerate(variants):
            store.snapshot().memo.answers.clear()
            assert answer(decide(a, request_a, POLICY, store, warning_line)) == expected[first]
            assert answer(decide(b, request_b, POLICY, store, warning_line)) == expected[second], (
                f"{name_b} after {name_a}"
            )


def test_jobs_of_one_shape_share_one_answer() -> None:
    store, _ = stores()
    job_facts = facts()
    decide(guaranteed().queue("team-b-queue").obj(), job_facts, POLICY, store)
    snapshot = store.snapshot()
    held = len(remembered(store))
    first = decide(guaranteed().obj(), job_facts, POLICY, store)
    assert first.allowed and not first.findings
    assert len(remembered(store)) == held + 1  # one shape, one answer
    decide(guaranteed().name("another-job").obj(), job_facts, POLICY, store)  # the name is no part of the shape
    assert store.snapshot() is snapshot and len(remembered(store)) == held + 1
    decide(guaranteed().request(TPU, 4.0).obj(), job_facts, POLICY, store)  # 4.0 is not the text 4: a shape of its own
    assert len(remembered(store)) == held + 2


def holder(name: str, queue: str, pods: int) -> dict[str, Any]:
    """A guaranteed Workload holding ``pods`` pods of 4 chips on 4x4x4 through LocalQueue ``queue``."""
    running = next(o for o in OBJECTS if o.get("kind") == "Workload" and "running" in o["metadata"]["name"])
    workload = copy.deepcopy(running)
    workload["metadata"]["name"] = name
    workload["spec"]["queueName"] = queue
    workload["spec"]["podSets"][0]["count"] = pods
    return workload


def test_a_workload_event_makes_a_new_snapshot_that_shares_the_queues_and_nodes() -> None:
    """The event changes the counted Workloads only: the next snapshot keeps the queue and node
    parts, with the potential quota, flavor assignments and node fits memoized on them."""
    store, forgetful = stores()
    job_facts = facts()
    jobs = [guaranteed().obj(), guaranteed().priority("best-effort").obj(), guaranteed("team-b-queue").obj()]
    before = [decide(job, job_facts, POLICY, store) for job in jobs]
    old = store.snapshot()
    assert all(d.allowed for d in before) and old.queues.memo.answers and old.nodes.memo.answers

    # Guaranteed Workloads take all of team-a's 4x4x4 chips: its guaranteed job is now beyond its balance.
    for target in (store, forgetful):
        target.apply(k.WORKLOADS, "ADDED", holder("holds-the-rest", "team-a-queue", 64))
    new = store.snapshot()
    assert new is not old and new.queues is old.queues and new.nodes is old.nodes and not new.memo.answers
    after = [decide(job, job_facts, POLICY, store) for job in jobs]
    assert [answer(d) for d in after] == [answer(decide(job, job_facts, POLICY, forgetful)) for job in jobs]
    assert [[f.rule for f in d.findings] for d in after] == [["guaranteed-balance-exceeded"], [], []]
    # the snapshot a request read before the event answers as it did
    assert [answer(decide(job, job_facts, POLICY, old)) for job in jobs] == [answer(d) for d in before]


def test_a_status_write_that_changes_nothing_kept_keeps_the_snapshot() -> None:
    store, _ = stores()
    decide(guaranteed().obj(), facts(), POLICY, store)
    snapshot = store.snapshot()
    held = dict(snapshot.memo.answers)
    node = copy.deepcopy(next(o for o in OBJECTS if o.get("kind") == "Node"))
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-12-01T00:00:00Z"}]
    store.apply(k.NODES, "MODIFIED", node)
    assert store.snapshot() is snapshot and snapshot.memo.answers == held


def test_a_kept_document_change_publishes_a_snapshot_sharing_every_part_but_the_documents() -> None:
    """A Topology's levels change nothing a job's rules read: the queue and node parts and the kinds'
    documents that did not change are the last snapshot's; the documents part is new, with it."""
    store, _ = stores()
    before = store.snapshot()
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "tpu7x-topology"},
        "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
    }
    store.apply(k.TOPOLOGIES, "ADDED", topology)
    after = store.snapshot()
    assert after is not before and (after.queues, after.nodes) == (before.queues, before.nodes)
    assert after.documents is not before.documents
    assert dict(after.documents.by_kind[k.TOPOLOGIES.name]) == {"tpu7x-topology": topology}
    assert all(
        after.documents.by_kind[name] is held for name, held in before.documents.by_kind.items() if name != "Topologies"
    )
    status = {**topology, "status": {"conditions": []}}
    store.apply(k.TOPOLOGIES, "MODIFIED", status)  # nothing kept changed: the same snapshot
    assert store.snapshot() is after


@pytest.mark.parametrize("kind", ["Workloads", "Cohorts", "ClusterQueues"])
def test_a_kind_the_rules_read_unknown_answers_as_a_fresh_decision(kind: str) -> None:
    store, forgetful = stores()
    for target in (store, forgetful):
        target.availability.broken(kind, "watch failed: 403", fatal=True)
    assert kind in store.snapshot().unread
    job_facts = facts()
    for _ in range(2):  # worked out, then memoized
        decision = decide(guaranteed().obj(), job_facts, POLICY, store)
        assert answer(decision) == answer(decide(guaranteed().obj(), job_facts, POLICY, forgetful))
    if kind != "Cohorts":  # the queue's own nominal decides it without the tree above
        assert decision.skipped or decision.warnings  # unknown is not zero: it says what it could not judge


def test_a_snapshot_is_handed_on_while_every_kind_is_heard_from_and_not_after() -> None:
    """``ClusterStore.snapshot`` hands the same snapshot on while the clock is below the moment
    some kind could go silent and nothing changed. Past that moment, every kind heard from since,
    the new one keeps the last one's parts and memo (what was worked out still holds); a kind
    gone silent makes a new one with the clock alone, and a kind turned unreadable at once. The
    queue part, which reads no availability but the Cohorts', is shared throughout."""
    now = [1000.0]
    store = filled(ClusterStore(POLICY))
    kinds = [kind.name for kind in k.WATCHED]
    store.availability = Availability(kinds, stale_after=60, clock=lambda: now[0], silent_after=120)
    for kind in kinds:
        store.availability.listed(kind)
        store.availability.watching(kind)
    first = store.snapshot()
    assert not first.unread and store.snapshot() is first
    now[0] += 100  # every kind heard from 100 s ago: within the 120 s bound
    assert store.snapshot() is first
    for kind in kinds:
        store.availability.bookmark(kind)
    now[0] += 30  # past the first snapshot's bound, heard from 30 s ago: the clock alone moved
    later = store.snapshot()
    assert later is not first and later.until > first.until and not later.unread
    store.availability.watching("Nodes")  # a watch renewed: a change of availability, the same kinds readable
    renewed = store.snapshot()
    assert renewed is not later and renewed.availability_changes > later.availability_changes
    for kept in (later, renewed):
        assert all(getattr(kept, part) is getattr(first, part) for part in ("memo", "queues", "nodes", "ledger"))
    now[0] += 130
    silent = store.snapshot()  # Nodes silent for 130 s, the others longer: the API server may be hung
    assert silent is not first and set(silent.unread) == set(kinds)
    assert "silent: no event or bookmark for 130s" in silent.unread["Nodes"]
    for kind in kinds:
        store.availability.bookmark(kind)
    heard = store.snapshot()  # heard from again
    assert not heard.unread and heard.nodes is first.nodes
    store.availability.broken("Nodes", "watch failed: 403", fatal=True)
    assert store.snapshot().unread == {"Nodes": "watch failed: 403"}


def test_the_memo_holds_a_bounded_number_of_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo_module, "MEMO_LIMIT", 3)
    store, forgetful = stores()
    for replicas in range(1, 9):
        obj = json.dumps(guaranteed().replicas(replicas).obj()).encode()
        assert answer(decide(obj, facts(), POLICY, store)) == answer(decide(obj, facts(), POLICY, forgetful))
        assert len(store.snapshot().memo.answers) <= 3


def test_the_admin_guard_kinds_do_not_stop_memoizing() -> None:
    """Kueue's ConfigMap or controller unreadable (RBAC) says nothing of jobs: the memo still works."""
    store, _ = stores()
    assert any(kind.name in store.snapshot().unread for kind in k.ADMIN_KINDS)
    decide(guaranteed().obj(), facts(), POLICY, store)
    assert remembered(store)


def test_another_policy_than_the_stores_memoizes_nothing() -> None:
    """Answers memoized on a snapshot are for the policy its store reads with."""
    store, forgetful = stores()
    other = POLICY.model_copy(update={"guaranteed_priority_class": "best-effort"})
    obj = two_slices().priority("best-effort").obj()
    assert answer(decide(obj, facts(), other, store)) == answer(decide(obj, facts(), other, forgetful))
    assert not remembered(store)


class Counting(ClusterStore):
    """The fixture store, counting how often it is asked for its snapshot."""

    asked = 0

    def snapshot(self) -> Snapshot:
        self.asked += 1
        return super().snapshot()


def test_a_request_asks_for_the_snapshot_once() -> None:
    """One snapshot per request: every rule reads one state of the store."""
    _, forgetful = stores()
    counting = filled(Counting(POLICY))
    for _, request, obj in VARIANTS:
        counting.asked = 0
        assert answer(decide(obj, request, POLICY, counting)) == answer(decide(obj, request, POLICY, forgetful))
        assert counting.asked == 1
    assert counting.snapshot().static_topologies() == {"4x4x4", "4x4x8", "4x8x8"}


def pending_workload(name: str, priority: int, created: str) -> dict[str, Any]:
    """The fixture's pending guaranteed Workload, renamed, with its priority value and creation time."""
    pending = next(o for o in OBJECTS if o.get("kind") == "Workload" and "pending" in o["metadata"]["name"])
    workload = copy.deepcopy(pending)
    workload["metadata"].update(name=name, creationTimestamp=created, uid=f"uid-{name}")
    workload["spec"]["priority"] = priority
    return workload


def test_a_snapshot_holds_each_queues_admitted_and_pending_workloads_for_the_simulator() -> None:
    """Admitted: with their usage per (flavor, resource) from the admission and the time quota was
    reserved; pending: with their priority value, creation time and podSets' demand (the simulator
    puts them in Kueue's order)."""
    store, _ = stores()
    for name, priority, created in (
        ("late-high", 1000, "2026-01-03T00:00:00Z"),
        ("early-low", 100, "2026-01-01T00:00:00Z"),
        ("early-high", 1000, "2026-01-02T00:00:00Z"),
    ):
        store.apply(k.WORKLOADS, "ADDED", pending_workload(name, priority, created))
    snapshot = store.snapshot()
    admitted = {(ns, name): entry for ns, name, entry in snapshot.holding_in("team-a")}
    assert sorted(admitted) == [
        ("kubemaker", "jobset-a-running-besteffort-7e8f9"),
        ("kubemaker", "jobset-a-running-guaranteed-1a2b3"),
    ]
    running = admitted[("kubemaker", "jobset-a-running-guaranteed-1a2b3")]
    assert (running.priority, running.priority_value) == ("guaranteed", 1000)
    assert running.reserved_at == 1767225600.0  # 2026-01-01T00:00:00Z
    assert dict(((f, r), a) for f, r, a in running.usage)[("tpu7x-4x4x4", TPU)] == 128
    assert snapshot.queue_usages()["team-a"][("tpu7x-4x4x4", TPU)] == sum(
        dict(((f, r), a) for f, r, a in entry.usage).get(("tpu7x-4x4x4", TPU), 0) for entry in admitted.values()
    )
    waiting = {name: entry for _, name, entry in snapshot.waiting_in("team-a")}
    assert {"early-high", "late-high", "early-low"} <= set(waiting)
    first = waiting["early-high"]
    created = 1767312000.0  # 2026-01-02T00:00:00Z
    assert (first.uid, first.priority_value, first.created) == ("uid-early-high", 1000, created)
    assert first.shape and first.shape[0].total(TPU) > 0


def _scan(snapshot: Snapshot, state: str, queue: str) -> list[tuple[str, str]]:
    """What the per-queue index must give: a scan of every Workload held."""
    local = snapshot.queues.local_queues
    return sorted(
        (ns, name)
        for (ns, name), entry in snapshot.workloads.items()
        if entry.state == state
        and (entry.cluster_queue == queue if state == "holds" else local.get((ns, entry.local_queue)) == queue)
    )


def test_one_queues_workloads_by_index_are_the_scans_after_events_and_without() -> None:
    store, _ = stores()
    store.apply(k.WORKLOADS, "ADDED", holder("extra-a", "team-a-queue", 4))
    store.apply(k.WORKLOADS, "ADDED", holder("extra-b", "team-b-queue", 4))
    store.apply(k.WORKLOADS, "DELETED", holder("extra-a", "team-a-queue", 4))
    snapshot = store.snapshot()
    pending = next(key for key, entry in snapshot.workloads.items() if entry.state == "waits")
    for view in (snapshot, snapshot.without([("kubemaker", "extra-b"), pending])):
        for queue in ("team-a", "team-b", "team-c"):
            assert sorted((ns, n) for ns, n, _ in view.holding_in(queue)) == _scan(view, "holds", queue)
            assert sorted((ns, n) for ns, n, _ in view.waiting_in(queue)) == _scan(view, "waits", queue)
    left = snapshot.without([("kubemaker", "extra-b")])  # its admission is team-a's, whatever its LocalQueue
    assert ("kubemaker", "extra-b") in [(ns, n) for ns, n, _ in snapshot.holding_in("team-a")]
    assert ("kubemaker", "extra-b") not in [(ns, n) for ns, n, _ in left.holding_in("team-a")]


def _on(workload: dict[str, Any], levels: list[str], *values: str) -> dict[str, Any]:
    """``workload`` (admitted) placed on ``values`` of the lowest of ``levels`` (v1beta1 ``domains``)."""
    placed = copy.deepcopy(workload)
    domains = [{"values": [*(["x"] * (len(levels) - 1)), v], "count": 1} for v in values]
    placed["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {"levels": levels, "domains": domains}
    return placed


def _occupied(
    snapshot: Snapshot,
) -> tuple[dict[tuple[str, str], tuple[tuple[str, str], ...]], tuple[tuple[str, str], ...]]:
    """``snapshot.occupied()`` with each domain's Workloads sorted, to compare whole."""
    domains, unread = snapshot.occupied()
    return {domain: tuple(sorted(keys)) for domain, keys in domains.items()}, unread


def test_the_domains_admitted_workloads_hold_are_indexed_as_events_arrive() -> None:
    """The store keeps each admitted Workload's topology domains in its per-place index, so a
    snapshot reads who holds what from the index (one built anew, Workload by Workload, gives the same),
    and an event moves only that Workload's domains."""
    store = state_from_objects(OBJECTS, POLICY)
    running = holder("on-pools", "team-a-queue", 32)
    store.apply(k.WORKLOADS, "ADDED", _on(running, ["cloud.google.com/gke-nodepool"], "tpu-4x4x4-a", "tpu-4x4x4-b"))
    hosts = _on(holder("on-hosts", "team-a-queue", 1), ["kubernetes.io/hostname"], "gke-tpu-4x4x8-a-0")
    store.apply(k.WORKLOADS, "ADDED", hosts)
    odd = copy.deepcopy(running)
    odd["metadata"]["name"] = "odd"
    odd["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {"levels": "nodepool"}
    store.apply(k.WORKLOADS, "ADDED", odd)
    snapshot = store.snapshot()
    expected = (
        {
            ("cloud.google.com/gke-nodepool", "tpu-4x4x4-a"): (("kubemaker", "on-pools"),),
            ("cloud.google.com/gke-nodepool", "tpu-4x4x4-b"): (("kubemaker", "on-pools"),),
            ("kubernetes.io/hostname", "gke-tpu-4x4x8-a-0"): (("kubemaker", "on-hosts"),),
        },
        (("kubemaker", "odd"),),
    )
    assert _occupied(snapshot) == expected
    counted = CountedWorkloads(POLICY.guaranteed_priority_class)  # the index built anew, Workload by Workload
    for key, entry in sorted(snapshot.workloads.items()):
        counted.put(key, entry)
    by_hand = Snapshot(1, POLICY.tpu.resource_name, snapshot.queues, snapshot.nodes, counted, (0, {}, 0.0), POLICY)
    assert _occupied(by_hand) == expected
    assert snapshot.nodes.pool_of("kubernetes.io/hostname", "gke-tpu-4x4x8-a-0") == "tpu-4x4x8-a"
    assert snapshot.nodes.pools((("cloud.google.com/gke-tpu-topology", "4x8x8"),)) == {"tpu-4x8x8-a": 2}  # one cordoned
    finished = copy.deepcopy(hosts)
    finished["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded"})
    store.apply(k.WORKLOADS, "MODIFIED", finished)
    assert _occupied(store.snapshot()) == (
        {d: w for d, w in expected[0].items() if d[1] != "gke-tpu-4x4x8-a-0"},
        expected[1],
    )


def with_env(obj: dict[str, Any], value: str) -> dict[str, Any]:
    """``obj`` (a JobSet) with ``value`` in its container's environment: part of its shape."""
    pod = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["env"] = [{"name": "PAYLOAD", "value": value}]
    return obj


def test_jobs_with_unique_multi_megabyte_values_leave_memory_within_the_memos_byte_bounds() -> None:
    """The memos were bounded by entries only (4,096 per part) and every job's shape key holds its
    spec's text, so admitted jobs with a unique multi-MB value each stayed memoized: 100 of them
    grew the webhook by 230 MB. The memos are bounded in bytes now; what 150 such jobs leave
    behind (the [simulate] line worked out for each, as the server's worker does) is measured
    with tracemalloc once they are answered."""
    store, _ = stores()
    job_facts = facts()
    decide(with_env(guaranteed().obj(), "warm"), job_facts, POLICY, store, warning_line)  # first-use costs
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(150):
            obj = with_env(guaranteed().obj(), f"{i:04d}" + "x" * 1_000_000)
            decision = decide(obj, job_facts, POLICY, store, warning_line)
            assert decision.allowed
            del obj, decision
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 16 * 2**20, f"{grown / 2**20:.1f} MiB held after 150 jobs of 1 MB each"
    snapshot = store.snapshot()
    assert snapshot.memo.bytes <= memo_module.MEMO_BYTES
    names = [cache for cache, _, _ in store.cache_sizes()]
    assert names == ["snapshot_memo", "queue_memo", "node_memo", "document_memo", "part_memo", "sharing"]


def test_an_index_part_keeps_its_memo_until_its_workloads_change() -> None:
    """A part's memo is shared by the snapshots that share the part, and a changed part starts anew."""
    store = state_from_objects(OBJECTS, POLICY)
    holders, waiters = (HOLDS, "team-a", ""), (WAITS, "kubemaker", "team-a-queue")
    first = store.snapshot()
    for where in (holders, waiters):
        memo = first.part_memo(where)
        assert memo is not None
        memo.keep("worked out", where)
    store.apply(k.WORKLOADS, "ADDED", team_a_workload("another", 64))  # waits in team-a-queue
    after = store.snapshot()
    assert after is not first
    kept = [
        (m.get("worked out") if (m := after.part_memo(where)) is not None else None) for where in (holders, waiters)
    ]
    assert kept == [holders, None]


def test_a_memo_hands_an_answer_to_the_next_snapshot_once() -> None:
    store = state_from_objects(OBJECTS, POLICY)
    first = store.snapshot()
    first.memo.keep("carried", "an answer")
    store.apply(k.WORKLOADS, "ADDED", team_a_workload("another", 64))
    after = store.snapshot()
    assert (after.memo.take_previous("carried"), after.memo.take_previous("carried"), first.memo.get("carried")) == (
        "an answer",
        None,
        None,
    )
    assert first.memo.bytes == 0
