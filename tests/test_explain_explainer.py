"""Whole explanations: the §13 result of RFC-0033's examples, a gone preemptor, every reason source."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from builders import deployment
from explain_builders import (
    PREEMPTOR_JOB_UID,
    PREEMPTOR_UID,
    T0,
    T1,
    T2,
    StoredJobSet,
    preemptor_workload,
    queued_workload,
    rfc_example_one,
    rfc_example_two,
    simulation,
    tpu_pool,
    workload_index,
)

from webhook.explain.explainer import ExplainError, ExplainRequest, explain
from webhook.explain.inputs import Simulate
from webhook.simulate.result import Result

TEAM_B_QUOTA = {
    "clusterQueue": {"tpu7x": {"google.com/tpu": {"nominal": 256, "inUse": 128, "borrowed": 0, "pending": 128}}},
    "cohort": "tpu-pool",
}
TEAM_A_QUOTA = {
    "clusterQueue": {"tpu7x": {"google.com/tpu": {"nominal": 256, "inUse": 256, "borrowed": 0, "pending": 0}}},
    "cohort": "tpu-pool",
}


def _result(
    workloads: list[dict[str, Any]],
    job: dict[str, Any] | None = None,
    simulate: Simulate | None = None,
    kind: str = "JobSet",
    local_queues: dict[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    request = ExplainRequest(
        kind,
        job if job is not None else StoredJobSet().obj(),
        workload_index(workloads),
        tpu_pool(),
        simulate,
        local_queues or {},
    )
    result: dict[str, Any] = msgspec.to_builtins(explain(request).result())
    return result


def test_rfc_example_two_preempted_by_team_a_requeued_with_its_position() -> None:
    answer = simulation("wait", "WaitingForQuota", 3, 192, "team-b's nominal is taken", "team-b")
    result = _result([rfc_example_two().obj(), preemptor_workload().obj()], simulate=lambda: answer)
    assert result == {
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "llm-pretrain-a3f8",
        "workload": "kubemaker/jobset-llm-pretrain-a3f8-4f9d2",
        "state": "Preempted",
        "reason": "InCohortReclamation",
        "since": T2,
        "clusterQueue": "team-b",
        "preemptor": {
            "workload": "team-a-ns/jobset-llm-finetune-77aa-1b2c3",
            "job": "JobSet/team-a-ns/llm-finetune-77aa",
            "clusterQueue": "team-a",
            "priority": 1000,
        },
        "simulation": answer.to_json(),
        "quota": TEAM_B_QUOTA,
        "message": (
            f"Preempted since {T2}: the lending team took its quota back (the job ran on borrowed quota). "
            "Preempted by Workload team-a-ns/jobset-llm-finetune-77aa-1b2c3 (job JobSet/team-a-ns/llm-finetune-77aa) "
            "of ClusterQueue team-a, priority 1000. "
            "It was requeued automatically and waits in ClusterQueue team-b to be admitted again; nothing to "
            "resubmit. As if submitted now, it would wait (WaitingForQuota). "
            "Number 4 in line in its ClusterQueue: 3 Workloads are ahead of it (192 chips). team-b's nominal is taken."
        ),
    }


def test_a_preemptor_no_longer_in_the_cluster_still_explains() -> None:
    result = _result([rfc_example_two().obj()])
    assert result["state"] == "Preempted"
    assert result["preemptor"] == {"workload": None, "job": None, "clusterQueue": "team-a", "priority": None}
    assert result["simulation"] is None
    assert result["message"] == (
        f"Preempted since {T2}: the lending team took its quota back (the job ran on borrowed quota). "
        f"Preempted by a Workload of ClusterQueue team-a no longer in the cluster (Workload UID {PREEMPTOR_UID}, "
        f"JobUID {PREEMPTOR_JOB_UID}). "
        "It was requeued automatically and waits in ClusterQueue team-b to be admitted again; nothing to resubmit."
    )


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("InClusterQueue", "a higher-priority job of the same team needed the quota"),
        ("InCohortFairSharing", "the cohort's fair share: the team used more than its share of the cohort"),
    ],
)
def test_each_preemption_reason_is_the_answer_and_in_words(reason: str, words: str) -> None:
    result = _result([rfc_example_one().preempted(reason, requeued=False).obj()])
    assert (result["reason"], result["message"].split(". ")[0]) == (reason, f"Preempted since {T2}: {words}")
    assert result["message"].endswith("Its pods are stopping; Kueue requeues it by itself once they are gone.")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "WaitingForQuota"),  # no simulation: the Workload's own QuotaReserved reason
        (simulation("admit"), "PendingEvaluation"),  # nothing blocks it
        (simulation("admit", ""), "PendingEvaluation"),
        (simulation("wait", "StrictFIFO"), "WaitingForQuota"),  # a reason that is no KEP-10852 token
        (simulation("preempt"), "PendingEvaluation"),
        (simulation("wait"), "WaitingForQuota"),
        (simulation("wait", "TopologyPlacementFailed"), "TopologyPlacementFailed"),
        (simulation("never", "ExceedsMaxQuota"), "ExceedsMaxQuota"),
        (simulation("wait", "Suspended"), "Suspended"),
        (simulation("unknown"), "WaitingForQuota"),  # the simulation cannot say: the stored reason stands
    ],
)
def test_queued_reason_is_the_simulations_kep_10852_token(answer: Result | None, reason: str) -> None:
    result = _result([queued_workload().obj()], simulate=(lambda: answer) if answer is not None else None)
    written = answer.to_json() if answer is not None else None
    assert (result["state"], result["reason"], result["since"], result["simulation"]) == ("Queued", reason, T0, written)


def test_queued_clusterqueue_from_its_localqueue_and_the_whole_result() -> None:
    answer = simulation("admit", ahead=0, chips_ahead=0)
    result = _result(
        [queued_workload().obj()], simulate=lambda: answer, local_queues={("kubemaker", "team-a-queue"): "team-a"}
    )
    assert result == {
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "llm-pretrain-a3f8",
        "workload": "kubemaker/jobset-llm-pretrain-a3f8-4f9d2",
        "state": "Queued",
        "reason": "PendingEvaluation",
        "since": T0,
        "clusterQueue": "team-a",
        "preemptor": None,
        "simulation": answer.to_json(),
        "quota": TEAM_A_QUOTA,
        "message": (
            f"Queued in ClusterQueue team-a since {T0}: it holds no quota yet. Kueue says: couldn't assign flavors. "
            "As if submitted now, it would start at Kueue's next scheduling cycle (PendingEvaluation). "
            "First in line in its ClusterQueue: no Workload is ahead of it."
        ),
    }


def test_the_simulation_is_asked_only_when_the_job_waits() -> None:
    calls: list[int] = []

    def simulate() -> Result:
        calls.append(1)
        return simulation("admit")

    running = _result([rfc_example_one().obj()], StoredJobSet().ready(2).obj(), simulate)
    stopping = _result([rfc_example_one().preempted("InClusterQueue", requeued=False).obj()], simulate=simulate)
    assert (running["state"], running["simulation"], stopping["simulation"], calls) == ("Running", None, None, [])
    _result([rfc_example_two().obj()], simulate=simulate)
    assert calls == [1]


def test_provisioning_slice_says_since_when_and_the_checks_message() -> None:
    workload = (
        rfc_example_one()
        .condition("Admitted", "False", "UnsatisfiedAdmissionChecks", since=T0)
        .check("tpu7x-slice", "Pending", "Slice creation in progress", since=T1)
    )
    result = _result([workload.obj()])
    assert (result["state"], result["since"], result["reason"], result["clusterQueue"]) == (
        "ProvisioningSlice",
        T1,
        None,
        "team-a",
    )
    assert result["message"] == (
        f"Provisioning its slice since {T1}: quota is reserved in ClusterQueue team-a; QuotaReserved=True, "
        "AdmissionCheck tpu7x-slice is Pending. The check says: Slice creation in progress."
    )


def test_not_managed_without_a_queue_label() -> None:
    result = _result([], StoredJobSet().queue(None).obj())
    assert result == {
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "llm-pretrain-a3f8",
        "workload": None,
        "state": "NotManaged",
        "reason": None,
        "since": None,
        "clusterQueue": None,
        "preemptor": None,
        "simulation": None,
        "quota": None,
        "message": (
            "Not managed by Kueue: no Workload in kubemaker has the label "
            "kueue.x-k8s.io/job-uid=1c8f5b7e-0000-4000-8000-000000000001; it has no kueue.x-k8s.io/queue-name "
            "label, so Kueue does not manage it."
        ),
    }


def test_not_managed_with_a_queue_label_names_kueues_scope() -> None:
    result = _result([rfc_example_one().job_uid("another").obj()])
    assert result["state"] == "NotManaged"
    assert result["message"].endswith(
        "it names LocalQueue team-a-queue, yet Kueue made no Workload: the namespace or kind may be outside "
        "Kueue's scope (managedJobsNamespaceSelector, integrations.frameworks)."
    )


def test_a_workload_given_itself_is_explained_with_its_owner_as_the_job() -> None:
    result = _result([], rfc_example_two().obj(), kind="Workload")
    assert (result["kind"], result["name"], result["workload"], result["state"]) == (
        "Workload",
        "jobset-llm-pretrain-a3f8-4f9d2",
        "kubemaker/jobset-llm-pretrain-a3f8-4f9d2",
        "Preempted",
    )


def test_a_deployment_explains_the_pod_workload_that_needs_it_and_counts_them() -> None:
    service = deployment().obj()
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    service["metadata"]["uid"] = "d-uid"

    def pod_workload(pod: str) -> Any:
        workload = rfc_example_one().name(f"pod-{pod}-abcde").namespace(namespace).uid(f"wl-{pod}")
        return workload.job_uid(f"uid-{pod}").owner("Pod", pod)

    running = pod_workload(f"{name}-7c9d8f6b4-x2k4m").condition("PodsReady", "True", "Started")
    waiting = pod_workload(f"{name}-7c9d8f6b4-q9w8z").admitted_in(None).no_conditions()
    waiting.condition("QuotaReserved", "False", "WaitingForQuota", "", T0)
    result = _result([running.obj(), waiting.obj()], service, kind="Deployment")
    assert (result["state"], result["workload"]) == ("Queued", f"{namespace}/pod-{name}-7c9d8f6b4-q9w8z-abcde")
    assert result["message"].startswith(
        "2 Workload(s), one per pod: 1 Queued, 1 Running; explaining one that is Queued."
    )


@pytest.mark.parametrize(
    ("job", "field"),
    [
        (StoredJobSet().uid(None).obj(), "metadata.uid: missing"),
        ({"metadata": {"namespace": "n"}}, "metadata.name: missing"),
    ],
)
def test_a_job_that_cannot_be_looked_up_is_an_error_naming_the_field(job: dict[str, Any], field: str) -> None:
    with pytest.raises(ExplainError, match=field):
        explain(ExplainRequest("JobSet", job, workload_index([rfc_example_one().obj()])))


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("Jobset", "kind 'Jobset': not one explain answers for; did you mean JobSet? use one of JobSet, Job"),
        ("Pod", "kind 'Pod': not one explain answers for; use one of JobSet, Job, Deployment, Workload"),
    ],
)
def test_a_kind_explain_does_not_answer_for_is_an_error(kind: str, message: str) -> None:
    with pytest.raises(ExplainError) as raised:
        explain(ExplainRequest(kind, StoredJobSet().obj(), workload_index([])))
    assert str(raised.value).startswith(message)


def _pod(namespace: str, name: str, ready: str) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready, "lastTransitionTime": T1}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "status": {"phase": "Running", "conditions": conditions},
    }


@pytest.mark.parametrize(("ready", "state"), [("True", "Running"), ("False", "Starting"), (None, "Starting")])
def test_a_deployments_pod_workload_is_as_ready_as_its_pod(ready: str | None, state: str) -> None:
    """One Workload per pod: its Pod's Ready condition says whether it runs, as a JobSet's status does."""
    service = deployment().obj()
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    pod = f"{name}-7c9d8f6b4-x2k4m"
    workload = rfc_example_one().name(f"pod-{pod}-abcde").namespace(namespace).job_uid("uid-pod").owner("Pod", pod)
    pods = {(namespace, pod): _pod(namespace, pod, ready)} if ready is not None else {}
    request = ExplainRequest("Deployment", service, workload_index([workload.obj()]), pods=pods)
    assert explain(request).decided.state == state
