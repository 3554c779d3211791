"""What a stored job's status says: ended (and how), every replica ready or not, or nothing."""

from __future__ import annotations

from typing import Any

import pytest
from explain_builders import StoredJobSet

from webhook.explain.jobstatus import all_ready, terminal


@pytest.mark.parametrize(
    ("kind", "job", "expected"),
    [
        ("JobSet", StoredJobSet().ready(2).obj(), True),
        ("JobSet", StoredJobSet().ready(1).obj(), False),
        ("JobSet", StoredJobSet().obj(), None),
        ("JobSet", None, None),
        ("Job", {"spec": {"parallelism": 4}, "status": {"ready": 4}}, True),
        ("Job", {"spec": {"parallelism": 4}, "status": {"ready": 3}}, False),
        # 2 of 3 completions done: one pod left to run, and it is ready
        ("Job", {"spec": {"parallelism": 4, "completions": 3}, "status": {"ready": 1, "succeeded": 2}}, True),
        ("Job", {"spec": {}, "status": {}}, None),
        ("Deployment", {"spec": {"replicas": 3}, "status": {"readyReplicas": 3}}, True),
        ("Deployment", {"spec": {"replicas": 3}, "status": {}}, False),
        ("Deployment", {"spec": {"replicas": 3}}, None),
        ("Workload", {"spec": {}, "status": {}}, None),
    ],
)
def test_all_ready(kind: str, job: dict[str, Any] | None, expected: bool | None) -> None:
    assert all_ready(kind, job) is expected


def test_terminal_failed_before_completed_and_none_for_a_deployment() -> None:
    both = StoredJobSet().condition("Completed").condition("Failed").obj()
    ended = terminal("JobSet", both)
    assert ended is not None
    assert (ended[0].type, ended[1]) == ("Failed", True)
    assert terminal("JobSet", StoredJobSet().obj()) is None
    assert terminal("Deployment", {"status": {"conditions": [{"type": "Failed", "status": "True"}]}}) is None
