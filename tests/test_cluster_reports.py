"""``webhook.cluster.reports``: PolicyReports written by server-side apply, stale ones removed (test API server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import policy_report
from cluster_apiserver import FakeApiServer, client_for

from webhook.cluster.listing import ListError
from webhook.cluster.reports import CLUSTER_POLICY_REPORTS, POLICY_REPORTS, apply_reports

SELECTOR = "app.kubernetes.io/managed-by=tpu-admission"


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = FakeApiServer(kinds=(POLICY_REPORTS, CLUSTER_POLICY_REPORTS)).start()
    try:
        yield server
    finally:
        server.stop()


def test_written_by_server_side_apply_and_replaced_whole(api: FakeApiServer, tmp_path: Path) -> None:
    with client_for(api, tmp_path) as api_client:
        done = apply_reports(
            api_client, [policy_report("tpu-admission", "a"), policy_report("tpu-admission")], SELECTOR
        )
        assert done.written == ["a/tpu-admission", "tpu-admission"] and done.deleted == []
        changed = policy_report("tpu-admission", "a")
        changed["summary"] = {"fail": 1}
        apply_reports(api_client, [changed, policy_report("tpu-admission")], SELECTOR)
    assert api.objects[POLICY_REPORTS.path][("a", "tpu-admission")]["summary"] == {"fail": 1}
    assert ("", "tpu-admission") in api.objects[CLUSTER_POLICY_REPORTS.path]
    patches = [(path, query) for path, query in api.requests if path == POLICY_REPORTS.path and "fieldManager" in query]
    assert patches and all(q["fieldManager"] == ["tpu-admission"] and q["force"] == ["true"] for _, q in patches)


def test_stale_reports_of_this_tool_go_and_nobody_elses(api: FakeApiServer, tmp_path: Path) -> None:
    for obj in (
        policy_report("tpu-admission", "a"),
        policy_report("tpu-admission-2", "a"),  # a namespace that needed two parts before
        policy_report("tpu-admission", "b"),
        policy_report("kyverno-report", "a", labels=None),
    ):
        api.put(POLICY_REPORTS, obj)
    with client_for(api, tmp_path) as api_client:
        done = apply_reports(api_client, [policy_report("tpu-admission", "a")], SELECTOR)
    assert sorted(done.deleted) == ["a/tpu-admission-2", "b/tpu-admission"]
    assert set(api.objects[POLICY_REPORTS.path]) == {("a", "tpu-admission"), ("a", "kyverno-report")}
    assert done.line() == "applied 1 PolicyReport(s), deleted 2 stale one(s) (a/tpu-admission-2, b/tpu-admission)"


def test_cluster_reports_are_read_only_by_a_run_that_writes_one(api: FakeApiServer, tmp_path: Path) -> None:
    """An audit of namespaced kinds writes none, so it needs no access to them at all."""
    api.put(CLUSTER_POLICY_REPORTS, policy_report("tpu-admission"))
    api.put(CLUSTER_POLICY_REPORTS, policy_report("tpu-admission-2"))
    with client_for(api, tmp_path) as api_client:
        apply_reports(api_client, [policy_report("tpu-admission", "a")], SELECTOR)
        assert api.list_requests(CLUSTER_POLICY_REPORTS) == 0
        done = apply_reports(api_client, [policy_report("tpu-admission")], SELECTOR)
    assert done.deleted == ["a/tpu-admission", "tpu-admission-2"]  # the namespaced one is stale now too
    assert set(api.objects[CLUSTER_POLICY_REPORTS.path]) == {("", "tpu-admission")}


def test_a_namespaced_audit_touches_only_its_namespaces(api: FakeApiServer, tmp_path: Path) -> None:
    for namespace in ("a", "b"):
        api.put(POLICY_REPORTS, policy_report("tpu-admission", namespace))
    api.put(CLUSTER_POLICY_REPORTS, policy_report("tpu-admission"))
    with client_for(api, tmp_path) as api_client:
        done = apply_reports(api_client, [], SELECTOR, namespaces=["a"])
    assert done.deleted == ["a/tpu-admission"]
    assert set(api.objects[POLICY_REPORTS.path]) == {("b", "tpu-admission")}
    assert set(api.objects[CLUSTER_POLICY_REPORTS.path]) == {("", "tpu-admission")}


def test_without_the_cluster_crd_only_namespaced_reports(api: FakeApiServer, tmp_path: Path) -> None:
    api.errors = {"ClusterPolicyReports": 403}  # not even readable: never asked
    api.put(POLICY_REPORTS, policy_report("tpu-admission", "b"))
    with client_for(api, tmp_path) as api_client:
        done = apply_reports(api_client, [policy_report("tpu-admission", "a")], SELECTOR)
    assert done.deleted == ["b/tpu-admission"]


@pytest.mark.parametrize("failing", ["PolicyReports", "ClusterPolicyReports"])
def test_a_write_or_listing_that_fails_is_an_error(api: FakeApiServer, tmp_path: Path, failing: str) -> None:
    api.errors = {failing: 403}
    reports = [policy_report("tpu-admission", "a")] if failing == "PolicyReports" else [policy_report("tpu-admission")]
    with client_for(api, tmp_path) as api_client, pytest.raises(ListError, match=r"forbidden \(403\)"):
        apply_reports(api_client, reports, SELECTOR)
