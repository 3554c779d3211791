"""Kueue's preemption message, read part by part, and its Preempted reasons in plain words."""

from __future__ import annotations

import pytest
from explain_builders import PREEMPTOR_JOB_UID, PREEMPTOR_UID, RECLAIM_MESSAGE

from webhook.explain.preemption import PLAIN_WORDS, PreemptionNote, parse_preemption_message, why

CASES = [
    (
        "RFC-0033 4.3.2 example two",
        RECLAIM_MESSAGE,
        PreemptionNote(PREEMPTOR_UID, PREEMPTOR_JOB_UID, "/tpu-pool/team-a", "/tpu-pool/team-b"),
    ),
    (
        # kubernetes-sigs/kueue pkg/scheduler/preemption/preemption_test.go
        "Kueue's own test: a ClusterQueue in no cohort",
        "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the "
        "ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
        PreemptionNote("wl-in", "job-in", "/standalone", "/standalone"),
    ),
    (
        "parts Kueue did not know are written UNKNOWN",
        "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN; "
        "preemptor path: UNKNOWN; preemptee path: /c/q",
        PreemptionNote(None, None, None, "/c/q"),
    ),
    (
        "before the paths were added",
        "Preempted to accommodate a workload (UID: u1, JobUID: j1) due to Fair Sharing within the cohort",
        PreemptionNote("u1", "j1"),
    ),
    (
        "before the JobUID was added",
        "Preempted to accommodate a workload (UID: u1) due to reclamation within the cohort",
        PreemptionNote("u1"),
    ),
    ("the oldest form names nobody", "Preempted to accommodate a higher priority Workload", PreemptionNote()),
    ("no message", "", PreemptionNote()),
]


@pytest.mark.parametrize(("message", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_message_parts(message: str, expected: PreemptionNote) -> None:
    assert parse_preemption_message(message) == expected


def test_the_clusterqueues_are_the_paths_last_segments() -> None:
    note = parse_preemption_message(RECLAIM_MESSAGE)
    assert (note.preemptor_cluster_queue, note.preemptee_path_queue) == ("team-a", "team-b")
    assert PreemptionNote().preemptor_cluster_queue is None


def test_every_kueue_preempted_reason_has_plain_words() -> None:
    # apis/kueue/v1beta2/workload_types.go: the reasons of the Preempted condition
    assert set(PLAIN_WORDS) == {
        "InClusterQueue",
        "InCohortReclamation",
        "InCohortFairSharing",
        "InCohortReclaimWhileBorrowing",
    }
    assert why("InClusterQueue") == "a higher-priority job of the same team needed the quota"
    assert why("InCohortReclamation") == "the lending team took its quota back (the job ran on borrowed quota)"
    assert why("InCohortFairSharing") == "the cohort's fair share: the team used more than its share of the cohort"
    assert why("InCohortSomethingNew") == "Kueue's reason InCohortSomethingNew"
    assert why(None) == "Kueue gave no reason"
