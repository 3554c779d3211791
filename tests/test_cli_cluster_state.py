"""``tpu-admission check --cluster-state`` end to end, through ``main(argv)``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from builders import deployment, jobset
from cluster_job_cases import CASES as JOB_CASES
from cluster_job_cases import RULES as CLUSTER_RULES
from support import FIXTURES, load_job, load_jobset, run_cli

STATE = FIXTURES / "cluster"


def check(tmp_path: Path, obj: dict[str, Any], *flags: str) -> tuple[int, dict[str, Any], str]:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(obj))
    done = run_cli("check", str(manifest), "--output", "json", *flags)
    result = json.loads(done.stdout)["results"][0] if done.stdout.strip() else {}
    return done.returncode, result, done.stderr


def test_admitted_against_the_cluster(tmp_path: Path) -> None:
    code, result, _ = check(tmp_path, load_jobset("rfc-4.6-static"), "--cluster-state", str(STATE))
    assert code == 0
    assert result["allowed"] is True
    assert result["violations"] == [] and result["warnings"] == [] and result["patch"] == []


def test_denied_by_a_cluster_rule(tmp_path: Path) -> None:
    obj = jobset().priority("guaranteed").replicas(3).obj()
    code, result, _ = check(tmp_path, obj, "--cluster-state", str(STATE))
    assert code == 1
    rules = {v["rule"]: v for v in result["violations"]}
    assert set(rules) == {"guaranteed-balance-exceeded", "insufficient-node-pools"}
    assert rules["guaranteed-balance-exceeded"]["action"] == "deny"
    assert rules["guaranteed-balance-exceeded"]["path"] == 'metadata.labels["kueue.x-k8s.io/priority-class"]'
    assert "nominal 256 − in use 128 − pending 64" in rules["guaranteed-balance-exceeded"]["message"]


def test_namespace_labels_come_from_the_snapshot_unless_given(tmp_path: Path) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "orphan-dev"
    del obj["metadata"]["labels"]
    code, result, _ = check(tmp_path, obj, "--cluster-state", str(STATE))
    assert code == 1
    assert [v["rule"] for v in result["violations"]] == ["local-queue-not-found"]
    code, result, _ = check(tmp_path, obj, "--cluster-state", str(STATE), "--namespace-labels", "team=x")
    assert code == 0
    assert result["warnings"] == [] and result["violations"] == []  # no tier label: unmanaged


def test_kinds_missing_from_the_input_are_skipped_with_warnings(tmp_path: Path) -> None:
    files = ["--cluster-state", str(STATE / "namespaces.yaml"), "--cluster-state", str(STATE / "queues.yaml")]
    obj = jobset().replicas(3).obj()  # more slices than pools: but Nodes unknown
    code, result, _ = check(tmp_path, obj, *files)
    assert code == 0
    assert check(tmp_path, obj, *files, "--strict")[0] == 1  # a skipped cluster check fails --strict
    # Each skip names the kind it lacks; how to give it (a kubectl List cannot say "none") is said once per run.
    nodes = "Nodes: no objects of this kind in the --cluster-state input"
    assert result["warnings"] == [
        f"[{rule}] skipped: cluster state unknown ({nodes})"
        for rule in ("exceeds-node-capacity", "insufficient-node-pools")
    ]  # a best-effort job has no guaranteed balance to judge: no Workloads needed
    note = (
        "note: the --cluster-state input holds no Nodes: the rules that read them are skipped. To decide them, "
        "write the input with `tpu-admission snapshot` (every kind, empty ones included), or add the kinds' "
        "objects, or, where there are none, `kind: NodeList` (apiVersion v1) with `items: []` (a kubectl List "
        "cannot say a kind has none)"
    )
    manifest = str(tmp_path / "job.yaml")
    twice = run_cli("check", manifest, manifest, *files)
    assert twice.stdout.count("note: the --cluster-state input") == 1 and note in twice.stdout.splitlines()
    assert json.loads(run_cli("check", manifest, *files, "-o", "json").stdout)["notes"] == [note]


def test_unreadable_cluster_state_is_a_usage_error(tmp_path: Path) -> None:
    code, _, stderr = check(tmp_path, load_jobset("rfc-4.6-static"), "--cluster-state", str(tmp_path / "nope"))
    assert code == 2
    assert "--cluster-state" in stderr and "no such file or directory" in stderr


def test_jobs_and_deployments_against_the_cluster(tmp_path: Path) -> None:
    code, result, _ = check(tmp_path, load_job("rfc-job-static"), "--cluster-state", str(STATE))
    assert (code, result["kind"], result["allowed"], result["violations"]) == (0, "Job", True, [])
    service = deployment().queue("team-c-queue").obj()
    code, result, _ = check(tmp_path, service, "--cluster-state", str(STATE))
    assert (code, result["kind"]) == (1, "Deployment")
    assert [(v["rule"], v["path"]) for v in result["violations"]] == [
        ("resource-not-covered", 'spec.template.spec.containers[0].resources.requests["ephemeral-storage"]')
    ]


def test_cluster_rules_on_jobs_and_deployments_through_check(tmp_path: Path) -> None:
    """Every cluster rule trips on a Job and/or a Deployment, and nothing trips on the allowed ones."""
    for index, case in enumerate(JOB_CASES):
        (tmp_path / f"case-{index:02}.yaml").write_text(yaml.safe_dump(case.object()))
    done = run_cli("check", str(tmp_path), "--output", "json", "--cluster-state", str(STATE))
    assert done.returncode == 1, done.stderr
    by_file = {Path(r["source"]).name: r for r in json.loads(done.stdout)["results"]}
    for index, case in enumerate(JOB_CASES):
        record = by_file[f"case-{index:02}.yaml"]
        assert record["kind"] == case.kind
        fired = {v["rule"] for v in record["violations"]} & CLUSTER_RULES
        if case.rule is None:
            assert fired == set(), case.name
        else:
            assert case.rule in fired, (case.name, fired)
    assert {case.rule for case in JOB_CASES} >= CLUSTER_RULES


def test_huge_quantities_in_the_job_and_in_the_cache_are_numbers(tmp_path: Path) -> None:
    """A Workload in the cache with cpu: "1e1000000" and chips of "1e400" loads, and a JobSet
    asking for 1e400 of disk is refused by the rules it breaks: no traceback."""
    state = tmp_path / "state"
    state.mkdir()
    for source in STATE.glob("*.yaml"):
        text = source.read_text()
        if source.name == "workloads.yaml":
            workloads = yaml.safe_load(text)
            for workload in workloads["items"]:
                for podset in workload["spec"]["podSets"]:
                    podset["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1e1000000"
                for assignment in (workload["status"].get("admission") or {}).get("podSetAssignments", []):
                    assignment["resourceUsage"]["google.com/tpu"] = "1e400"
            text = yaml.safe_dump(workloads)
        (state / source.name).write_text(text)
    code, result, stderr = check(tmp_path, load_jobset("rfc-4.6-static"), "--cluster-state", str(state))
    assert (code, stderr) == (0, "") and result["allowed"] is True
    huge = jobset().request("ephemeral-storage", "1e400").obj()
    code, result, stderr = check(tmp_path, huge, "--cluster-state", str(state))
    assert (code, stderr) == (1, "")
    assert {v["rule"] for v in result["violations"]} == {"exceeds-node-capacity", "exceeds-queue-capacity"}


def _as_api_lists(directory: Path, out: Path) -> None:
    """The state's objects as typed lists whose items name no apiVersion or kind, as a list call answers."""
    by_kind: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            for item in document["items"] if document.get("kind") == "List" else [document]:
                key = (item.pop("apiVersion"), item.pop("kind"))
                by_kind.setdefault(key, []).append(item)
    lists = [
        {"apiVersion": v, "kind": f"{kind}List", "metadata": {}, "items": items} for (v, kind), items in by_kind.items()
    ]
    out.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": lists}))


def test_a_state_of_typed_lists_as_the_api_answers_is_the_same_state(tmp_path: Path) -> None:
    """``ClusterQueueList``, ``WorkloadList``… with bare items: the same verdicts as the kubectl Lists."""
    _as_api_lists(STATE, tmp_path / "state.json")
    for obj in (load_jobset("rfc-4.6-static"), jobset().priority("guaranteed").replicas(3).obj()):
        expected = check(tmp_path, obj, "--cluster-state", str(STATE))
        assert check(tmp_path, obj, "--cluster-state", str(tmp_path / "state.json")) == expected


def test_an_alias_bomb_in_the_state_is_a_usage_error(tmp_path: Path) -> None:
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    (tmp_path / "state.yaml").write_text("\n".join(levels) + "\nkind: NodeList\napiVersion: v1\nitems: *a9\n")
    code, _, stderr = check(tmp_path, load_jobset("rfc-4.6-static"), "--cluster-state", str(tmp_path / "state.yaml"))
    assert code == 2 and "document contains excessive aliasing" in stderr
