"""Reading a judged object's counts as the API server receives them."""

from __future__ import annotations

import copy

import pytest
from support import load_jobset, set_path

from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects.kinds import JOBSET
from webhook.objects.readers import read_workload
from webhook.objects.workload import READY_CONTAINERS, READY_JOBS
from webhook.policy.config import Policy

JOB_SPEC = "spec.replicatedJobs[0].template.spec"


def test_a_whole_number_written_as_a_float_is_that_number() -> None:
    """``parallelism: 16.0`` was "must be an integer" plus "parallelism is not set": in JSON it
    is the number 16, and kubectl sends it as 16."""
    as_int = decide(load_jobset("rfc-4.6-static"), AdmissionFacts(namespace="kubemaker"), Policy())
    floats = load_jobset("rfc-4.6-static")
    set_path(floats, f"{JOB_SPEC}.parallelism", 16.0)
    set_path(floats, f"{JOB_SPEC}.completions", 16.0)
    set_path(floats, "spec.replicatedJobs[0].replicas", 2.0)
    as_float = decide(floats, AdmissionFacts(namespace="kubemaker"), Policy())
    assert as_float.allowed and as_float.rule_ids() == as_int.rule_ids() == []


@pytest.mark.parametrize("value", [16.5, float("inf"), float("nan")])
def test_a_fraction_is_still_malformed(value: float) -> None:
    obj = load_jobset("rfc-4.6-static")
    set_path(obj, f"{JOB_SPEC}.parallelism", value)
    decision = decide(obj, AdmissionFacts(namespace="kubemaker"), Policy())
    assert not decision.allowed and "jobset-malformed" in decision.rule_ids()


def test_paths_past_those_built_at_import_read_as_the_first_ones() -> None:
    """The first podSets' and containers' paths are built once at import, the rest per read: a
    JobSet with more of both names each container where it is, and a bad value past them too."""
    obj = load_jobset("rfc-4.6-static")
    first = obj["spec"]["replicatedJobs"][0]
    pod = first["template"]["spec"]["template"]["spec"]
    pod["containers"] = [copy.deepcopy(pod["containers"][0]) | {"name": f"c{n}"} for n in range(READY_CONTAINERS + 1)]
    pod["initContainers"] = [{"name": f"i{n}", "image": "busybox"} for n in range(READY_CONTAINERS + 1)]
    obj["spec"]["replicatedJobs"] = [copy.deepcopy(first) | {"name": f"job-{n}"} for n in range(READY_JOBS + 1)]
    workload = read_workload(JOBSET, obj, Policy())
    assert [[str(c.path) for c in [*p.containers, *p.init_containers]] for p in workload.podsets] == [
        [
            *(
                f"spec.replicatedJobs[{j}].template.spec.template.spec.containers[{n}]"
                for n in range(READY_CONTAINERS + 1)
            ),
            *(
                f"spec.replicatedJobs[{j}].template.spec.template.spec.initContainers[{n}]"
                for n in range(READY_CONTAINERS + 1)
            ),
        ]
        for j in range(READY_JOBS + 1)
    ]
    last = f"spec.replicatedJobs[{READY_JOBS}].template.spec.template.spec.containers[{READY_CONTAINERS}]"
    set_path(obj, f"{last}.resources.requests", "not a mapping")
    decision = decide(obj, AdmissionFacts(namespace="kubemaker"), Policy())
    assert [str(f.path) for f in decision.findings if f.rule == "jobset-malformed"] == [f"{last}.resources.requests"]
