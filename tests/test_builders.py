"""The test builders change exactly what their method names, on a copy of the fixture."""

from __future__ import annotations

import copy

from builders import TPU, deployment, job, jobset
from support import load_deployment, load_job, load_jobset


def test_a_jobset_builder_changes_what_it_names_and_nothing_else() -> None:
    expected = copy.deepcopy(load_jobset("rfc-4.6-static"))
    expected["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "guaranteed"
    expected["spec"]["replicatedJobs"][0]["replicas"] = 3
    pod = expected["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"]["requests"][TPU] = 8
    del pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"]
    built = (
        jobset()
        .priority("guaranteed")
        .replicas(3)
        .request(TPU, 8)
        .node_selector("cloud.google.com/gke-tpu-topology", None)
        .obj()
    )
    assert built == expected


def test_job_and_deployment_builders_reach_their_pod_template() -> None:
    expected_job = copy.deepcopy(load_job("rfc-job-static"))
    expected_job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-z-queue"
    expected_job["spec"]["template"]["spec"]["tolerations"] = [{"key": TPU, "operator": "Exists"}]
    built_job = job().queue("team-z-queue").tolerations([{"key": TPU, "operator": "Exists"}]).obj()
    assert built_job == expected_job
    expected_deployment = copy.deepcopy(load_deployment("service-deployment"))
    expected_deployment["spec"]["replicas"] = 9
    del expected_deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert deployment().replicas(9).queue(None).obj() == expected_deployment


def test_each_builder_works_on_its_own_copy() -> None:
    jobset().replicas(99).obj()
    assert (
        jobset().obj()["spec"]["replicatedJobs"][0]["replicas"]
        == load_jobset("rfc-4.6-static")["spec"]["replicatedJobs"][0]["replicas"]
    )
