"""The ``[simulate]`` line on the admission path: read, never worked out there (``webhook.serving.simulateline``)."""

from __future__ import annotations

import copy
from typing import Any

from cluster_apiserver import wait_until
from cluster_fixtures import OBJECTS, POLICY
from support import load_jobset

from webhook.cluster.memo import MEMO_ENTRY_BYTES
from webhook.cluster.statefiles import state_from_objects
from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.serving.metrics import Metrics
from webhook.serving.simulateline import SimulateLines

VALIDATE = AdmissionFacts(operation="CREATE", stage="validate", namespace="kubemaker", kind="JobSet")
FITS = "rfc-4.6-static-single"  # 256 chips of tpu7x-4x8x8 in team-b, which has them free


def lines(decision: Decision) -> list[str]:
    return [w for w in decision.warnings if w.startswith("[simulate]")]


def test_the_first_job_of_a_shape_goes_without_and_the_next_reads_what_was_worked_out() -> None:
    store = state_from_objects(OBJECTS, POLICY)
    metrics = Metrics()
    hook = SimulateLines(metrics.simulate_lines)
    first = decide(load_jobset(FITS), VALIDATE, POLICY, store, hook)
    assert first.allowed and lines(first) == []
    assert metrics.simulate_lines.values == {("left_out",): 1}

    def carried() -> bool:
        return lines(decide(load_jobset(FITS), VALIDATE, POLICY, store, hook)) == [
            "[simulate] starts now on tpu7x-4x8x8"
        ]

    wait_until(carried, what="the line worked out in the background")
    assert metrics.simulate_lines.values[("read",)] == 1


def test_a_shape_whose_line_no_memo_would_keep_is_not_worked_out() -> None:
    """A job with a multi-MB value in its spec: its shape key is over the memo's entry bound,
    so its line could never be read back; the worker is not asked to work it out."""
    store = state_from_objects(OBJECTS, POLICY)
    metrics = Metrics()
    hook = SimulateLines(metrics.simulate_lines)
    job: dict[str, Any] = copy.deepcopy(load_jobset(FITS))
    pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["env"] = [{"name": "PAYLOAD", "value": "x" * MEMO_ENTRY_BYTES}]
    decision = decide(job, VALIDATE, POLICY, store, hook)
    assert decision.allowed and lines(decision) == []
    assert metrics.simulate_lines.values == {("left_out",): 1}
    assert hook.jobs.empty() and hook.worker is None
