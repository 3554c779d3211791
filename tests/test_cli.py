"""``tpu-admission check`` through a subprocess: exit codes, the JSON contract, formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from rule_cases import CASES
from support import JOBSETS, load_deployment, load_job, load_jobset

ENTRY = [sys.executable, "-m", "webhook"]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ENTRY, *args], input=stdin, capture_output=True, text=True, timeout=60)


def results(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return json.loads(proc.stdout)["results"]  # type: ignore[no-any-return]


def test_rfc_examples_pass(tmp_path: Path) -> None:
    proc = cli("check", str(JOBSETS / "rfc-4.6-static.yaml"), str(JOBSETS / "rfc-4.6-static-single.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 checked, 0 denied, 0 skipped" in proc.stdout


def test_denied_exits_1_with_one_line_per_finding() -> None:
    proc = cli("check", str(JOBSETS / "falcon-before-migration.yaml"), "--mode", "dynamic")
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if line.startswith("  deny  ")]
    assert len(lines) == 3
    assert "falcon-before-migration.yaml:3: JobSet falcon-jobs/falcon-sft: DENIED (tier dev)" in proc.stdout


def test_json_contract() -> None:
    proc = cli(
        "check",
        str(JOBSETS / "falcon-migration.yaml"),
        str(JOBSETS / "falcon-before-migration.yaml"),
        "--mode",
        "dynamic",
        "--output",
        "json",
    )
    assert proc.returncode == 1
    admitted, denied = results(proc)
    for record in (admitted, denied):
        assert {"source", "kind", "namespace", "name", "allowed", "violations", "warnings", "patch"} <= set(record)
    assert admitted["allowed"] is True and admitted["violations"] == []
    assert admitted["patch"] == [
        {
            "op": "add",
            "path": "/metadata/labels",
            "value": {"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "default"},
        }
    ]
    assert denied["allowed"] is False and denied["patch"] == []
    assert {v["rule"] for v in denied["violations"]} == {
        "exclusive-topology-forbidden",
        "slice-topology-missing",
        "static-topology-selector-forbidden",
    }
    for violation in denied["violations"]:
        assert set(violation) == {"rule", "path", "message", "action"} and violation["action"] == "deny"


def test_warnings_carry_action_warn_and_exit_0(tmp_path: Path) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"][
        "cloud.google.com/gke-tpu-slice-topology"
    ] = "4x4x4"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(obj))
    proc = cli("check", str(path), "--output", "json")
    assert proc.returncode == 0
    (record,) = results(proc)
    assert record["violations"][0]["action"] == "warn"
    assert record["warnings"][0].startswith("[slice-topology-ignored]")


def test_stdin_multidocument_and_non_jobsets_are_skipped() -> None:
    text = "\n---\n".join(
        [
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}",
            (JOBSETS / "rfc-4.6-static.yaml").read_text(),
            "",
        ]
    )
    proc = cli("check", "-", "--output", "json", stdin=text)
    assert proc.returncode == 0, proc.stderr
    skipped, checked = results(proc)
    assert skipped["kind"] == "ConfigMap" and "not a JobSet" in skipped["skipped"] and skipped["allowed"] is True
    assert checked["source"] == "<stdin>" and checked["allowed"] is True


def test_directories_are_read_recursively(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "job.yml").write_text((JOBSETS / "falcon-before-migration.yaml").read_text())
    (tmp_path / "a" / "job.json").write_text(json.dumps(load_jobset("rfc-4.3.1-dynamic")))
    (tmp_path / "notes.txt").write_text("not a manifest")
    proc = cli("check", str(tmp_path), "--mode", "dynamic", "--output", "json")
    assert proc.returncode == 1
    assert sorted(Path(r["source"]).name for r in results(proc)) == ["job.json", "job.yml"]


def test_tier_and_namespace_labels_flags(tmp_path: Path) -> None:
    dev_job = str(JOBSETS / "falcon-migration.yaml")
    as_production = cli("check", dev_job, "--mode", "dynamic", "--tier", "production", "--output", "json")
    assert as_production.returncode == 1
    assert {v["rule"] for v in results(as_production)[0]["violations"]} == {
        "queue-label-missing",
        "priority-label-missing",
    }
    unmanaged = cli("check", dev_job, "--mode", "dynamic", "--namespace-labels", "team=falcon", "--output", "json")
    assert unmanaged.returncode == 0 and results(unmanaged)[0]["patch"] == []


def test_github_annotations_point_at_the_offending_line() -> None:
    source = JOBSETS / "falcon-before-migration.yaml"
    proc = cli("check", str(source), "--mode", "dynamic", "--output", "github")
    assert proc.returncode == 1
    lines = source.read_text().splitlines()
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 3
    exclusive = next(e for e in errors if "exclusive-topology-forbidden" in e)
    line_number = int(exclusive.split(",line=")[1].split(",")[0])
    assert "alpha.jobset.sigs.k8s.io/exclusive-topology" in lines[line_number - 1]
    topology = next(e for e in errors if "static-topology-selector-forbidden" in e)
    line_number = int(topology.split(",line=")[1].split(",")[0])
    assert "cloud.google.com/gke-tpu-topology" in lines[line_number - 1]


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["missing.yaml"], "no such file"),
        (["--tier", "staging", "JOB"], "--tier 'staging' is not a configured tier"),
        (["--namespace-labels", "novalue", "JOB"], "is not key=value"),
        (["--config", "CONFIG", "JOB"], "subSlicing: Input should be a valid boolean"),
        (["BADYAML"], "not valid YAML"),
        (["--output", "xml", "JOB"], "invalid choice"),
    ],
)
def test_bad_usage_exits_2_with_a_message(tmp_path: Path, args: list[str], stderr: str) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text("subSlicing: perhaps\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    mapping = {"JOB": str(JOBSETS / "rfc-4.6-static.yaml"), "CONFIG": str(config), "BADYAML": str(bad)}
    proc = cli(*_check(args, mapping))
    assert proc.returncode == 2
    assert stderr in proc.stderr


def _check(args: list[str], mapping: dict[str, str]) -> list[str]:
    return ["check", *[mapping.get(a, a) for a in args]]


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_rule_examples_through_check(tmp_path: Path, mode: str) -> None:
    cases = [c for c in CASES if c.plain and c.mode == mode]
    for index, case in enumerate(cases):
        (tmp_path / f"case-{index:03}.yaml").write_text(yaml.safe_dump(case.object()))
    proc = cli("check", str(tmp_path), "--mode", mode, "--output", "json")
    assert proc.returncode in (0, 1), proc.stderr
    by_file = {Path(r["source"]).name: r for r in results(proc)}
    for index, case in enumerate(cases):
        record = by_file[f"case-{index:03}.yaml"]
        fired = {v["rule"] for v in record["violations"]}
        assert (case.rule in fired) == case.fires, case.id


def test_module_and_rules_command() -> None:
    proc = cli("rules")
    assert proc.returncode == 0 and "slice-name-too-long" in proc.stdout


def test_config_command_prints_a_policy_that_loads_back(tmp_path: Path) -> None:
    proc = cli("config")
    assert proc.returncode == 0
    dumped = tmp_path / "policy.yaml"
    dumped.write_text(proc.stdout)
    from webhook.config import Policy, load_policy

    assert load_policy(dumped) == Policy()
    bad = tmp_path / "bad.yaml"
    bad.write_text("tiers: {dev: {defaultQueu: x}}\n")
    proc = cli("config", "--config", str(bad))
    assert proc.returncode == 2 and "tiers.dev.defaultQueu: unknown key" in proc.stderr


def _kustomize_output() -> str:
    """What ``kubectl kustomize`` prints for an overlay: one stream, one document per object."""
    child = load_job("rfc-job-static")
    child["metadata"].update(
        name="llm-pretrain-a3f8-workers-0",
        ownerReferences=[
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "llm-pretrain-a3f8",
                "uid": "u",
                "controller": True,
            }
        ],
    )
    child["spec"]["suspend"] = True  # the JobSet controller's Job: not judged again
    bad_job = load_job("rfc-job-static")
    bad_job["spec"]["parallelism"] = 8
    bad_deployment = load_deployment("service-deployment")
    del bad_deployment["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    documents = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "kubemaker"}},
        load_jobset("rfc-4.6-static"),
        child,
        bad_job,
        bad_deployment,
        load_job("dev-job-cpu"),
        load_deployment("dev-deployment"),
    ]
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in documents)


def test_check_judges_jobs_and_deployments_in_kustomize_output() -> None:
    proc = cli("check", "-", "--output", "json", stdin=_kustomize_output())
    assert proc.returncode == 1, proc.stderr
    summary = [
        (r["kind"], r["name"], r["allowed"], sorted({v["rule"] for v in r["violations"]}), bool(r["patch"]))
        for r in results(proc)
    ]
    assert summary == [
        ("ConfigMap", "cfg", True, [], False),
        ("JobSet", "llm-pretrain-a3f8", True, [], False),
        ("Job", "llm-pretrain-a3f8-workers-0", True, [], False),
        ("Job", "llm-eval-b7c2", False, ["host-count-mismatch"], False),
        ("Deployment", "eval-gateway", False, ["priority-label-missing"], False),
        ("Job", "data-prep", True, [], True),
        ("Deployment", "notebook-proxy", True, [], True),
    ]
    skipped = results(proc)[0]["skipped"]
    assert skipped == "not a JobSet, Job or Deployment (v1 ConfigMap)"


def test_every_output_format_names_the_kind() -> None:
    text = cli("check", "-", stdin=_kustomize_output())
    assert text.returncode == 1
    assert "<stdin>:" in text.stdout and ": Job kubemaker/llm-eval-b7c2: DENIED (tier production)" in text.stdout
    assert ": Deployment kubemaker/eval-gateway: DENIED (tier production)" in text.stdout
    assert ": Deployment default/notebook-proxy: admitted (tier dev)" in text.stdout
    assert "6 checked, 2 denied, 1 skipped" in text.stdout
    github = cli("check", "-", "--output", "github", stdin=_kustomize_output())
    errors = [line for line in github.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2  # the Job's parallelism, the Deployment's priority
    assert "title=host-count-mismatch (Job kubemaker/llm-eval-b7c2)" in errors[0]
    assert "title=priority-label-missing (Deployment kubemaker/eval-gateway)" in errors[1]


def test_github_annotation_points_at_a_jobs_field(tmp_path: Path) -> None:
    job = load_job("rfc-job-static")
    job["spec"]["template"]["spec"]["priorityClassName"] = "ci-tpu-pool"
    source = tmp_path / "job.yaml"
    source.write_text(yaml.safe_dump(job, sort_keys=False))
    proc = cli("check", str(source), "--output", "github")
    (error,) = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    line_number = int(error.split(",line=")[1].split(",")[0])
    assert "priorityClassName: ci-tpu-pool" in source.read_text().splitlines()[line_number - 1]
