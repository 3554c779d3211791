"""Resolving the preemptor from the UIDs of the message: present, re-created, gone."""

from __future__ import annotations

from explain_builders import PREEMPTOR_JOB_UID, PREEMPTOR_UID, RECLAIM_MESSAGE, preemptor_workload, workload_index

from webhook.explain.preemption import PreemptionNote, parse_preemption_message
from webhook.explain.preemptor import Preemptor, resolve_preemptor

NOTE = parse_preemption_message(RECLAIM_MESSAGE)
FOUND = Preemptor(
    "team-a-ns/jobset-llm-finetune-77aa-1b2c3",
    "JobSet/team-a-ns/llm-finetune-77aa",
    "team-a",
    1000,
    PREEMPTOR_UID,
    PREEMPTOR_JOB_UID,
    gone=False,
)


def test_found_by_its_workload_uid() -> None:
    preemptor = resolve_preemptor(NOTE, workload_index([preemptor_workload().obj()]))
    assert preemptor == FOUND
    assert preemptor.words() == (
        "Workload team-a-ns/jobset-llm-finetune-77aa-1b2c3 (job JobSet/team-a-ns/llm-finetune-77aa) "
        "of ClusterQueue team-a, priority 1000"
    )


def test_its_clusterqueue_from_the_path_when_it_holds_no_quota_now() -> None:
    workload = preemptor_workload().admitted_in(None).obj()
    preemptor = resolve_preemptor(NOTE, workload_index([workload]))
    assert preemptor is not None
    assert preemptor.cluster_queue == "team-a"


def test_found_by_its_job_uid_when_its_workload_was_recreated() -> None:
    recreated = preemptor_workload().uid("0f0f0f0f-0000-4000-8000-00000000000f").obj()
    preemptor = resolve_preemptor(NOTE, workload_index([recreated]))
    assert preemptor is not None
    assert (preemptor.workload, preemptor.workload_uid, preemptor.by_job_uid, preemptor.gone) == (
        "team-a-ns/jobset-llm-finetune-77aa-1b2c3",
        "0f0f0f0f-0000-4000-8000-00000000000f",
        True,
        False,
    )
    assert preemptor.words().endswith("priority 1000, its Workload since re-created")


def test_gone_keeps_its_uids_and_team_and_says_so() -> None:
    preemptor = resolve_preemptor(NOTE, workload_index([]))
    assert preemptor == Preemptor(None, None, "team-a", None, PREEMPTOR_UID, PREEMPTOR_JOB_UID, gone=True)
    assert preemptor.words() == (
        f"a Workload of ClusterQueue team-a no longer in the cluster (Workload UID {PREEMPTOR_UID}, "
        f"JobUID {PREEMPTOR_JOB_UID})"
    )


def test_a_message_without_uids_names_no_preemptor() -> None:
    assert resolve_preemptor(PreemptionNote(), workload_index([preemptor_workload().obj()])) is None
