"""The explanation an advisor request answers: SPEC §13's body and a Kubernetes read's status."""

from __future__ import annotations

import pytest
from explain_builders import preempted_example_objects

from webhook.advisor.explaining import answer
from webhook.cluster.statefiles import state_from_objects
from webhook.policy.config import Policy

POLICY = Policy()


@pytest.mark.parametrize(
    ("target", "status", "error"),
    [
        (
            ("kubemaker", "jobset", "other"),
            404,
            "JobSet kubemaker/other: not found: no Workload in kubemaker names JobSet other as its owner; JobSets "
            "themselves are not read here, so one Kueue does not manage (no kueue.x-k8s.io/queue-name label) is "
            "not known either",
        ),
        (("kubemaker", "Workloads", "nope"), 404, "Workload kubemaker/nope: not found"),
        (
            ("kubemaker", "jobst", "llm-pretrain-a3f8"),
            400,
            "kind 'jobst': not one explain answers for; did you mean JobSet? use JobSet, Job, Deployment or Workload",
        ),
        (
            ("Kube_Maker", "job", "x"),
            400,
            "namespace 'Kube_Maker': not a Kubernetes name (a-z, 0-9, '-' and '.', at most 253)",
        ),
        (
            ("kubemaker", "job", "a" * 300),
            400,
            f"name '{'a' * 100}...': not a Kubernetes name (a-z, 0-9, '-' and '.', at most 253)",
        ),
    ],
)
def test_bad_questions_get_a_4xx_with_the_reason_in_13s_shape(
    target: tuple[str, str, str], status: int, error: str
) -> None:
    cluster = state_from_objects(preempted_example_objects(), POLICY)
    assert answer(cluster, *target) == (status, {"results": [], "errors": [error]})


def test_a_found_job_is_200_with_one_result() -> None:
    code, body = answer(
        state_from_objects(preempted_example_objects(), POLICY), "kubemaker", "jobset", "llm-pretrain-a3f8"
    )
    assert (code, body["errors"], [r["workload"] for r in body["results"]]) == (
        200,
        [],
        ["kubemaker/jobset-llm-pretrain-a3f8-4f9d2"],
    )


def test_unread_workloads_and_no_cluster_are_503() -> None:
    unsynced = state_from_objects([o for o in preempted_example_objects() if o["kind"] != "Workload"], POLICY)
    for cluster, error in [
        (unsynced, "Workloads cannot be read now: no objects of this kind in the --cluster-state input"),
        (None, "this server watches no cluster (started without a kubeconfig): nothing to explain"),
    ]:
        code, body = answer(cluster, "kubemaker", "jobset", "llm-pretrain-a3f8")
        assert code == 503
        [message] = body["errors"]
        assert message.startswith(error)
