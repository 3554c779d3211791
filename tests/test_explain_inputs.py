"""The explainer's inputs: the cohort tree of the quota picture (the Workload index is the store's
records, ``tests/test_cluster_workloadindex.py``)."""

from __future__ import annotations

from explain_builders import amounts

from webhook.explain.inputs import CohortQuota, QueueQuota, QuotaPicture


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
