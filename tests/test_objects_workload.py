"""Reading a judged object's counts as the API server receives them."""

from __future__ import annotations

import pytest
from support import load_jobset, set_path

from webhook.engine.decision import AdmissionFacts, decide
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
