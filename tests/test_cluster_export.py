"""``tpu-admission snapshot``: the real ``kubernetes`` client against the test API server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cluster_apiserver import FakeApiServer, write_kubeconfig
from cluster_fixtures import OBJECTS, load

from webhook.cli.main import main
from webhook.cluster import kinds as k
from webhook.cluster.statefiles import load_state_files
from webhook.policy.config import Policy

POLICY = Policy()


def test_snapshot_writes_every_kind_and_check_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api = FakeApiServer()
    load(api)
    for cohort in [o for o in OBJECTS if o["kind"] == "Cohort"]:
        api.delete(k.COHORTS, cohort["metadata"]["name"])  # RFC-0033's setup: implicit cohorts only
    api.start()
    try:
        kubeconfig = write_kubeconfig(tmp_path / "config", api.port)
        out = tmp_path / "state.yaml"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]) == 0
    finally:
        api.stop()
    documents = list(yaml.safe_load_all(out.read_text()))
    assert [d["kind"] for d in documents] == [f"{kind.kind}List" for kind in k.KINDS]
    by_kind = {d["kind"]: d["items"] for d in documents}
    assert by_kind["CohortList"] == []  # read, and empty: not unknown
    assert len(by_kind["WorkloadList"]) == sum(1 for o in OBJECTS if o["kind"] == "Workload")
    assert all("managedFields" not in item["metadata"] for items in by_kind.values() for item in items)

    state = load_state_files([str(out)], POLICY)
    assert state.unavailable(frozenset(kind.name for kind in k.KINDS)) == {}
    assert state.cohorts_known() and not state.cohorts
    assert state.potential("team-a", "tpu7x-4x4x4", "google.com/tpu").value == 384  # the implicit cohort lends

    job = Path(__file__).parent / "fixtures" / "jobsets" / "rfc-4.6-static.yaml"
    capsys.readouterr()
    assert main(["check", str(job), "--cluster-state", str(out)]) == 0
    assert "cluster state unknown" not in capsys.readouterr().out


def test_a_kind_that_cannot_be_listed_is_left_out_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api = load(FakeApiServer())
    api.errors = {"Cohorts": 404}
    api.start()
    try:
        out = tmp_path / "state.yaml"
        code = main(["snapshot", "--kubeconfig", str(write_kubeconfig(tmp_path / "config", api.port)), "-o", str(out)])
    finally:
        api.stop()
    assert code == 1
    assert "Cohorts: absent (404)" in capsys.readouterr().err
    state = load_state_files([str(out)], POLICY)
    assert set(state.unavailable(frozenset(kind.name for kind in k.KINDS))) == {"Cohorts"}


def test_snapshot_without_a_cluster_configuration_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "--kubeconfig", str(tmp_path / "missing")]) == 2
    assert "cluster configuration could not be loaded" in capsys.readouterr().err
