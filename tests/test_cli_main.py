"""``tpu-admission check`` and the other subcommands, in-process through ``main(argv)``:
exit codes, the JSON contract, strict mode, partial failures, text and github output
(junit and sarif have their own test modules).

The console script itself (a real process, a real pipe) is tested at the end."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rule_cases import CASES
from support import (
    FIXTURES,
    JOBSETS,
    CliRun,
    load_deployment,
    load_job,
    load_jobset,
    mixed_inputs,
    run_cli,
    with_slice_topology,
    write_yaml,
)

from webhook import __version__
from webhook.cli.main import COMMANDS, build_parser, hoist_global_flags

cli = run_cli


def results(proc: CliRun) -> list[dict[str, Any]]:
    return json.loads(proc.stdout)["results"]  # type: ignore[no-any-return]


def test_rfc_examples_pass() -> None:
    proc = cli("check", str(JOBSETS / "rfc-4.6-static.yaml"), str(JOBSETS / "rfc-4.6-static-single.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "2 checked, 2 admitted, 0 denied, 0 warned, 0 skipped, 0 errors; "
        "mode static (the default; use --mode dynamic for dynamic-mode jobs)"
    )


def test_denied_exits_1_with_one_line_per_finding_and_names_tier_and_mode() -> None:
    proc = cli("check", str(JOBSETS / "falcon-before-migration.yaml"), "--mode", "dynamic")
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if line.startswith("  deny  ")]
    assert len(lines) == 3
    assert "falcon-before-migration.yaml:3: JobSet falcon-jobs/falcon-sft: DENIED (tier dev, mode dynamic)" in (
        proc.stdout
    )
    assert proc.stdout.splitlines()[-1].endswith("; mode dynamic")


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
    document = json.loads(proc.stdout)
    assert set(document) == {"results", "errors", "summary"}
    assert document["errors"] == []
    assert document["summary"] == {"checked": 2, "admitted": 1, "denied": 1, "warned": 0, "skipped": 0, "errors": 0}
    admitted, denied = document["results"]
    for record in (admitted, denied):
        assert set(record) == {
            "source",
            "line",
            "kind",
            "namespace",
            "name",
            "allowed",
            "tier",
            "mode",
            "violations",
            "warnings",
            "patch",
        }
        assert (record["kind"], record["tier"], record["mode"]) == ("JobSet", "dev", "dynamic")
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


def test_warnings_carry_action_warn_and_exit_0_unless_strict(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "job.yaml", with_slice_topology(load_jobset("rfc-4.6-static")))
    proc = cli("check", str(path), "--output", "json")
    assert proc.returncode == 0
    (record,) = results(proc)
    assert record["violations"][0]["action"] == "warn"
    assert record["warnings"][0].startswith("[slice-topology-ignored]")
    assert json.loads(proc.stdout)["summary"]["warned"] == 1
    strict = cli("check", str(path), "--output", "json", "--strict")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["strictFailures"] == ["1 object(s) with warnings"]


def test_strict_fails_on_an_unknown_tier(tmp_path: Path) -> None:
    """The namespace typo of the issue: unknown tier, admitted without checks."""
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "kubmaker"
    path = write_yaml(tmp_path / "job.yaml", obj)
    lenient = cli("check", str(path))
    assert lenient.returncode == 0
    assert "JobSet kubmaker/llm-pretrain-a3f8: admitted (tier none, mode static)" in lenient.stdout
    assert "tier of namespace 'kubmaker' could not be determined" in lenient.stdout
    strict = cli("check", str(path), "--strict")
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[-1].endswith("; --strict fails the run: 1 object(s) with warnings")
    github = cli("check", str(path), "--strict", "--output", "github")
    assert github.returncode == 1
    assert github.stdout.splitlines()[-2] == "::error title=tpu-admission --strict::1 object(s) with warnings"


@pytest.mark.parametrize("contents", ["empty", "services", "misspelt"])
def test_nothing_checked_fails_unless_allowed(tmp_path: Path, contents: str) -> None:
    """As kubectl apply with no objects: nothing judged is exit 1, unless --allow-empty."""
    if contents == "services":
        (tmp_path / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n")
    if contents == "misspelt":
        (tmp_path / "job.yaml").write_text("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: Jobset\nmetadata: {name: a}\n")
    empty = cli("check", str(tmp_path))
    assert empty.returncode == 1 and empty.stdout.splitlines()[-1].endswith("; nothing was checked")
    allowed = cli("check", str(tmp_path), "--allow-empty")
    assert (allowed.returncode, allowed.stdout) == (0, empty.stdout)
    strict = cli("check", str(tmp_path), "--strict", "--allow-empty", "--output", "json")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["strictFailures"][-1] == "nothing was checked"


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
    assert skipped["tier"] is None and skipped["mode"] == "static"
    assert checked["source"] == "<stdin>" and checked["allowed"] is True


def test_directories_are_read_recursively(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "job.yml").write_text((JOBSETS / "falcon-before-migration.yaml").read_text())
    (tmp_path / "a" / "job.json").write_text(json.dumps(load_jobset("rfc-4.3.1-dynamic")))
    (tmp_path / "notes.txt").write_text("not a manifest")
    proc = cli("check", str(tmp_path), "--mode", "dynamic", "--output", "json")
    assert proc.returncode == 1
    assert sorted(Path(r["source"]).name for r in results(proc)) == ["job.json", "job.yml"]


def test_likely_typos_get_a_did_you_mean_and_fail_only_strict(tmp_path: Path) -> None:
    """``kind: Jobset`` was skipped and ``kubemakr`` admitted without checks, both without a word."""
    misspelt = load_jobset("rfc-4.6-static")
    misspelt["kind"] = "Jobset"
    core_job = load_job("rfc-job-static")
    core_job["apiVersion"] = "v1"
    volcano = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vc"}}
    namespace = load_jobset("rfc-4.6-static")
    namespace["metadata"]["namespace"] = "kubemakr"
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all([misspelt, core_job, volcano, namespace]))
    lenient = cli("check", str(path), "--output", "json")
    assert lenient.returncode == 0  # exit codes as they were
    misspelt_r, core_r, volcano_r, namespace_r = results(lenient)
    assert misspelt_r["skipped"].endswith("; did you mean kind: JobSet?")
    assert core_r["skipped"].endswith("; did you mean apiVersion: batch/v1?")
    assert "did you mean" not in volcano_r["skipped"]  # another API's Job, no typo
    assert namespace_r["warnings"][0].endswith("admitted without checks; did you mean 'kubemaker'?")
    strict = cli("check", str(path), "--output", "json", "--strict")
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["strictFailures"] == [
        "1 object(s) with warnings",
        "2 skipped document(s) that look like a mistake",
    ]
    text = cli("check", str(path))
    assert "Jobset kubemaker/llm-pretrain-a3f8: skipped (not a JobSet, Job or Deployment " in text.stdout
    tier = cli("check", str(path), "--tier", "prodution")
    assert tier.returncode == 2 and "did you mean 'production'?" in tier.stderr


def test_a_directory_walk_names_the_files_it_left_out(tmp_path: Path) -> None:
    """``*.YAML`` and ``*.txt`` were left out without a word. The case counts, as for
    ``kubectl apply -R`` (which reads only .json, .yaml, .yml): check judges what kubectl
    would apply, and names the rest; hidden files and directories (``.git``) are not named."""
    write_yaml(tmp_path / "job.yaml", load_jobset("rfc-4.6-static"))
    write_yaml(tmp_path / "sub" / "upper.YAML", load_jobset("falcon-before-migration"))
    (tmp_path / "notes.txt").write_text("kind: JobSet\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".env").write_text("A=1\n")
    proc = cli("check", str(tmp_path), "--output", "json")
    assert proc.returncode == 0
    left_out = [str(tmp_path / "notes.txt"), str(tmp_path / "sub" / "upper.YAML")]
    assert json.loads(proc.stdout)["leftOut"] == left_out
    text = cli("check", str(tmp_path)).stdout.splitlines()
    assert text[-2] == (
        "note: 2 file(s) in the directories were not read: only .yaml, .yml and .json files are, as by kubectl "
        f"apply -R (the case counts; name a file to read it anyway): {', '.join(left_out)}"
    )
    github = cli("check", str(tmp_path), "--output", "github").stdout.splitlines()
    assert github[-2].startswith("::notice title=tpu-admission%3A not read::note: 2 file(s)")
    named = cli("check", str(tmp_path / "sub" / "upper.YAML"), "--output", "json")
    assert named.returncode == 1 and "leftOut" not in json.loads(named.stdout)  # named, so read


def test_a_list_or_scalar_document_is_not_an_object_and_a_cluster_scoped_one_has_no_namespace() -> None:
    """Both showed as ``(no kind) default/``; a Namespace as ``Namespace default/team``."""
    text = "- a\n- b\n---\nhello\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"
    proc = cli("check", "-", "--allow-empty", stdin=text)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[:3] == [
        "<stdin>:1: (not an object): skipped (a YAML list, not a Kubernetes object (a mapping with apiVersion "
        "and kind))",
        "<stdin>:4: (not an object): skipped (a YAML string, not a Kubernetes object (a mapping with apiVersion "
        "and kind))",
        "<stdin>:6: Namespace team: skipped (not a JobSet, Job or Deployment (v1 Namespace))",
    ]
    as_json = results(cli("check", "-", "--output", "json", stdin=text))
    assert [(r["kind"], r["namespace"], r["name"]) for r in as_json] == [
        ("", "", ""),
        ("", "", ""),
        ("Namespace", "", "team"),
    ]
    strict = cli("check", "-", "--strict", "--output", "json", stdin=text)
    assert json.loads(strict.stdout)["strictFailures"] == [
        "2 skipped document(s) that look like a mistake",
        "nothing was checked",
    ]


def test_tier_and_namespace_labels_flags() -> None:
    dev_job = str(JOBSETS / "falcon-migration.yaml")
    as_production = cli("check", dev_job, "--mode", "dynamic", "--tier", "production", "--output", "json")
    assert as_production.returncode == 1
    assert {v["rule"] for v in results(as_production)[0]["violations"]} == {
        "queue-label-missing",
        "priority-label-missing",
    }
    unmanaged = cli("check", dev_job, "--mode", "dynamic", "--namespace-labels", "team=falcon", "--output", "json")
    assert unmanaged.returncode == 0 and results(unmanaged)[0]["patch"] == []


def test_mode_from_the_config_is_named(tmp_path: Path) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text("mode: dynamic\n")
    proc = cli("check", str(JOBSETS / "falcon-migration.yaml"), "--config", str(config))
    assert proc.returncode == 0
    assert "admitted (tier dev, mode dynamic)" in proc.stdout
    assert proc.stdout.splitlines()[-1].endswith("; mode dynamic")


def test_github_prints_only_annotations_and_one_summary_line() -> None:
    source = JOBSETS / "falcon-before-migration.yaml"
    proc = cli("check", str(source), str(JOBSETS / "rfc-4.6-static.yaml"), "--mode", "dynamic", "--output", "github")
    assert proc.returncode == 1
    *annotations, summary = proc.stdout.splitlines()
    assert all(line.startswith(("::error ", "::warning ")) for line in annotations)
    assert summary.startswith("tpu-admission check: 2 checked, 0 admitted, 2 denied")
    lines = source.read_text().splitlines()
    errors = [line for line in annotations if str(source) in line]
    assert len(errors) == 3
    exclusive = next(e for e in errors if "exclusive-topology-forbidden" in e)
    line_number = int(exclusive.split(",line=")[1].split(",")[0])
    assert "alpha.jobset.sigs.k8s.io/exclusive-topology" in lines[line_number - 1]
    topology = next(e for e in errors if "static-topology-selector-forbidden" in e)
    line_number = int(topology.split(",line=")[1].split(",")[0])
    assert "cloud.google.com/gke-tpu-topology" in lines[line_number - 1]


def test_github_annotates_warnings_that_are_not_findings(tmp_path: Path) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "kubmaker"
    path = write_yaml(tmp_path / "job.yaml", obj)
    proc = cli("check", str(path), "--output", "github")
    annotation, summary = proc.stdout.splitlines()
    assert annotation.startswith(f"::warning file={path},line=1,title=tpu-admission (JobSet kubmaker/")
    assert "could not be determined" in annotation
    assert "1 warned" in summary


# --- partial failures -------------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    return mixed_inputs(tmp_path)


def test_one_bad_file_does_not_hide_the_others(mixed: Path) -> None:
    proc = cli("check", str(mixed), str(mixed / "absent.yaml"), "--mode", "dynamic", "--output", "json")
    assert proc.returncode == 2  # unreadable input wins over denied, after reporting everything
    document = json.loads(proc.stdout)
    assert [Path(r["source"]).name for r in document["results"]] == ["a-denied.yaml", "c-admitted.yaml"]
    assert [r["allowed"] for r in document["results"]] == [False, True]
    errors = {Path(e["source"]).name: e for e in document["errors"]}
    assert set(errors) == {"b-broken.yaml", "d-latin1.yaml", "absent.yaml"}
    assert errors["b-broken.yaml"]["line"] == 3
    assert errors["b-broken.yaml"]["message"].startswith("not valid YAML or JSON: while parsing a flow sequence")
    assert errors["d-latin1.yaml"]["message"].startswith("cannot read: not UTF-8 text")
    assert errors["absent.yaml"] == {
        "source": str(mixed / "absent.yaml"),
        "line": None,
        "message": "no such file or directory",
    }
    assert document["summary"] == {"checked": 2, "admitted": 1, "denied": 1, "warned": 0, "skipped": 0, "errors": 3}
    # stdout is the machine's; the job log still says why the run failed
    assert f"tpu-admission: {mixed / 'b-broken.yaml'}: not valid YAML" in proc.stderr


def test_partial_failures_in_text_and_github(mixed: Path) -> None:
    broken = mixed / "b-broken.yaml"
    text = cli("check", str(mixed), "--mode", "dynamic")
    assert text.returncode == 2
    assert f"{broken}:3: error: not valid YAML or JSON" in text.stdout
    assert "JobSet falcon-jobs/falcon-sft: DENIED" in text.stdout and "admitted (tier dev" in text.stdout
    assert text.stdout.splitlines()[-1].startswith("2 checked, 1 admitted, 1 denied, 0 warned, 0 skipped, 2 errors")
    github = cli("check", str(mixed), "--mode", "dynamic", "--output", "github")
    assert github.returncode == 2
    assert f"::error file={broken},line=3,title=tpu-admission%3A input not read::not valid YAML" in github.stdout
    assert sum(line.startswith("::error file=") for line in github.stdout.splitlines()) == 3 + 2


def test_a_value_yaml_cannot_build_is_an_error_entry_and_the_file_beside_it_is_judged(tmp_path: Path) -> None:
    """A 5000-digit integer is an error entry for its file, not a traceback."""
    huge = load_jobset("rfc-4.6-static")
    huge["spec"]["replicatedJobs"][0]["replicas"] = 7
    (tmp_path / "a-huge.yaml").write_text(yaml.safe_dump(huge).replace("replicas: 7", "replicas: " + "9" * 5000))
    write_yaml(tmp_path / "b-good.yaml", load_jobset("rfc-4.6-static"))
    proc = cli("check", str(tmp_path), "--output", "json")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    document = json.loads(proc.stdout)
    assert [(Path(r["source"]).name, r["allowed"]) for r in document["results"]] == [("b-good.yaml", True)]
    (error,) = document["errors"]
    assert Path(error["source"]).name == "a-huge.yaml" and "an integer of 5000 digits" in error["message"]


def test_documents_before_a_syntax_error_are_still_judged(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(load_jobset("rfc-4.6-static")) + "---\nkind: [\n")
    proc = cli("check", str(path), "--output", "json")
    assert proc.returncode == 2
    document = json.loads(proc.stdout)
    assert [r["name"] for r in document["results"]] == ["llm-pretrain-a3f8"]
    assert [e["line"] for e in document["errors"]] == [len(path.read_text().splitlines()) + 1]


# --- --cluster-state ------------------------------------------------------------------


def test_cluster_state_takes_one_path_and_may_be_repeated() -> None:
    state = FIXTURES / "cluster"
    job = str(JOBSETS / "rfc-4.6-static.yaml")
    before = cli("check", job, "--cluster-state", str(state), "--output", "json")
    assert before.returncode == 0, before.stderr
    assert results(before)[0]["warnings"] == []
    files = sorted(str(p) for p in state.glob("*.yaml"))
    repeated = cli("check", job, *[arg for f in files for arg in ("--cluster-state", f)], "--output", "json")
    assert repeated.returncode == 0 and results(repeated) == results(before)


def test_cluster_state_before_the_manifests_takes_only_its_own_path() -> None:
    """The order everyone writes: the flag, its file, then the manifests."""
    state = str(FIXTURES / "cluster")
    job = str(JOBSETS / "rfc-4.6-static.yaml")
    first = cli("check", "--cluster-state", state, job, "--output", "json")
    last = cli("check", job, "--cluster-state", state, "--output", "json")
    assert first.returncode == 0, first.stderr
    assert (first.returncode, first.stdout) == (last.returncode, last.stdout)
    assert [r["name"] for r in results(first)] == ["llm-pretrain-a3f8"]


@pytest.mark.parametrize("command", [["check", "JOB"], ["audit"], ["lint-queues", "KUEUE"]])
def test_every_command_reads_cluster_state_paths_alike(command: list[str]) -> None:
    """``--cluster-state`` takes one path and is repeated in each command that takes it; a
    second path after it is a manifest where the command reads manifests, else refused saying so."""
    mapping = {"JOB": str(JOBSETS / "rfc-4.6-static.yaml"), "KUEUE": str(FIXTURES / "kueue")}
    files = sorted(str(p) for p in (FIXTURES / "cluster").glob("*.yaml"))
    args = [mapping.get(a, a) for a in command]
    repeated = cli(*args, *[arg for f in files for arg in ("--cluster-state", f)], "--output", "json")
    assert repeated.returncode in (0, 1), repeated.stderr
    assert "[--cluster-state PATH]" in cli(command[0], "--help").stdout
    if command == ["audit"]:
        listed = cli("audit", "--cluster-state", *files)
        assert listed.returncode == 2
        hint = "(--cluster-state takes one path each; repeat the flag for more)"
        assert listed.stderr.splitlines()[-1].endswith(hint)


# --- policy exceptions through check ------------------------------------------------------------


def test_an_exception_turns_the_finding_into_a_warning_with_the_reason(tmp_path: Path) -> None:
    obj = load_jobset("falcon-before-migration")
    path = write_yaml(tmp_path / "job.yaml", obj)
    config = tmp_path / "policy.yaml"
    config.write_text(
        "exceptions:\n"
        "  - rules: [exclusive-topology-forbidden, static-topology-selector-forbidden]\n"
        "    namespaces: [falcon-*]\n"
        "    names: [falcon-sft]\n"
        "    reason: migration window approved by the platform team\n"
        "  - rules: [slice-topology-missing]\n"
        "    names: [someone-else-*]\n"
        "    reason: not this job\n"
    )
    proc = cli("check", str(path), "--mode", "dynamic", "--config", str(config), "--output", "json")
    assert proc.returncode == 1  # slice-topology-missing is not excepted for this name
    (record,) = results(proc)
    by_rule = {v["rule"]: v for v in record["violations"]}
    assert (
        by_rule["slice-topology-missing"]["action"] == "deny" and "exception" not in by_rule["slice-topology-missing"]
    )
    for rule in ("exclusive-topology-forbidden", "static-topology-selector-forbidden"):
        assert by_rule[rule]["action"] == "warn"
        assert by_rule[rule]["exception"] == "migration window approved by the platform team"
        assert by_rule[rule]["message"].endswith(
            "(allowed by a policy exception: migration window approved by the platform team)"
        )
    assert sum("allowed by a policy exception" in w for w in record["warnings"]) == 2
    # Excepted warnings are an admin's decision: they do not fail --strict.
    write_yaml(path, with_slice_topology(obj))  # now nothing but the excepted findings
    strict = cli("check", str(path), "--mode", "dynamic", "--config", str(config), "--strict", "--output", "json")
    assert strict.returncode == 0, strict.stdout
    assert json.loads(strict.stdout)["summary"]["warned"] == 0
    assert [v["action"] for v in results(strict)[0]["violations"]] == ["warn", "warn"]


def test_an_unknown_rule_in_an_exception_stops_check_and_serve(tmp_path: Path) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text("exceptions:\n  - rules: [slice-topology-invalidd]\n    reason: typo\n")
    for command in (["check", str(JOBSETS / "rfc-4.6-static.yaml")], ["serve", "--cert-dir", str(tmp_path)]):
        proc = cli(*command, "--config", str(config))
        assert proc.returncode == 2
        assert "exceptions.0.rules: unknown rule id(s) slice-topology-invalidd" in proc.stderr
    assert not (tmp_path / "tls.crt").exists()  # refused before anything was generated


# --- usage errors, other subcommands, help ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["--tier", "staging", "JOB"], "--tier 'staging' is not a configured tier"),
        (["--namespace-labels", "novalue", "JOB"], "is not key=value"),
        (["--config", "CONFIG", "JOB"], "subSlicing: Input should be a valid boolean"),
        (["--output", "xml", "JOB"], "invalid choice"),
        (["--cluster-state", "MISSING", "JOB"], "--cluster-state"),
        (["--cluster-state"], "expected one argument"),
    ],
)
def test_bad_usage_exits_2_with_a_message(tmp_path: Path, args: list[str], stderr: str) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text("subSlicing: perhaps\n")
    mapping = {"JOB": str(JOBSETS / "rfc-4.6-static.yaml"), "CONFIG": str(config), "MISSING": str(tmp_path / "x")}
    proc = cli("check", *[mapping.get(a, a) for a in args])
    assert proc.returncode == 2
    assert stderr in proc.stderr


@pytest.mark.parametrize(
    "command", [["check", "JOB"], ["audit"], ["lint-queues", "JOB"], ["certs", "generate"], ["export", "vap"]]
)
def test_an_unknown_flag_prints_the_subcommands_usage(command: list[str]) -> None:
    args = [str(JOBSETS / "rfc-4.6-static.yaml") if a == "JOB" else a for a in command]
    proc = cli(*args, "--bogus")
    assert proc.returncode == 2
    name = " ".join(command[:2] if command[0] in ("certs", "export") else command[:1])
    assert proc.stderr.startswith(f"usage: tpu-admission {name} "), proc.stderr
    assert proc.stderr.splitlines()[-1] == f"tpu-admission {name}: error: unrecognized arguments: --bogus"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_option_has_help_and_usage_shows_no_internal_names() -> None:
    """``--port``, ``--tls-min-version`` and the ``certs generate`` options had no help text, and
    ``tpu-admission certs`` said "the following arguments are required: certs_command"."""
    for parser in _parsers(build_parser()):
        for action in parser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert action.help, f"{parser.prog} {action.option_strings[0]} has no help text"
        assert "_command" not in parser.format_usage(), parser.format_usage()
    bare = cli("certs")
    assert bare.returncode == 2 and "the following arguments are required: COMMAND" in bare.stderr


def test_rules_help_names_the_exit_code_a_bad_format_gets() -> None:
    assert "  2  bad usage (an unknown -o, or a RULE that is not one)" in cli("rules", "--help").stdout
    assert cli("rules", "-o", "html").returncode == 2
    assert cli("rules", "--format", "markdown").stdout == cli("rules", "-o", "markdown").stdout  # the older name


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


def test_rules_command() -> None:
    proc = cli("rules")
    assert proc.returncode == 0 and "slice-name-too-long" in proc.stdout


def test_config_command_prints_a_policy_that_loads_back(tmp_path: Path) -> None:
    proc = cli("config")
    assert proc.returncode == 0
    dumped = tmp_path / "policy.yaml"
    dumped.write_text(proc.stdout)
    from webhook.policy.config import Policy
    from webhook.rules.catalog import load_policy

    assert load_policy(dumped) == Policy()
    bad = tmp_path / "bad.yaml"
    bad.write_text("tiers: {dev: {defaultQueu: x}}\n")
    proc = cli("config", "--config", str(bad))
    assert proc.returncode == 2 and "tiers.dev.defaultQueu: unknown key" in proc.stderr


def test_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout == f"tpu-admission {__version__}\n"


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["serve"],
        ["check"],
        ["certs"],
        ["certs", "generate"],
        ["certs", "ca-bundle"],
        ["config"],
        ["export"],
        ["export", "vap"],
        ["export", "map"],
        ["rules"],
    ],
)
def test_help_has_examples_and_exit_codes_and_no_markup(command: list[str]) -> None:
    proc = cli(*command, "--help")
    assert proc.returncode == 0
    assert "examples:\n  tpu-admission " in proc.stdout
    assert "`" not in proc.stdout and ":func:" not in proc.stdout  # plain text, no RST or Markdown
    if command:
        assert "exit codes:\n  0  " in proc.stdout
    else:
        for name in ("serve", "check", "certs", "config", "export", "rules"):
            assert f"    {name} " in proc.stdout


# --- Jobs and Deployments --------------------------------------------------------------


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
    # It names a JobSet as its controller, but a Job in someone's files is theirs to apply:
    # only the JobSet controller's own requests are exempt, so check judges it like any Job.
    child["spec"]["suspend"] = True
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
        ("Job", "llm-pretrain-a3f8-workers-0", False, ["suspend-forbidden"], False),
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
    assert (
        "<stdin>:" in text.stdout
        and ": Job kubemaker/llm-eval-b7c2: DENIED (tier production, mode static)" in text.stdout
    )
    assert ": Deployment kubemaker/eval-gateway: DENIED (tier production, mode static)" in text.stdout
    assert ": Deployment default/notebook-proxy: admitted (tier dev, mode static)" in text.stdout
    assert ": Job kubemaker/llm-pretrain-a3f8-workers-0: DENIED (tier production, mode static)" in text.stdout
    assert "6 checked, 3 admitted, 3 denied, 0 warned, 1 skipped, 0 errors" in text.stdout
    github = cli("check", "-", "--output", "github", stdin=_kustomize_output())
    errors = [line for line in github.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 3  # the owned Job's suspend, the Job's parallelism, the Deployment's priority
    assert "title=suspend-forbidden (Job kubemaker/llm-pretrain-a3f8-workers-0)" in errors[0]
    assert "title=host-count-mismatch (Job kubemaker/llm-eval-b7c2)" in errors[1]
    assert "title=priority-label-missing (Deployment kubemaker/eval-gateway)" in errors[2]


def test_github_annotation_points_at_a_jobs_field(tmp_path: Path) -> None:
    job = load_job("rfc-job-static")
    job["spec"]["template"]["spec"]["priorityClassName"] = "ci-tpu-pool"
    source = tmp_path / "job.yaml"
    source.write_text(yaml.safe_dump(job, sort_keys=False))
    proc = cli("check", str(source), "--output", "github")
    (error,) = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    line_number = int(error.split(",line=")[1].split(",")[0])
    assert "priorityClassName: ci-tpu-pool" in source.read_text().splitlines()[line_number - 1]


def test_a_deployment_left_outside_kueue_warns_and_fails_strict(tmp_path: Path) -> None:
    """RFC-0033 4.1: a production CPU service without a queue label is not Kueue's; it is not judged."""
    service = load_deployment("service-deployment")
    del service["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    path = write_yaml(tmp_path / "svc.yaml", service)
    lenient = cli("check", str(path), "--output", "json")
    assert lenient.returncode == 0
    (record,) = results(lenient)
    assert (record["kind"], record["tier"], record["violations"]) == ("Deployment", "production", [])
    assert "Kueue does not manage it" in record["warnings"][0]
    assert cli("check", str(path), "--strict").returncode == 1


# --- the console script itself: real processes -------------------------------------------

SCRIPT = Path(sys.executable).with_name("tpu-admission")


def test_console_script_and_module_run_the_same_program() -> None:
    script = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, timeout=60, check=False)
    module = subprocess.run(
        [sys.executable, "-m", "webhook", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert script.returncode == module.returncode == 0
    assert script.stdout == module.stdout == f"tpu-admission {__version__}\n"


def test_a_closed_pipe_ends_quietly() -> None:
    """``check … --output json | head``: the reader is gone before we write."""
    with subprocess.Popen(
        [str(SCRIPT), "check", str(JOBSETS), "--mode", "dynamic", "--output", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        stderr = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    assert stderr == ""
    assert code == 141


def test_serve_on_a_port_in_use_says_so_exits_2_and_announces_nothing(tmp_path: Path) -> None:
    """Exit 2 (as help promises), and no "serving ... on https://..." line for a port it never got."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "webhook", "serve", "--port", str(port), "--cert-dir", str(tmp_path / "tls")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"tpu-admission: cannot listen on 127.0.0.1:{port} (--port): Address already in use; another process holds the "
        "port: stop it or choose another --port\n"
    )
    assert "listened on (a port in use or out" in cli("serve", "--help").stdout


def serve_fails(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``serve`` with ``flags``, expected to stop before serving (bounded by a timeout, not awaited forever)."""
    return subprocess.run(
        [sys.executable, "-m", "webhook", "serve", "--cert-dir", str(tmp_path / "tls"), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_serve_with_a_kubeconfig_that_cannot_be_read_refuses_to_start(tmp_path: Path) -> None:
    """Serving on with every cluster rule skipped would turn a typo in a Deployment's args
    into a webhook that quietly skips every quota gate."""
    missing = tmp_path / "missing"
    proc = serve_fails(tmp_path, "--port", "0", "--kubeconfig", str(missing))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"tpu-admission: --kubeconfig {missing} cannot be read: No such file or directory\n"


def test_serve_with_a_kubeconfig_that_is_no_kubeconfig_refuses_to_start(tmp_path: Path) -> None:
    garbage = tmp_path / "kubeconfig"
    garbage.write_text("not: a kubeconfig\n")
    proc = serve_fails(tmp_path, "--port", "0", "--kubeconfig", str(garbage))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith(
        f"tpu-admission: --kubeconfig {garbage} cannot be used: "
        f"cluster configuration could not be loaded from {garbage}: "
    )
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--port", "99999"), "--port 99999 is not a TCP port: give 1 to 65535 (or 0 for any free one)"),
        (("--port", "-1"), "--port -1 is not a TCP port: give 1 to 65535 (or 0 for any free one)"),
        (
            ("--port", "0", "--metrics-port", "70000"),
            "--metrics-port 70000 is not a TCP port: give 1 to 65535 (or 0 for any free one)",
        ),
        (
            ("--port", "8443", "--metrics-port", "8443"),
            "--metrics-port 8443 is the --port too: give /metrics a port of its own",
        ),
    ],
    ids=["port too big", "port negative", "metrics port too big", "metrics port is the port"],
)
def test_serve_with_a_bad_port_says_so_in_one_line(tmp_path: Path, flags: tuple[str, ...], said: str) -> None:
    """One line, exit 2, before anything is bound or announced: never a traceback."""
    proc = serve_fails(tmp_path, *flags)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"tpu-admission: {said}\n")


def test_serve_with_a_metrics_port_in_use_says_so_before_serving(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve_fails(tmp_path, "--port", "0", "--metrics-port", str(port))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"tpu-admission: cannot listen on 127.0.0.1:{port} (--metrics-port): Address already in use; another process "
        "holds the port: stop it or choose another --metrics-port\n"
    )


# --- who submits: --user, --group ------------------------------------------------------------


def test_the_readmes_policy_in_ci_judges_the_submitter_check_is_told(tmp_path: Path) -> None:
    """The README's policy example sets queuePermissions: a dry run with no submitter skips
    that rule with a warning naming the flags (never "user '' may not submit"); --user and
    --group decide it as the API server's userInfo would."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "queuePermissions:" in b)
    config = tmp_path / "policy.yaml"
    config.write_text(block)
    job = str(JOBSETS / "rfc-4.6-static.yaml")  # production, queue team-a-queue
    base = ["check", job, "--config", str(config), "--mode", "static", "--output", "json"]
    nobody = cli(*base)
    assert nobody.returncode == 0, nobody.stdout
    (record,) = results(nobody)
    assert record["violations"] == []
    assert record["warnings"] == [
        "[queue-not-permitted] skipped: the submitter is unknown (no user name or group); "
        "check takes them as --user NAME and --group G"
    ]
    assert cli(*base, "--strict").returncode == 1  # a skipped rule is a warning
    for allowed in (["--group", "team-a"], ["--user", "system:serviceaccount:aistudio:submitter"]):
        proc = cli(*base, "--strict", *allowed)
        assert proc.returncode == 0, proc.stdout
        assert results(proc)[0]["warnings"] == []
    named = cli(*base, "--user", "bob")  # team-a-queue also admits a group: bob's are unknown
    assert named.returncode == 0 and results(named)[0]["warnings"] == [
        "[queue-not-permitted] skipped: the submitter's groups are unknown and user 'bob' is not permitted on "
        "queue 'team-a-queue' by name; check takes them as --group G"
    ]
    denied = cli(*base, "--user", "bob", "--group", "team-b", "--group", "team-c")
    assert denied.returncode == 1
    assert [v["message"] for v in results(denied)[0]["violations"]] == [
        "user 'bob' may not submit to queue 'team-a-queue'; submit to your own team's queue, or ask the cluster "
        "admins to grant access"
    ]


# --- certs, export: what the usage and the messages say ------------------------------------


def test_certs_generate_usage_says_where_to_write_is_required_and_the_names_are_not() -> None:
    usage = cli("certs", "generate", "--help").stdout.split("\n\n")[0]
    assert usage.startswith(
        "usage: tpu-admission certs generate (--out DIR | --secret-manifest FILE)... [--service NAME]"
    )
    assert "[--namespace NS]" in usage and "[--out" not in usage and "[--secret-manifest" not in usage
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert (
        "`tpu-admission certs generate (--out DIR \\| --secret-manifest FILE)... [--service S] [--namespace N]"
        in readme
    )
    nothing = cli("certs", "generate", "--service", "adm")
    assert (nothing.returncode, nothing.stdout) == (2, "")
    assert nothing.stderr == (
        "tpu-admission: certs generate: nothing to write: give --out DIR and/or --secret-manifest FILE (- for stdout)\n"
    )


def test_ca_bundle_refuses_a_file_that_is_not_a_pem_certificate(tmp_path: Path) -> None:
    assert cli("certs", "generate", "--out", str(tmp_path)).returncode == 0
    for name, text in [("junk.crt", "garbage\n"), ("tls.key", (tmp_path / "tls.key").read_text())]:
        path = tmp_path / name
        path.write_text(text)
        proc = cli("certs", "ca-bundle", "--ca", str(path))
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == (
            f"tpu-admission: {path}: not a PEM certificate (a caBundle is the CA's -----BEGIN CERTIFICATE----- "
            "text, e.g. the ca.crt certs generate wrote)\n"
        )


@pytest.mark.parametrize(
    ("actions", "stderr"),
    [
        ("Dny", "'Dny' is not a validation action; did you mean 'Deny'?"),
        ("warn,Audit", "'warn' is not a validation action; did you mean 'Warn'?"),
        ("Block", "'Block' is not a validation action; use Deny, Warn, Audit"),
        ("Warn,Warn", "'Warn,Warn' names an action twice; name each once"),
        ("Deny,Warn", "Deny and Warn do not go together (Deny already tells the user); use Deny, or Warn,Audit"),
    ],
)
def test_export_vap_names_the_action_it_does_not_know(actions: str, stderr: str) -> None:
    proc = cli("export", "vap", "--validation-actions", actions)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"tpu-admission: --validation-actions: {stderr}\n"


def test_check_reads_typed_lists_and_says_nothing_of_their_heads(tmp_path: Path) -> None:
    """``kubectl get jobsets -o json`` through the API, or a client library's save: a ``JobSetList``."""
    job = load_jobset("rfc-4.6-static")
    bare = {key: value for key, value in job.items() if key not in ("apiVersion", "kind")}
    listed = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSetList", "metadata": {}, "items": [bare]}
    empty = {"apiVersion": "batch/v1", "kind": "JobList", "items": []}
    (tmp_path / "lists.yaml").write_text(yaml.safe_dump_all([listed, empty]))
    done = run_cli("check", str(tmp_path / "lists.yaml"), "--output", "json")
    assert done.returncode == 0, done.stdout
    assert [(r["kind"], r["name"], r["allowed"]) for r in json.loads(done.stdout)["results"]] == [
        ("JobSet", "llm-pretrain-a3f8", True)
    ]


def _bomb(at: str) -> str:
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(levels) + f"\n{at}\n"


@pytest.mark.parametrize(
    "at",
    [
        "spec: {template: {spec: {tolerations: *a9}}}",
        "metadata: {name: *a9}",
        "spec: {template: {spec: {containers: [{name: c, resources: {requests: {cpu: *a9}}}]}}}",
    ],
)
def test_an_alias_bomb_in_a_manifest_is_an_error_not_a_hang(tmp_path: Path, at: str) -> None:
    (tmp_path / "bomb.yaml").write_text("apiVersion: batch/v1\nkind: Job\n" + _bomb(at))
    write_yaml(tmp_path / "good.yaml", load_jobset("rfc-4.6-static"))
    done = run_cli("check", str(tmp_path), "--output", "json")
    assert done.returncode == 2
    assert [r["name"] for r in json.loads(done.stdout)["results"]] == ["llm-pretrain-a3f8"]
    assert "bomb.yaml: not valid YAML or JSON: document contains excessive aliasing" in done.stderr


def test_names_that_are_no_file_in_a_directory_are_errors(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    (tmp_path / "gone.yaml").symlink_to("nowhere.yaml")
    done = run_cli("check", str(tmp_path))
    assert done.returncode == 2
    assert f"{tmp_path / 'gone.yaml'}: error: a broken symbolic link" in done.stdout
    assert f"{tmp_path / 'loop.yaml'}: error: a symbolic link loop" in done.stdout
    done = run_cli("check", str(tmp_path / "loop.yaml"))
    assert done.returncode == 2 and "a symbolic link loop" in done.stdout + done.stderr


def test_a_name_that_is_no_string_is_shown_clipped(tmp_path: Path) -> None:
    """An alias within go-yaml's bounds still makes a list of a thousand strings of a name."""
    text = "a: &a [" + ", ".join(["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"] * 30) + "]\n"
    (tmp_path / "job.yaml").write_text(text + "apiVersion: batch/v1\nkind: Job\nmetadata: {name: [*a, *a, *a]}\n")
    done = run_cli("check", str(tmp_path / "job.yaml"), "--output", "json")
    [result] = json.loads(done.stdout)["results"]
    assert result["name"].startswith("[['xxxx") and len(result["name"]) <= 80


# --- the dispatcher: help, version, global flags, the plugin ---------------------------------

#: what a command's ``--help`` must not wait for: the engine, the rules, the cluster client, the models
HEAVY = ("kubernetes", "pydantic", "yaml", "msgspec", "starlette", "uvicorn", "rich", "webhook.engine", "webhook.rules")
#: the modules of a ``--help``, printed by a fresh interpreter
_LOADED = """\
import contextlib, io, sys
from webhook.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print("\\n".join(sorted(sys.modules)))
"""


@pytest.mark.parametrize(
    "command",
    [[], ["serve"], ["check"], ["audit"], ["explain"], ["quota"], ["simulate"], ["lint-queues"], ["snapshot"],
     ["config"], ["export"], ["rules"], ["completion"], ["version"]],
)  # fmt: skip
def test_help_loads_no_heavy_module(command: list[str]) -> None:
    """``--help`` (and a command's) imports that command's module only, and that module its
    parser's needs only: the rest is imported when the command runs."""
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *command, "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = done.stdout.split()
    assert [m for m in loaded if m.startswith(HEAVY) or m.split(".")[0] in HEAVY] == []
    own = {COMMANDS[command[0]].module} if command else set()
    shared = {"webhook.cli.main", "webhook.cli.arguments", "webhook.cli.terminal"}
    assert {m for m in loaded if m.startswith("webhook.cli.")} - shared <= own


def test_the_lazy_help_lists_what_every_command_says_of_itself() -> None:
    """The dispatcher's summaries (shown without importing a command) are the commands' own."""
    full = build_parser().format_help()
    assert cli("--help").stdout == full
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(commands.choices) == list(COMMANDS)


def test_no_arguments_prints_the_help_as_kubectl_does() -> None:
    alone = cli()
    assert (alone.returncode, alone.stdout) == (0, cli("--help").stdout)
    assert alone.stdout.startswith("usage: tpu-admission [-h] [--version] COMMAND ...")


def test_version_is_a_command_too() -> None:
    assert cli("version").stdout == cli("--version").stdout == f"tpu-admission {__version__}\n"
    assert json.loads(cli("version", "-o", "json").stdout) == {
        "clientVersion": {"name": "tpu-admission", "version": __version__}
    }
    assert yaml.safe_load(cli("version", "-o", "yaml").stdout) == json.loads(cli("version", "-o", "json").stdout)


@pytest.mark.parametrize("command", [["check", "JOB"], ["lint-queues", "KUEUE"], ["audit"], ["simulate", "JOB"]])
def test_output_is_the_format_everywhere_with_yaml_as_kubectl(command: list[str]) -> None:
    """``-o`` is ``--output`` in every command, and ``-o yaml`` is the JSON document as YAML."""
    mapping = {"JOB": str(JOBSETS / "rfc-4.6-static.yaml"), "KUEUE": str(FIXTURES / "kueue")}
    args = [mapping.get(a, a) for a in command]
    state = ["--cluster-state", str(FIXTURES / "cluster")]
    if command[0] == "audit":
        state += ["--cluster-state", mapping["JOB"]]
    as_json = cli(*args, *state, "--output", "json")
    as_yaml = cli(*args, *state, "-o", "yaml")
    assert as_json.returncode == as_yaml.returncode
    assert as_json.returncode in (0, 1), as_json.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)


def test_files_may_be_given_as_kubectl_does_with_f() -> None:
    job = str(JOBSETS / "rfc-4.6-static.yaml")
    positional = cli("check", job, "-o", "json")
    flagged = cli("check", "-f", job, "-o", "json")
    assert (flagged.returncode, flagged.stdout) == (positional.returncode, positional.stdout)
    none = cli("check", "--mode", "dynamic")
    assert (none.returncode, none.stdout) == (2, "")
    assert none.stderr == "tpu-admission: check: give the files to read: PATH... or -f PATH (- for stdin)\n"


def test_a_namespace_flag_is_the_default_of_manifests_that_name_none(tmp_path: Path) -> None:
    """As ``kubectl apply -n``: the namespace of a manifest without one, never over one it names."""
    obj = load_jobset("rfc-4.6-static")
    del obj["metadata"]["namespace"]
    path = write_yaml(tmp_path / "job.yaml", obj)
    plain = results(cli("check", str(path), "-o", "json"))[0]
    given = results(cli("check", str(path), "-n", "kubemaker", "-o", "json"))[0]
    assert (plain["namespace"], given["namespace"]) == ("default", "kubemaker")
    named = results(cli("check", str(JOBSETS / "rfc-4.6-static.yaml"), "-n", "other", "-o", "json"))[0]
    assert named["namespace"] == "kubemaker"


def test_global_flags_before_the_command_are_the_commands() -> None:
    assert hoist_global_flags(["--context", "prod", "-n", "a", "explain", "jobset/x"]) == [
        "explain", "--context", "prod", "-n", "a", "jobset/x",
    ]  # fmt: skip
    assert hoist_global_flags(["--kubeconfig=k", "-A", "audit", "-o", "json"]) == [
        "audit", "--kubeconfig=k", "-A", "-o", "json",
    ]  # fmt: skip
    assert hoist_global_flags(["--version"]) == ["--version"]
    assert hoist_global_flags(["check", "-n", "a", "x.yaml"]) == ["check", "-n", "a", "x.yaml"]
    job = str(JOBSETS / "rfc-4.6-static.yaml")
    assert cli("-n", "kubemaker", "check", job).stdout == cli("check", job, "-n", "kubemaker").stdout


def test_rules_describes_one_rule() -> None:
    described = cli("rules", "slice-topology-missing")
    assert described.returncode == 0
    lines = described.stdout.splitlines()
    assert lines[0].startswith("slice-topology-missing: ")
    assert any(line.startswith("  default action:") for line in lines)
    (document,) = json.loads(cli("rules", "slice-topology-missing", "-o", "json").stdout)
    assert document["id"] == "slice-topology-missing" and document["modes"] == ["dynamic"]
    assert document["messages"] and all(m["problem"] and m["fix"] for m in document["messages"])
    typo = cli("rules", "slice-topology-mising")
    assert (typo.returncode, typo.stdout) == (2, "")
    assert typo.stderr == (
        "tpu-admission: rules: 'slice-topology-mising' is not a rule; did you mean 'slice-topology-missing'?\n"
    )
    every = json.loads(cli("rules", "-o", "json").stdout)
    assert len(every) == len(cli("rules").stdout.splitlines())


PLUGIN = Path(sys.executable).with_name("kubectl-tpu")


def test_the_kubectl_plugin_is_the_same_program_under_kubectl() -> None:
    """``kubectl tpu ...`` runs ``kubectl-tpu`` from PATH, as ``kubectl kueue`` runs kueuectl."""
    assert PLUGIN.is_file(), "pip install -e . puts kubectl-tpu beside tpu-admission"
    env = {**os.environ, "PATH": f"{PLUGIN.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    job = str(JOBSETS / "rfc-4.6-static.yaml")
    direct = subprocess.run([str(SCRIPT), "check", "-f", job], capture_output=True, text=True, timeout=60, check=False)
    plugin = subprocess.run([str(PLUGIN), "check", "-f", job], capture_output=True, text=True, timeout=60, check=False)
    assert (plugin.returncode, plugin.stdout) == (direct.returncode, direct.stdout) == (0, direct.stdout)
    mistake = subprocess.run([str(PLUGIN), "rules", "-o", "x"], capture_output=True, text=True, timeout=60, check=False)
    assert mistake.returncode == 2 and mistake.stderr.startswith("usage: kubectl tpu rules ")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl on this machine")
    through = subprocess.run(
        [kubectl, "tpu", "check", "-f", job], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert (through.returncode, through.stdout) == (0, direct.stdout), through.stderr


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (
            "cloud.google.com/gke-tpu-slice-topology: 4x4x4",
            "cloud.google.com/gke-tpu-slice-topolgy: 4x4x4",
            'spec.replicatedJobs[0].template.spec.template.metadata.annotations["cloud.google.com/gke-tpu-slice-topolgy"]'
            ": did you mean cloud.google.com/gke-tpu-slice-topology?",
        ),
        (
            "cloud.google.com/gke-tpu-slice-topology: 4x4x4",
            "gke-tpu-slice-topolgy: 4x4x4",
            'spec.replicatedJobs[0].template.spec.template.metadata.annotations["gke-tpu-slice-topolgy"]'
            ": did you mean cloud.google.com/gke-tpu-slice-topology?",
        ),
        ("  replicatedJobs:", "  replicatedJob:", "spec.replicatedJob: did you mean replicatedJobs?"),
    ],
)
def test_a_near_miss_key_or_field_gets_a_did_you_mean(tmp_path: Path, old: str, new: str, hint: str) -> None:
    """The job is judged as written (the key is not there for the rules); check names the near miss."""
    text = (JOBSETS / "rfc-4.3.1-dynamic.yaml").read_text()
    assert old in text
    (tmp_path / "job.yaml").write_text(text.replace(old, new))
    done = cli("check", str(tmp_path / "job.yaml"), "--mode", "dynamic", "-o", "json")
    (record,) = results(done)
    assert done.returncode == 1 and record["hints"] == [hint]
    assert f"  hint  {hint}" in cli("check", str(tmp_path / "job.yaml"), "--mode", "dynamic").stdout
    github = cli("check", str(tmp_path / "job.yaml"), "--mode", "dynamic", "-o", "github").stdout.splitlines()
    assert any(line.startswith("::warning file=") and "did you mean" in line for line in github)
    strict = json.loads(cli("check", str(tmp_path / "job.yaml"), "--mode", "dynamic", "--strict", "-o", "json").stdout)
    assert "1 object(s) with a key or field that looks misspelt" in strict["strictFailures"]


def test_no_fixture_or_rule_example_has_a_near_miss() -> None:
    """Only keys one edit from a known one are named: none of the shipped jobs is flagged."""
    for path in (JOBSETS, FIXTURES / "jobs", FIXTURES / "deployments"):
        done = cli("check", str(path), "--mode", "dynamic", "-o", "json")
        assert [r for r in results(done) if "hints" in r] == []


def _help_examples() -> list[str]:
    """Every ``tpu-admission ...`` example line of every command's --help."""
    examples = []
    for parser in _parsers(build_parser()):
        for line in (parser.description or "").splitlines():
            if line.startswith("  tpu-admission ") and "COMMAND" not in line:
                examples.append(re.split(r"\s{2,}[(#]", line.strip())[0])
    return examples


def test_every_help_example_is_a_command_line_the_parser_takes() -> None:
    """An example that stopped parsing (``--cluster-state a b``, a renamed flag) is caught here."""
    examples = _help_examples()
    assert len(examples) > 30
    for example in examples:
        words = shlex.split(re.split(r" [|>] ", example)[0])
        build_parser().parse_args(words[1:])


def test_the_state_recipe_in_check_help_is_snapshot() -> None:
    """A kubectl get List cannot say a kind has none, so a recipe built from it leaves kinds
    unknown and fails --strict on every job; the help points to snapshot instead."""
    text = cli("check", "--help").stdout
    assert "  tpu-admission snapshot > state.yaml\n" in text
    assert "kubectl get" not in text.split("examples:")[1].split("\n\n")[0]
