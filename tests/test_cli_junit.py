"""``check --output junit``: the XML shape GitLab and Jenkins read (tests/fixtures/junit.xsd),
one testcase per object, failures for denied objects, errors for unreadable files."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from support import FIXTURES, load_jobset, mixed_inputs, run_cli, with_slice_topology, write_yaml

cli = run_cli


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    return mixed_inputs(tmp_path)


JUNIT = xmlschema.XMLSchema(str(FIXTURES / "junit.xsd"))


def test_junit_one_testcase_per_object_and_a_failure_per_denied_one(mixed: Path) -> None:
    (mixed / "e-config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ops}\n")
    proc = cli("check", str(mixed), "--mode", "dynamic", "--output", "junit")
    assert proc.returncode == 2
    JUNIT.validate(proc.stdout)
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites"
    # the XSD is strict enough to catch an unknown element or a testcase without a name
    assert not JUNIT.is_valid(proc.stdout.replace("<failure ", "<failed ").replace("</failure>", "</failed>"))
    assert not JUNIT.is_valid(proc.stdout.replace('<testcase name="', '<testcase title="'))
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "5",
        "failures": "1",
        "errors": "2",
        "skipped": "1",
    }
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {
        "JobSet/falcon-jobs/falcon-sft",
        "JobSet/falcon-jobs/falcon-sft-v2",
        "ConfigMap/ops/cfg",
        str(mixed / "b-broken.yaml"),
        str(mixed / "d-latin1.yaml"),
    }
    assert cases["JobSet/falcon-jobs/falcon-sft-v2"].find("failure") is None
    failure = cases["JobSet/falcon-jobs/falcon-sft"].find("failure")
    assert failure is not None and failure.get("type") == "denied"
    assert failure.get("message") == "denied (tier dev, mode dynamic): 3 violation(s)"
    assert sorted(line.split("]")[0] for line in (failure.text or "").splitlines()) == [
        "[exclusive-topology-forbidden",
        "[slice-topology-missing",
        "[static-topology-selector-forbidden",
    ]
    assert cases["ConfigMap/ops/cfg"].find("skipped") is not None
    broken = cases[str(mixed / "b-broken.yaml")].find("error")
    assert broken is not None and (broken.get("message") or "").startswith("not valid YAML or JSON")


def test_junit_strict_warnings_fail_and_nothing_checked_is_a_failure(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "job.yaml", with_slice_topology(load_jobset("rfc-4.6-static")))
    lenient = cli("check", str(path), "--output", "junit")
    JUNIT.validate(lenient.stdout)
    assert (
        lenient.returncode == 0 and "<failure" not in lenient.stdout and "<system-out>warning: [slice" in lenient.stdout
    )
    strict = cli("check", str(path), "--output", "junit", "--strict")
    JUNIT.validate(strict.stdout)
    assert strict.returncode == 1 and 'type="warning" message="--strict (tier production, mode static)' in strict.stdout
    empty = cli("check", str(tmp_path / "nothing"), "--output", "junit", "--strict")
    assert empty.returncode == 2  # a path that does not exist is an error, not "nothing"
    (tmp_path / "none").mkdir()
    empty = cli("check", str(tmp_path / "none"), "--output", "junit", "--strict")
    JUNIT.validate(empty.stdout)
    assert empty.returncode == 1 and 'message="--strict: nothing was checked"' in empty.stdout


def test_junit_survives_control_characters_in_values(tmp_path: Path) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "bad\x07queue"
    path = write_yaml(tmp_path / "job.yaml", obj)
    proc = cli("check", str(path), "--output", "junit")
    assert proc.returncode == 1
    JUNIT.validate(proc.stdout)


def test_junit_under_strict_fails_a_skipped_document_that_looks_like_a_mistake(tmp_path: Path) -> None:
    misspelt = load_jobset("rfc-4.6-static")
    misspelt["kind"] = "Jobset"
    path = write_yaml(tmp_path / "job.yaml", misspelt)
    lenient = ET.fromstring(cli("check", str(path), "--output", "junit").stdout)
    assert [(c.tag, c.get("message", "")[-26:]) for c in lenient.iter("skipped")] == [
        ("skipped", "did you mean kind: JobSet?")
    ]
    proc = cli("check", str(path), "--output", "junit", "--strict")
    assert proc.returncode == 1
    JUNIT.validate(proc.stdout)
    failure, nothing = ET.fromstring(proc.stdout).iter("failure")
    assert failure.get("type") == "mistake" and failure.get("message", "").endswith("did you mean kind: JobSet?")
    assert nothing.get("message") == "--strict: nothing was checked"
