"""explain's inputs filled from a real store's snapshot: jobs found through their Workloads' owners."""

from __future__ import annotations

from typing import Any

import pytest
from explain_builders import JOBSET_UID, TPU, preemptor_workload, rfc_example_one, rfc_example_two, simulation
from quota_fixtures import cluster_queue, cohort, q
from simulate_builders import local_queue

from webhook.cluster import kinds as k
from webhook.cluster.statefiles import state_from_objects
from webhook.explain.explainer import explain
from webhook.explain.lookup import BadTarget, NotFound, NotSynced, parse_kind, parse_target, request_from_snapshot
from webhook.policy.config import Policy
from webhook.simulate.result import Result


def _objects(*workloads: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        cluster_queue("team-a", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cluster_queue("team-b", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cohort("tpu-pool"),
        local_queue("team-a-queue", "team-b", namespace="kubemaker"),
        *workloads,
    ]


def test_kinds_are_read_as_kubectl_reads_them() -> None:
    assert [parse_kind(word) for word in ("JobSets", "jobset.jobset.x-k8s.io", "deploy", "JOB", "kwl")] == [
        "JobSet",
        "JobSet",
        "Deployment",
        "Job",
        "Workload",
    ]
    with pytest.raises(BadTarget, match="did you mean JobSet"):
        parse_kind("jobst")
    assert parse_target("Workload/w-1") == ("Workload", "w-1")
    with pytest.raises(BadTarget, match="expected KIND/NAME"):
        parse_target("jobset")


def test_a_jobset_is_found_from_its_workloads_owner_reference_with_its_uid() -> None:
    snapshot = state_from_objects(_objects(rfc_example_two().obj(), preemptor_workload().obj()), Policy()).snapshot()
    request = request_from_snapshot(snapshot, "JobSet", "kubemaker", "llm-pretrain-a3f8")
    assert request.job == {
        "kind": "JobSet",
        "metadata": {"name": "llm-pretrain-a3f8", "namespace": "kubemaker", "uid": JOBSET_UID},
    }
    result = explain(request).result()
    assert (result.workload, result.state, result.reason, result.cluster_queue) == (
        "kubemaker/jobset-llm-pretrain-a3f8-4f9d2",
        "Preempted",
        "InCohortReclamation",
        "team-b",
    )
    assert result.preemptor is not None
    assert (result.preemptor.workload, result.preemptor.job, result.preemptor.priority) == (
        "team-a-ns/jobset-llm-finetune-77aa-1b2c3",
        "JobSet/team-a-ns/llm-finetune-77aa",
        1000,
    )
    assert result.quota is not None and result.quota.cohort == "tpu-pool"


def test_a_missing_job_is_not_found_with_why_and_unread_workloads_are_not_synced() -> None:
    snapshot = state_from_objects(_objects(rfc_example_one().obj()), Policy()).snapshot()
    with pytest.raises(NotFound, match="no Workload in kubemaker names JobSet other as its owner"):
        request_from_snapshot(snapshot, "JobSet", "kubemaker", "other")
    with pytest.raises(NotFound, match="Workload kubemaker/nope: not found"):
        request_from_snapshot(snapshot, "Workload", "kubemaker", "nope")
    unsynced = state_from_objects(_objects(), Policy()).snapshot()
    assert k.WORKLOADS.name in unsynced.unread
    with pytest.raises(NotSynced, match="Workloads cannot be read now"):
        request_from_snapshot(unsynced, "Workload", "kubemaker", "nope")


def test_a_condition_change_publishes_new_records_and_keeps_the_memos() -> None:
    store = state_from_objects(_objects(rfc_example_one().obj()), Policy())
    before = store.snapshot()
    picture = before.quota_picture()
    changed = rfc_example_one().condition("PodsReady", "True", "PodsReady").obj()
    store.apply(k.WORKLOADS, "MODIFIED", changed)
    after = store.snapshot()
    assert after is not before
    assert after.quota_picture() is picture  # the ledger did not move: the memo is shared
    key = ("kubemaker", "jobset-llm-pretrain-a3f8-4f9d2")
    document = after.records[key].document()
    assert [c["type"] for c in document["status"]["conditions"]] == ["QuotaReserved", "Admitted", "PodsReady"]
    assert "podSets" not in document["spec"]  # only what explain reads is kept
    assert store.snapshot() is after


def test_a_deployment_is_found_through_its_pods_workloads() -> None:
    pod_workload = (
        rfc_example_one()
        .name("pod-web-7d4b9c8f5d-x2x4z-1a2b3")
        .uid("pod-workload")
        .job_uid("pod-uid")
        .owner("Pod", "web-7d4b9c8f5d-x2x4z", "pod-uid")
        .obj()
    )
    snapshot = state_from_objects(_objects(pod_workload), Policy()).snapshot()
    request = request_from_snapshot(snapshot, "Deployment", "kubemaker", "web")
    assert request.job == {"kind": "Deployment", "metadata": {"name": "web", "namespace": "kubemaker"}}
    result = explain(request).result()
    assert (result.workload, result.state) == ("kubemaker/pod-web-7d4b9c8f5d-x2x4z-1a2b3", "Starting")
    with pytest.raises(NotFound):
        request_from_snapshot(snapshot, "Deployment", "kubemaker", "web-7d4b9c8f5d")


def test_the_simulator_is_asked_about_the_waiting_workload_by_namespace_and_name() -> None:
    snapshot = state_from_objects(_objects(rfc_example_two().obj()), Policy()).snapshot()
    asked: list[tuple[str, str]] = []

    def simulator(namespace: str, name: str) -> Result:
        asked.append((namespace, name))
        return simulation("wait", "WaitingForQuota", ahead=2, chips_ahead=256, cluster_queue="team-b")

    request = request_from_snapshot(snapshot, "JobSet", "kubemaker", "llm-pretrain-a3f8", simulator=simulator)
    result = explain(request).result()
    assert asked == [("kubemaker", "jobset-llm-pretrain-a3f8-4f9d2")]
    assert result.simulation is not None and result.simulation["outcome"] == "wait"
    running = state_from_objects(_objects(rfc_example_one().obj()), Policy()).snapshot()
    assert (
        request_from_snapshot(running, "JobSet", "kubemaker", "llm-pretrain-a3f8", simulator=simulator).simulate is None
    )
