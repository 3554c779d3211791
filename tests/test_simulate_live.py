"""The simulator on a live snapshot (``webhook.simulate.live``): the fixture cluster read as ``check
--cluster-state`` reads it, one path for files and the server."""

from __future__ import annotations

from typing import Any

import pytest
from cluster_fixtures import OBJECTS, POLICY, STATE, team_a_workload

from webhook.cluster import kinds as k
from webhook.cluster.statefiles import state_from_objects
from webhook.simulate.live import LiveSimulator, live, simulate_object, simulate_stored, state_of


def test_the_state_reads_the_snapshots_parts_and_kept_documents() -> None:
    snapshot = STATE.snapshot()
    simulator = live(snapshot, POLICY)
    assert simulator is live(snapshot, POLICY)  # memoized on the snapshot
    assert simulator.priorities == {"guaranteed": 1000, "best-effort": 100, "default": 10}
    state = state_of(snapshot, POLICY)
    assert state.usage == snapshot.queue_usages()
    assert sorted(w.key for w in state.admitted_by_queue["team-a"]) == sorted(
        f"{ns}/{name}" for ns, name, _ in snapshot.holding_in("team-a")
    )


def test_a_pending_stored_workload_is_answered_without_itself() -> None:
    result = simulate_stored(STATE.snapshot(), "kubemaker", "jobset-a-pending-guaranteed-4c5d6", POLICY)
    assert result is not None
    assert (result.outcome, result.cluster_queue, result.message) == (
        "admit",
        "team-a",
        "fits now in ClusterQueue team-a on tpu7x-4x4x4",
    )
    assert simulate_stored(STATE.snapshot(), "kubemaker", "no-such-workload", POLICY) is None


def test_a_stored_workload_is_simulated_once_per_snapshot() -> None:
    snapshot = STATE.snapshot()
    first = simulate_stored(snapshot, "kubemaker", "jobset-a-pending-guaranteed-4c5d6", POLICY)
    assert first is not None and first.outcome == "admit"
    assert simulate_stored(snapshot, "kubemaker", "jobset-a-pending-guaranteed-4c5d6", POLICY) is first


def test_fair_sharing_is_on_with_the_configuration_in_the_state() -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "kueue-system", "name": "kueue-manager-config"},
        "data": {
            "controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
            "kind: Configuration\nfairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n"
        },
    }

    store = state_from_objects([*OBJECTS, config], POLICY)
    fair = state_of(store.snapshot(), POLICY).fair_sharing
    assert (fair.enabled, fair.strategies) == (True, ("LessThanInitialShare",))
    assert not state_of(STATE.snapshot(), POLICY).fair_sharing.enabled


def test_fair_sharing_is_read_once_per_configuration_not_per_snapshot() -> None:
    def config(strategy: str) -> dict[str, Any]:
        text = f"kind: Configuration\nfairSharing:\n  preemptionStrategies: [{strategy}]\n"
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": "kueue-system", "name": "kueue-manager-config", "resourceVersion": strategy},
            "data": {"controller_manager_config.yaml": text},
        }

    store = state_from_objects([*OBJECTS, config("LessThanInitialShare")], POLICY)
    before = state_of(store.snapshot(), POLICY).fair_sharing
    running = next(o for o in OBJECTS if o["kind"] == "Workload")
    store.apply(k.WORKLOADS, "ADDED", {**running, "metadata": {**running["metadata"], "name": "another"}})
    assert state_of(store.snapshot(), POLICY).fair_sharing is before  # a Workload event: not parsed again
    store.apply(k.KUEUE_CONFIG, "MODIFIED", config("LessThanOrEqualToFinalShare"))
    after = state_of(store.snapshot(), POLICY).fair_sharing
    assert after.strategies == ("LessThanOrEqualToFinalShare",)


def test_a_job_is_read_as_kueue_makes_its_workload() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j", "namespace": "other", "labels": {"kueue.x-k8s.io/queue-name": "nowhere"}},
        "spec": {"replicatedJobs": []},
    }
    result = simulate_object(live(STATE.snapshot(), POLICY), jobset, "j.yaml")
    assert (result.outcome, result.reason, result.namespace, result.name) == ("never", "Misconfigured", "other", "j")


def test_a_queue_whose_workloads_did_not_change_shares_its_parts_with_the_previous_snapshot() -> None:
    store = state_from_objects(OBJECTS, POLICY)
    before = state_of(store.snapshot(), POLICY)
    parts = {q: (before.admitted_by_queue[q], before.pending_by_queue[q]) for q in ("team-a", "team-b")}
    running = next(
        o for o in OBJECTS if o["kind"] == "Workload" and o["metadata"]["name"] == "jobset-a-running-guaranteed-1a2b3"
    )
    copy = {**running, "metadata": {**running["metadata"], "name": "another", "uid": "another-uid"}}
    store.apply(k.WORKLOADS, "ADDED", copy)
    after = state_of(store.snapshot(), POLICY)
    assert after is not before
    assert after.admitted_by_queue["team-b"] is parts["team-b"][0]  # untouched: shared
    assert after.pending_by_queue["team-b"] is parts["team-b"][1]
    # its pending ones did not change either: each LocalQueue's part is shared, joined anew for the queue
    again = after.pending_by_queue["team-a"]
    assert len(again) == len(parts["team-a"][1]) and all(a is b for a, b in zip(again, parts["team-a"][1], strict=True))
    assert sorted(w.key for w in after.admitted_by_queue["team-a"]) == sorted(
        [*(w.key for w in parts["team-a"][0]), "kubemaker/another"]
    )


def test_after_a_workload_event_the_tree_taken_over_answers_as_one_built_anew() -> None:
    store = state_from_objects(OBJECTS, POLICY)
    job = team_a_workload("probe", 128)
    first = live(store.snapshot(), POLICY)
    before = simulate_object(first, job)
    running = next(
        o for o in OBJECTS if o["kind"] == "Workload" and o["metadata"]["name"] == "jobset-a-running-guaranteed-1a2b3"
    )
    store.apply(k.WORKLOADS, "ADDED", {**running, "metadata": {**running["metadata"], "name": "more", "uid": "m"}})
    snapshot = store.snapshot()
    carried = live(snapshot, POLICY)
    assert first.simulator is None and carried.simulator is not None  # the tree moved on
    built = LiveSimulator(snapshot, POLICY, now=carried.state.now)  # a tree of its own
    assert simulate_object(carried, job).to_json() == simulate_object(built, job).to_json()
    assert simulate_object(first, job).to_json() == before.to_json()  # the old snapshot still answers as it did
    assert simulate_object(carried, job).to_json() != before.to_json()  # and the event did change the answer


def test_the_holders_a_wait_names_follow_the_usage_after_an_event() -> None:
    """The largest holders are kept per simulator until the usage moves: the tree taken over by the
    next snapshot names them as a simulator built anew does."""
    store = state_from_objects(OBJECTS, POLICY)
    job = team_a_workload("big", 384)
    first = simulate_object(live(store.snapshot(), POLICY), job)
    assert first.outcome == "wait" and first.to_json()["holders"]["workloads"][0] == {
        "name": "kubemaker/jobset-a-running-guaranteed-1a2b3",
        "clusterQueue": "team-a",
        "amount": 128,
    }
    running = next(
        o for o in OBJECTS if o["kind"] == "Workload" and o["metadata"]["name"] == "jobset-a-running-guaranteed-1a2b3"
    )
    bigger = {**running, "metadata": {**running["metadata"], "name": "bigger", "uid": "bigger"}}
    admission = {**running["status"]["admission"]}
    admission["podSetAssignments"] = [{**admission["podSetAssignments"][0], "resourceUsage": {"google.com/tpu": "192"}}]
    bigger["status"] = {**running["status"], "admission": admission}
    store.apply(k.WORKLOADS, "ADDED", bigger)
    snapshot = store.snapshot()
    carried = live(snapshot, POLICY)
    after = simulate_object(carried, job).to_json()
    assert after["holders"]["workloads"][0] == {"name": "kubemaker/bigger", "clusterQueue": "team-a", "amount": 192}
    assert after == simulate_object(LiveSimulator(snapshot, POLICY, now=carried.state.now), job).to_json()


def _with_reason(reason: str) -> list[dict[str, Any]]:
    """The fixture objects with ``jobset-a-pending-guaranteed-4c5d6`` refused by Kueue with ``reason``."""
    out = []
    for obj in OBJECTS:
        if obj["kind"] == "Workload" and obj["metadata"]["name"] == "jobset-a-pending-guaranteed-4c5d6":
            condition = {"type": "QuotaReserved", "status": "False", "reason": reason, "message": "not yet"}
            obj = {**obj, "status": {"conditions": [condition]}}
        out.append(obj)
    return out


@pytest.mark.parametrize("reason", ["WaitingForQuota", "ExceedsMaxQuota", "NoMatchingFlavor", "Inadmissible"])
def test_a_workload_pending_with_any_reason_is_simulated_and_counted_as_pending(reason: str) -> None:
    """KEP-10852's reasons name a Workload still in its queue, as the older ``Pending`` does: it is
    simulated, stands in front of a later job, and is the quota picture's pending."""
    before = state_from_objects(_with_reason("Pending"), POLICY).snapshot()
    after = state_from_objects(_with_reason(reason), POLICY).snapshot()
    name = "jobset-a-pending-guaranteed-4c5d6"
    assert simulate_stored(after, "kubemaker", name, POLICY) == simulate_stored(before, "kubemaker", name, POLICY)
    later = team_a_workload("later", 64)
    assert simulate_object(live(after, POLICY), later).position == simulate_object(live(before, POLICY), later).position
    assert simulate_object(live(after, POLICY), later).position.ahead >= 1
    assert [w.key for w in state_of(after, POLICY).pending_by_queue["team-a"]] == [
        w.key for w in state_of(before, POLICY).pending_by_queue["team-a"]
    ]
    assert after.quota_picture() == before.quota_picture()
    assert before.quota_picture().cluster_queues["team-a"].flavors["tpu7x-4x4x4"]["google.com/tpu"].pending == 64
