"""``tpu-admission snapshot``: the real ``kubernetes`` client against the test API server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from admin_fixtures import rfc_objects
from cluster_apiserver import FakeApiServer, free_port, write_kubeconfig
from cluster_fixtures import OBJECTS, load
from kueue_cache import rfc_api_server

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
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "--output-file", str(out)]) == 0
        capsys.readouterr()
        # stdout unless told a file, as kubectl get; the older -o FILE still writes the file, with a note
        assert main(["snapshot", "--kubeconfig", str(kubeconfig)]) == 0
        printed = capsys.readouterr().out
        older = tmp_path / "older.yaml"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(older)]) == 0
        note = capsys.readouterr().err
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", "yaml"]) == 0
        as_yaml = capsys.readouterr().out
    finally:
        api.stop()
    assert printed == as_yaml == out.read_text() == older.read_text()
    assert note == (
        f"tpu-admission snapshot: -o {older}: writing the file; -o is the format now, as in kubectl: "
        f"give --output-file {older}\n"
    )
    documents = list(yaml.safe_load_all(out.read_text()))
    assert [d["kind"] for d in documents] == [f"{kind.kind}List" for kind in k.WATCHED]
    by_kind = {d["kind"]: d["items"] for d in documents}
    assert by_kind["CohortList"] == []  # read, and empty: not unknown
    assert len(by_kind["WorkloadList"]) == sum(1 for o in OBJECTS if o["kind"] == "Workload")
    assert all("managedFields" not in item["metadata"] for items in by_kind.values() for item in items)

    state = load_state_files([str(out)], POLICY)
    view = state.snapshot()
    assert view.unavailable(frozenset(kind.name for kind in k.KINDS)) == {}
    assert view.queues.cohorts_unknown() is None and not view.queues.cohorts
    assert view.potential("team-a", "tpu7x-4x4x4", "google.com/tpu").value == 384  # the implicit cohort lends

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
        kubeconfig = write_kubeconfig(tmp_path / "config", api.port)
        code = main(["snapshot", "--kubeconfig", str(kubeconfig), "--output-file", str(out)])
    finally:
        api.stop()
    assert code == 1
    assert "Cohorts: absent (404)" in capsys.readouterr().err
    state = load_state_files([str(out)], POLICY)
    assert set(state.snapshot().unavailable(frozenset(kind.name for kind in k.KINDS))) == {"Cohorts"}


def test_snapshot_without_a_cluster_configuration_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "--kubeconfig", str(tmp_path / "missing")]) == 2
    assert "cluster configuration could not be loaded" in capsys.readouterr().err


@pytest.fixture
def no_cluster_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No $KUBECONFIG, a HOME without ~/.kube/config, not a pod: the home directory, to fill."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return home


@pytest.mark.parametrize("found_by", ["$KUBECONFIG", "~/.kube/config"])
def test_snapshot_finds_the_cluster_as_kubectl_does(
    tmp_path: Path, no_cluster_env: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    """Without --kubeconfig it tried only the in-cluster config ("Service host/port is not set")."""
    api = load(FakeApiServer()).start()
    try:
        if found_by == "$KUBECONFIG":
            config = write_kubeconfig(tmp_path / "config", api.port)
            # a list, as kubectl reads it; the missing file is skipped
            monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}{os.pathsep}{config}")
        else:
            (no_cluster_env / ".kube").mkdir()
            write_kubeconfig(no_cluster_env / ".kube" / "config", api.port)
        out = tmp_path / "state.yaml"
        assert main(["snapshot", "--output-file", str(out)]) == 0
    finally:
        api.stop()
    assert [d["kind"] for d in yaml.safe_load_all(out.read_text())] == [f"{kind.kind}List" for kind in k.WATCHED]


def test_snapshot_with_no_configuration_anywhere_says_where_it_looked(
    no_cluster_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot"]) == 2
    assert capsys.readouterr().err == (
        "tpu-admission snapshot: no cluster configuration: no --kubeconfig, $KUBECONFIG is not set, "
        "~/.kube/config does not exist, and this is not a pod (KUBERNETES_SERVICE_HOST is not set); "
        "give --kubeconfig FILE\n"
    )


def test_an_unreachable_cluster_is_exit_2_and_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It exited 1 and left a 27-byte file (the header line) behind."""
    port = free_port()
    kubeconfig = write_kubeconfig(tmp_path / "config", port)  # nothing listens there
    out = tmp_path / "state.yaml"
    assert main(["snapshot", "--kubeconfig", str(kubeconfig), "--output-file", str(out)]) == 2
    assert capsys.readouterr().err == (  # the server and the cause (the message was cut mid-sentence)
        f"tpu-admission snapshot: the API server at http://127.0.0.1:{port}: API server unreachable: "
        "Connection refused; nothing written\n"
    )
    assert sorted(tmp_path.iterdir()) == [kubeconfig]  # no file, no temporary one
    out.write_text("yesterday's snapshot\n")
    assert main(["snapshot", "--kubeconfig", str(kubeconfig), "--output-file", str(out)]) == 2
    assert out.read_text() == "yesterday's snapshot\n"  # kept whole, not truncated
    assert main(["snapshot", "--kubeconfig", str(kubeconfig)]) == 2
    assert capsys.readouterr().out == ""  # stdout gets nothing either


def test_an_output_that_cannot_be_written_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api = load(FakeApiServer()).start()
    try:
        kubeconfig = write_kubeconfig(tmp_path / "config", api.port)
        missing = tmp_path / "no" / "state.yaml"
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "--output-file", str(missing)]) == 2
    finally:
        api.stop()
    assert "cannot write it: No such file or directory" in capsys.readouterr().err


def test_a_snapshot_holds_what_lint_queues_judges_against(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RFC-0033's configuration in a live cluster: the snapshot holds every kind the admin
    guard reads (Kueue's ConfigMap and controller by name), so lint-queues skips nothing, and a
    change raising one team past the cluster's chips is refused against it."""
    api = rfc_api_server()
    api.load(k.KUEUE_CONFIG, [{"metadata": {"name": "other", "namespace": "kueue-system"}, "data": {}}])
    api.start()
    try:
        out = tmp_path / "state.yaml"
        kubeconfig = write_kubeconfig(tmp_path / "config", api.port)
        assert main(["snapshot", "--kubeconfig", str(kubeconfig), "--output-file", str(out)]) == 0
    finally:
        api.stop()
    by_kind = {d["kind"]: d["items"] for d in yaml.safe_load_all(out.read_text())}
    assert [item["metadata"]["name"] for item in by_kind["ConfigMapList"]] == ["kueue-manager-config"]
    assert [item["metadata"]["name"] for item in by_kind["DeploymentList"]] == ["kueue-controller-manager"]
    assert len(by_kind["WorkloadPriorityClassList"]) == 3

    team_a = next(
        o for o in rfc_objects("dynamic") if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-a"
    )
    change = tmp_path / "team-a.yaml"
    change.write_text(yaml.safe_dump(team_a))
    capsys.readouterr()
    argv = ["lint-queues", str(change), "--cluster-state", str(out), "--mode", "dynamic", "--strict"]
    assert main(argv) == 0
    assert "] skipped:" not in capsys.readouterr().out  # --strict passed: no rule was skipped
    team_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 320
    change.write_text(yaml.safe_dump(team_a))
    assert main(argv) == 1
    assert "[quota-exceeds-cluster]" in capsys.readouterr().out
