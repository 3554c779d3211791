"""The explainer's inputs: the Workload index and the cohort tree of the quota picture."""

from __future__ import annotations

from explain_builders import JOBSET_UID, WORKLOAD_UID, amounts, rfc_example_one

from webhook.explain.inputs import CohortQuota, QueueQuota, QuotaPicture, WorkloadList


def test_workload_list_indexes_by_uid_job_uid_and_namespace() -> None:
    one = rfc_example_one().obj()
    unlabelled = rfc_example_one().name("w2").uid("u2").job_uid(None).namespace("other").obj()
    index = WorkloadList([one, unlabelled, {"metadata": "broken"}])
    assert index.by_uid(WORKLOAD_UID) is one
    assert index.by_uid("missing") is None
    assert list(index.by_job_uid(JOBSET_UID)) == [one]
    assert list(index.in_namespace("other")) == [unlabelled]


def _picture() -> QuotaPicture:
    quota = {"tpu7x": {"google.com/tpu": amounts(64)}}
    return QuotaPicture(
        cluster_queues={
            "a": QueueQuota("a", "root", quota),
            "b": QueueQuota("b", "child", quota),
            "c": QueueQuota("c", "implicit", quota),
            "d": QueueQuota("d", None, quota),
        },
        cohorts={
            "root": CohortQuota("root"),
            "child": CohortQuota("child", "root"),
            "loop": CohortQuota("loop", "loop"),
        },
    )


def test_cohort_tree() -> None:
    picture = _picture()
    assert picture.root("child") == "root"
    assert picture.root("implicit") == "implicit"  # named by a queue, no Cohort object
    assert picture.root("loop") == "loop"
    assert [q.name for q in picture.queues_under("root")] == ["a", "b"]
    assert picture.roots() == ["implicit", "loop", "root"]
    assert [q.name for q in picture.standalone()] == ["d"]
    assert picture.child_cohorts("loop") == []
