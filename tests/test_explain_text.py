"""The text rendering: RFC-0033 example two as a person reads it, and 80 columns in every state."""

from __future__ import annotations

from typing import Any

import pytest
from explain_builders import (
    TPU,
    StoredJobSet,
    amounts,
    preemptor_workload,
    queued_workload,
    rfc_example_one,
    rfc_example_two,
    simulation,
    tpu_pool,
    workload_index,
)

from webhook.explain.explainer import ExplainRequest, explain
from webhook.explain.inputs import CohortQuota, QueueQuota, QuotaPicture
from webhook.explain.text import render_explanation

EXAMPLE_TWO = """\
JobSet kubemaker/llm-pretrain-a3f8: Preempted (InCohortReclamation)
  What to do: wait for quota to free up in ClusterQueue team-b, or ask for a
  smaller slice to start sooner.
  Workload kubemaker/jobset-llm-pretrain-a3f8-4f9d2, ClusterQueue team-b, since
  2026-12-01T10:00:00Z

  - Preempted since 2026-12-01T10:00:00Z: the lending team took its quota back
    (the job ran on borrowed quota).
  - Preempted by Workload team-a-ns/jobset-llm-finetune-77aa-1b2c3 (job
    JobSet/team-a-ns/llm-finetune-77aa) of ClusterQueue team-a, priority 1000.
  - It was requeued automatically and waits in ClusterQueue team-b to be
    admitted again; nothing to resubmit.
  - As if submitted now, it would wait (WaitingForQuota).
  - Number 4 in line in its ClusterQueue: 3 Workloads are ahead of it (192
    chips).

Quota of cohort tpu-pool (> marks team-b):
  tpu7x google.com/tpu
      team    nominal  in use  borrowed  lent  pending
      team-a      256     256         0     0        0  ########################
    > team-b      256     128         0     0      128  ############............
  # in use   = lent to other teams   . free   + borrowed (bar to one scale)
"""


def _text(workloads: list[dict[str, Any]], picture: QuotaPicture | None = None) -> str:
    request = ExplainRequest(
        "JobSet",
        StoredJobSet().obj(),
        workload_index(workloads),
        picture if picture is not None else tpu_pool(),
        lambda: simulation("wait", "WaitingForQuota", 3, 192, cluster_queue="team-b"),
    )
    return render_explanation(explain(request))


def test_rfc_example_two_reads_as_the_rfcs_user_story() -> None:
    # RFC-0033 user story: "preempted (team X's guaranteed job reclaimed its borrowed quota),
    # requeued automatically, now at position N"
    assert _text([rfc_example_two().obj(), preemptor_workload().obj()]) == EXAMPLE_TWO


def _crowded() -> QuotaPicture:
    """63-character names, many teams, amounts of every size: the hardest case for 80 columns."""
    names = [f"team-{'x' * 56}{i:02d}" for i in range(30)]
    queues = {name: QueueQuota(name, "tpu-pool", {"tpu7x": {TPU: amounts(7, 3, 0, 1, 999999)}}) for name in names}
    queues["team-a"] = QueueQuota(
        "team-a",
        "tpu-pool",
        {
            "tpu7x": {TPU: amounts(10**9, 10**9 + 5, 5, 0, 10**12)},
            "cpu-standard": {"memory": amounts(2**50, 2**45 + 3), "cpu": amounts(1, 0)},
        },
    )
    return QuotaPicture(queues, {"tpu-pool": CohortQuota("tpu-pool")})


LONG_NAME = "w" * 253
#: (the state, its Workloads)
STATES = {
    "Queued": ("Queued", [queued_workload().obj()]),
    "ProvisioningSlice": (
        "ProvisioningSlice",
        [rfc_example_one().condition("Admitted", "False").check("tpu7x-slice", "Pending", "m " * 200).obj()],
    ),
    "Starting": ("Starting", [rfc_example_one().obj()]),
    "Preempted, preemptor present": (
        "Preempted",
        [rfc_example_two().obj(), preemptor_workload().name(LONG_NAME).obj()],
    ),
    "Preempted, preemptor gone": ("Preempted", [rfc_example_two().obj()]),
    "Finished": ("Finished", [rfc_example_one().condition("Finished", "True", "Succeeded", "x" * 300).obj()]),
    "Failed": ("Failed", [rfc_example_one().condition("Finished", "True", "Failed").obj()]),
    "Deactivated": ("Deactivated", [queued_workload().active(False).obj()]),
    "NotManaged": ("NotManaged", []),
}


@pytest.mark.parametrize("case", sorted(STATES))
@pytest.mark.parametrize("crowded", [False, True])
def test_every_state_fits_80_columns(case: str, crowded: bool) -> None:
    state, workloads = STATES[case]
    text = _text(workloads, _crowded() if crowded else None)
    assert text.startswith(f"JobSet kubemaker/llm-pretrain-a3f8: {state}")
    assert [line for line in text.splitlines() if len(line) > 80] == []


def test_a_crowded_cohort_still_marks_the_team_and_draws_bars() -> None:
    lines = _text([rfc_example_one().obj()], _crowded()).splitlines()
    own = [line for line in lines if line.startswith("    > team-a")]
    assert len(own) == 3  # one row per flavor and resource team-a has
    assert any("#" in line for line in own)


def _queued_text(answer: dict[str, Any]) -> str:
    request = ExplainRequest(
        "JobSet", StoredJobSet().obj(), workload_index([queued_workload().obj()]), None, lambda: answer
    )
    return render_explanation(explain(request))


def test_a_queued_job_first_in_line_leads_with_what_to_do() -> None:
    """The state, the reason and what to do come first; the place in line and the count ahead agree."""
    answer = simulation("wait", "WaitingForQuota", 0, 0, "team-a uses 256 of 256 tpu7x chips")
    assert _queued_text(answer) == (
        "JobSet kubemaker/llm-pretrain-a3f8: Queued (WaitingForQuota)\n"
        "  What to do: wait for quota to free up in ClusterQueue team-a, or ask for a\n"
        "  smaller slice to start sooner.\n"
        "  Workload kubemaker/jobset-llm-pretrain-a3f8-4f9d2, ClusterQueue team-a, since\n"
        "  2026-12-01T08:00:00Z\n"
        "\n"
        "  - Queued in ClusterQueue team-a since 2026-12-01T08:00:00Z: it holds no quota\n"
        "    yet.\n"
        "  - Kueue says: couldn't assign flavors.\n"
        "  - As if submitted now, it would wait (WaitingForQuota).\n"
        "  - First in line in its ClusterQueue: no Workload is ahead of it.\n"
        "  - team-a uses 256 of 256 tpu7x chips.\n"
    )


@pytest.mark.parametrize(
    ("answer", "step"),
    [
        (simulation("admit"), "nothing: Kueue admits it at its next scheduling cycle."),
        (
            simulation("never", "ExceedsMaxQuota"),
            "ask for a smaller slice: it asks for more than ClusterQueue team-a could ever hold, borrowing included.",
        ),
        (
            simulation("never", "Misconfigured"),
            "fix the queue the job names (its LocalQueue or ClusterQueue), or the job, and resubmit.",
        ),
        (
            simulation("wait", "StrictFIFO", 1, 64),
            "wait: ClusterQueue team-a is StrictFIFO and the Workload at its head goes first.",
        ),
        (
            simulation("unknown", ""),
            "wait for Kueue to admit it; the simulation cannot say when (the detail says why).",
        ),
    ],
)
def test_what_to_do_follows_the_simulations_answer(answer: dict[str, Any], step: str) -> None:
    request = ExplainRequest(
        "JobSet", StoredJobSet().obj(), workload_index([queued_workload().obj()]), None, lambda: answer
    )
    assert explain(request).next_step == step
