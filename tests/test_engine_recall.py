"""Remembered cluster answers are the fresh ones (``webhook.engine.recall``).

The engine keeps the cluster family's findings per state of the cluster and per job
shape (``webhook.rules.cluster.recall_key``). A key that leaves out something a rule reads
would hand one job another's answer, so every variant below changes one thing the
cluster rules read, and each is decided right after every other (the memo holding the
other's answer) and compared with a decision against a store that remembers nothing.
The random event sequences of ``tests/test_cluster_store.py`` check that every change to
the store reaches the answers remembered before it (their probe decisions are remembered
between events and compared with a store built from scratch).
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from builders import deployment, job, jobset
from cluster_fixtures import OBJECTS, POLICY

from webhook.cluster import kinds as k
from webhook.cluster import store as store_module
from webhook.cluster.availability import Availability
from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.store import ClusterStore, StoreRecall
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.rules.catalog import RULES
from webhook.rules.cluster import FAMILY as CLUSTER_FAMILY

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
    ("4.0 chips (not keyed)", facts(), guaranteed().request(TPU, 4.0).request(TPU, 4.0, kind="limits").obj()),
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
    """A store that remembers no whole answer: every decision runs the cluster rules."""

    def recall(self) -> None:
        return None


def filled(store: ClusterStore) -> ClusterStore:
    """``store`` holding the fixtures, every kind a job rule reads synced."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in OBJECTS:
        if obj.get("kind") in k.BY_KIND:
            by_kind.setdefault(obj["kind"], []).append(obj)
    for kind in k.KINDS:
        store.replace(kind, by_kind.get(kind.kind, []))
        store.availability.mark_synced(kind.name)
    return store


def stores() -> tuple[ClusterStore, ClusterStore]:
    """(the fixture cluster, the same cluster remembering nothing); every kind a job rule reads is known."""
    return state_from_objects(OBJECTS, POLICY), filled(Forgetful(POLICY))


@pytest.mark.parametrize("as_text", [False, True], ids=["decoded", "as text"])
def test_every_variant_after_every_other_answers_as_a_fresh_decision(as_text: bool) -> None:
    """Decoded, a JobSet's podSets are keyed field by field; as the API server sends it, its
    text, by the typed reader's text of them (``Source.podsets_text``)."""
    store, forgetful = stores()
    variants = [(name, request, json.dumps(obj).encode() if as_text else obj) for name, request, obj in VARIANTS]
    expected = [answer(decide(obj, request, POLICY, forgetful)) for _, request, obj in variants]
    assert len({repr(e) for e in expected}) >= 20  # the variants do lead to different answers
    for first, (name_a, request_a, a) in enumerate(variants):
        for second, (name_b, request_b, b) in enumerate(variants):
            recall = store.recall()
            assert recall is not None
            recall.answers.clear()
            assert answer(decide(a, request_a, POLICY, store)) == expected[first]
            assert answer(decide(b, request_b, POLICY, store)) == expected[second], f"{name_b} after {name_a}"


def test_jobs_of_one_shape_share_one_answer() -> None:
    store, _ = stores()
    job_facts = facts()
    decide(guaranteed().queue("team-b-queue").obj(), job_facts, POLICY, store)
    recall = store.recall()
    assert recall is not None
    memo = recall.answers
    held = len(memo)
    first = decide(guaranteed().obj(), job_facts, POLICY, store)
    assert first.allowed and not first.findings
    assert len(memo) == held + 1  # one shape, one answer
    decide(guaranteed().name("another-job").obj(), job_facts, POLICY, store)  # the name is no part of the shape
    decide(guaranteed().request(TPU, 4.0).obj(), job_facts, POLICY, store)  # a float request is never remembered
    assert store.recall() is recall and len(memo) == held + 1


def holder(name: str, queue: str, pods: int) -> dict[str, Any]:
    """A guaranteed Workload holding ``pods`` pods of 4 chips on 4x4x4 through LocalQueue ``queue``."""
    running = next(o for o in OBJECTS if o.get("kind") == "Workload" and "running" in o["metadata"]["name"])
    workload = copy.deepcopy(running)
    workload["metadata"]["name"] = name
    workload["spec"]["queueName"] = queue
    workload["spec"]["podSets"][0]["count"] = pods
    return workload


def test_a_workload_event_changes_the_guaranteed_answers_of_its_queue_only() -> None:
    """Workloads decide one thing, a queue's guaranteed balance: an event keeps the memo, and a
    guaranteed job of the queue whose chips moved is judged again."""
    store, forgetful = stores()
    job_facts = facts()
    jobs = [guaranteed().obj(), guaranteed().priority("best-effort").obj(), guaranteed("team-b-queue").obj()]
    before = [decide(job, job_facts, POLICY, store) for job in jobs]
    recall = store.recall()
    assert recall is not None and all(d.allowed for d in before)
    memo = recall.answers
    held = dict(memo)

    # Guaranteed Workloads take all of team-a's 4x4x4 chips: its guaranteed job is now beyond its balance.
    for target in (store, forgetful):
        target.apply(k.WORKLOADS, "ADDED", holder("holds-the-rest", "team-a-queue", 64))
    assert store.recall() is recall and memo == held  # nothing dropped
    after = [decide(job, job_facts, POLICY, store) for job in jobs]
    assert [answer(d) for d in after] == [answer(decide(job, job_facts, POLICY, forgetful)) for job in jobs]
    assert [[f.rule for f in d.findings] for d in after] == [["guaranteed-balance-exceeded"], [], []]
    assert len(memo) == len(held) + 1  # only team-a's guaranteed job was judged again

    # And when the chips are given back, its first answer is the one remembered.
    for target in (store, forgetful):
        target.apply(k.WORKLOADS, "DELETED", holder("holds-the-rest", "team-a-queue", 64))
    assert answer(decide(jobs[0], job_facts, POLICY, store)) == answer(before[0])
    assert len(memo) == len(held) + 1


def test_an_answer_worked_out_while_the_workloads_changed_is_handed_on_but_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A watch thread may apply a Workload event while a request runs the cluster rules: that
    answer may have read two states of the Workloads, so it answers the request and is forgotten."""
    store, forgetful = stores()
    recall = store.recall()
    assert recall is not None and not recall.answers
    counts = itertools.count()
    monkeypatch.setattr(StoreRecall, "ledger_changes", lambda self: next(counts))  # an event between any two looks
    for obj in (guaranteed().obj(), guaranteed().replicas(2).obj()):
        assert answer(decide(obj, facts(), POLICY, store)) == answer(decide(obj, facts(), POLICY, forgetful))
    assert store.recall() is recall and not recall.answers


def test_a_status_write_that_changes_nothing_kept_keeps_the_memo() -> None:
    store, _ = stores()
    decide(guaranteed().obj(), facts(), POLICY, store)
    recall = store.recall()
    assert recall is not None
    held = dict(recall.answers)
    node = copy.deepcopy(next(o for o in OBJECTS if o.get("kind") == "Node"))
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-12-01T00:00:00Z"}]
    store.apply(k.NODES, "MODIFIED", node)
    assert store.recall() is recall and recall.answers == held


@pytest.mark.parametrize("kind", ["Workloads", "Cohorts", "ClusterQueues"])
def test_nothing_is_remembered_while_a_kind_the_rules_read_is_unknown(kind: str) -> None:
    store, forgetful = stores()
    for target in (store, forgetful):
        target.availability.broken(kind, "watch failed: 403", fatal=True)
    assert store.recall() is None
    job_facts = facts()
    decision = decide(guaranteed().obj(), job_facts, POLICY, store)
    assert answer(decision) == answer(decide(guaranteed().obj(), job_facts, POLICY, forgetful))
    if kind != "Cohorts":  # the queue's own nominal decides it without the tree above
        assert decision.skipped or decision.warnings  # unknown is not zero: it says what it could not judge


def test_a_recall_is_handed_on_while_every_kind_is_heard_from_and_not_after() -> None:
    """``ClusterStore.recall`` answers at once while the clock is below the moment some kind
    could go silent and nothing changed; a kind gone silent turns the memo off with the
    clock alone, and a kind turned unreadable at once."""
    now = [1000.0]
    store = filled(ClusterStore(POLICY))
    kinds = [kind.name for kind in k.WATCHED]
    store.availability = Availability(kinds, stale_after=60, clock=lambda: now[0], silent_after=120)
    for kind in kinds:
        store.availability.listed(kind)
        store.availability.watching(kind)
    recall = store.recall()
    assert recall is not None and store.recall() is recall
    now[0] += 100  # every kind heard from 100 s ago: within the 120 s bound
    assert store.recall() is recall
    now[0] += 30
    assert store.recall() is None  # silent for 130 s: the API server may be hung
    for kind in kinds:
        store.availability.bookmark(kind)
    assert store.recall() is recall  # heard from again, and nothing changed meanwhile
    store.availability.broken("Nodes", "watch failed: 403", fatal=True)
    assert store.recall() is None


def test_the_memo_holds_a_bounded_number_of_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "_MEMO_LIMIT", 3)
    store, forgetful = stores()
    for replicas in range(1, 9):
        obj = json.dumps(guaranteed().replicas(replicas).obj()).encode()
        assert answer(decide(obj, facts(), POLICY, store)) == answer(decide(obj, facts(), POLICY, forgetful))
        recall = store.recall()
        assert recall is not None and 1 <= len(recall.answers) <= 3


def test_queue_names_no_local_queue_has_keep_no_balance() -> None:
    """What a request names cannot grow what the memo keeps beyond its bound: a balance is
    kept per LocalQueue the store holds, not per queue label sent."""
    store, _ = stores()
    for number in range(50):
        decide(json.dumps(guaranteed(f"nowhere-{number}").obj()).encode(), facts(), POLICY, store)
    decide(json.dumps(guaranteed().obj()).encode(), facts(), POLICY, store)
    recall = store.recall()
    assert isinstance(recall, StoreRecall)
    assert list(recall._balances) == [("kubemaker", "team-a-queue")]


def test_the_admin_guard_kinds_do_not_stop_remembering() -> None:
    """Kueue's ConfigMap or controller unreadable (RBAC) says nothing of jobs: the memo still works."""
    store, _ = stores()
    assert any(store.availability.reason(kind.name) is not None for kind in k.ADMIN_KINDS)
    assert store.recall() is not None


def test_the_catalog_keeps_the_cluster_family_together() -> None:
    """The engine recalls the cluster family's findings as one run of its plan."""
    families = [rule.family for rule in RULES]
    first, last = families.index(CLUSTER_FAMILY), len(families) - families[::-1].index(CLUSTER_FAMILY)
    assert set(families[first:last]) == {CLUSTER_FAMILY}
    assert {rule.id for rule in RULES[first:last]} >= {"guaranteed-balance-exceeded", "replicas-beyond-nominal"}


class Counting(ClusterStore):
    """The fixture store, counting how often it is asked for its Recall."""

    asked = 0

    def recall(self) -> StoreRecall | None:
        self.asked += 1
        return super().recall()


def test_a_request_asks_for_the_recall_once_and_reads_the_pool_topologies_from_it() -> None:
    """One Recall per request: the rules' answers and the static topologies the node pools
    advertise come from one state of the store."""
    store, forgetful = stores()
    counting = filled(Counting(POLICY))
    for _, request, obj in VARIANTS:
        counting.asked = 0
        assert answer(decide(obj, request, POLICY, counting)) == answer(decide(obj, request, POLICY, forgetful))
        assert counting.asked == 1
    recall = store.recall()
    assert recall is not None
    known = POLICY.static_topology_set
    assert recall.static_topologies(known) == known | forgetful.static_topologies() == known | {"4x4x8", "4x8x8"}
    assert recall.static_topologies(frozenset()) == store.static_topologies() == {"4x4x4", "4x4x8", "4x8x8"}
