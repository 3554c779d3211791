"""``webhook.objects.stored``: a stored object less what Kueue and the Slice Provisioner wrote on it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support import POD, load_deployment, load_job, load_jobset, set_path

from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.objects.stored import as_written
from webhook.policy.config import Policy

SLICE = "kueue.x-k8s.io/podset-slice-required-topology"
SIZE = "kueue.x-k8s.io/podset-slice-size"
TOPOLOGY = "cloud.google.com/gke-tpu-slice-topology"


def _annotations(obj: dict[str, Any], pod: str) -> dict[str, str]:
    node: Any = obj
    for part in pod.replace("[", ".").replace("]", "").split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return dict(node["metadata"].get("annotations") or {})


def test_suspend_goes_on_jobsets_and_jobs() -> None:
    for kind, obj in ((JOBSET, load_jobset("rfc-4.6-static")), (JOB, load_job("rfc-job-static"))):
        obj["spec"]["suspend"] = True
        stored = copy.deepcopy(obj)
        assert as_written(stored, kind, "static") is stored
        del obj["spec"]["suspend"]
        assert stored == obj


def test_static_mode_keeps_the_users_topology_annotations() -> None:
    """In static mode nobody else writes podset-*: they are the user's TAS request."""
    jobset = load_jobset("rfc-4.6-static")
    stored = as_written(copy.deepcopy(jobset), JOBSET, "static")
    assert stored == jobset
    assert {SLICE, SIZE} <= set(_annotations(stored, POD))


def test_dynamic_mode_drops_what_the_slice_provisioner_injected() -> None:
    jobset = load_jobset("rfc-4.3.1-dynamic")
    written = copy.deepcopy(jobset)
    for index in range(len(jobset["spec"]["replicatedJobs"])):
        pod = f"spec.replicatedJobs[{index}].template.spec.template"
        set_path(jobset, f'{pod}.metadata.annotations["{SLICE}"]', "cloud.google.com/gke-tpu-slice-4x4x4-id")
        set_path(jobset, f'{pod}.metadata.annotations["{SIZE}"]', "16")
    jobset["spec"]["suspend"] = False
    stored = as_written(jobset, JOBSET, "dynamic")
    assert stored == written
    assert TOPOLOGY in _annotations(stored, POD)  # the user's own annotation stays


def test_a_jobs_pod_template_too() -> None:
    job = load_job("rfc-job-dynamic")
    written = copy.deepcopy(job)
    set_path(job, f'spec.template.metadata.annotations["{SLICE}"]', "x")
    job["spec"]["suspend"] = True
    assert as_written(job, JOB, "dynamic") == written


def test_a_deployment_is_left_as_it_is() -> None:
    deployment = load_deployment("service-deployment")
    deployment["spec"]["suspend"] = True  # not a Deployment field: not Kueue's either, left for the reader
    set_path(deployment, f'spec.template.metadata.annotations["{SLICE}"]', "x")
    assert as_written(copy.deepcopy(deployment), DEPLOYMENT, "dynamic") == deployment


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"spec": None},
        {"spec": {"replicatedJobs": None}},
        {"spec": {"replicatedJobs": [None, {"template": "x"}, {"template": {"spec": {"template": None}}}]}},
        {"spec": {"template": {"metadata": {"annotations": None}}}},
        "not an object",
    ],
)
def test_malformed_objects_are_left_to_the_reader(obj: Any) -> None:
    for kind in (JOBSET, JOB):
        assert as_written(copy.deepcopy(obj), kind, "dynamic") == obj


def test_the_rules_about_those_fields_find_nothing_and_the_others_still_judge() -> None:
    """spec.suspend and injected podset-* are not judged; a pod priorityClassName still is."""
    policy = Policy(mode="dynamic")
    jobset = load_jobset("rfc-4.3.1-dynamic")
    jobset["spec"]["suspend"] = True
    set_path(jobset, f'{POD}.metadata.annotations["{SLICE}"]', "cloud.google.com/gke-tpu-slice-4x4x4-id")
    set_path(jobset, f"{POD}.spec.priorityClassName", "high")
    facts = AdmissionFacts(namespace="kubemaker", kind=JOBSET)
    before = {f.rule for f in decide(copy.deepcopy(jobset), facts, policy).violations}
    assert {"suspend-forbidden", "podset-annotation-forbidden", "pod-priority-class-forbidden"} <= before
    after = {f.rule for f in decide(as_written(jobset, JOBSET, "dynamic"), facts, policy).violations}
    assert after == {"pod-priority-class-forbidden"}
