"""Finding a job's Workloads: by the job-uid label in its namespace, a Deployment's per pod."""

from __future__ import annotations

from builders import deployment
from explain_builders import StoredJobSet, rfc_example_one, workload_index

from webhook.explain.workloads import job_workloads, name_of, owner_job


def test_a_jobsets_workload_is_found_by_the_label_in_its_namespace_only() -> None:
    own = rfc_example_one().obj()
    elsewhere = rfc_example_one().namespace("other").obj()
    index = workload_index([own, elsewhere])
    assert [name_of(w) for w in job_workloads("JobSet", StoredJobSet().obj(), index)] == [
        "kubemaker/jobset-llm-pretrain-a3f8-4f9d2"
    ]


def test_never_by_name() -> None:
    # the generated name matches, the label does not: not the job's (RFC-0033 4.3.2)
    namesake = rfc_example_one().job_uid("some-other-uid").obj()
    assert job_workloads("JobSet", StoredJobSet().obj(), workload_index([namesake])) == []


def test_a_recreated_job_does_not_take_its_predecessors_workload() -> None:
    old = rfc_example_one().obj()
    assert job_workloads("JobSet", StoredJobSet().uid("new-uid").obj(), workload_index([old])) == []


def test_a_deployment_has_one_workload_per_pod() -> None:
    service = deployment().obj()
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    service["metadata"]["uid"] = "d-uid"
    pods = [f"{name}-7c9d8f6b4-x2k4m", f"{name}-7c9d8f6b4-q9w8z"]
    workloads = [
        rfc_example_one().name(f"pod-{pod}-abcde").namespace(namespace).job_uid(f"uid-{pod}").owner("Pod", pod).obj()
        for pod in pods
    ]
    stranger = rfc_example_one().name("pod-x").namespace(namespace).job_uid("u").owner("Pod", "other-7c9d8f6b4-x2k4m")
    found = job_workloads("Deployment", service, workload_index([*workloads, stranger.obj()]))
    assert [name_of(w) for w in found] == sorted(f"{namespace}/pod-{pod}-abcde" for pod in pods)


def test_owner_job_is_the_controller_reference() -> None:
    assert owner_job(rfc_example_one().obj()) == "JobSet/kubemaker/llm-pretrain-a3f8"
    assert owner_job({"metadata": {"namespace": "n"}}) is None
    loose = {"metadata": {"namespace": "n", "ownerReferences": [{"kind": "Job", "name": "j"}]}}
    assert owner_job(loose) == "Job/n/j"
