"""``tpu-admission explain`` and ``quota`` end to end, through ``main(argv)``, from --cluster-state files.

RFC-0033 4.3.2's two Workload examples as a cluster holds them: the ClusterQueues of
the cohort ``tpu-pool`` (team-a and team-b, 256 tpu7x chips each), the LocalQueue the
Workload names, the Workloads, and, for the first example, the JobSet itself.
"""

from __future__ import annotations

import datetime
import json
import shlex
from pathlib import Path
from typing import Any

import yaml
from cluster_apiserver import FakeApiServer, write_kubeconfig
from explain_builders import (
    JOBSET_UID,
    PREEMPTOR_JOB_UID,
    PREEMPTOR_UID,
    TPU,
    StoredJobSet,
    preemptor_workload,
    rfc_example_one,
    rfc_example_two,
)
from quota_fixtures import cluster_queue, cohort, q
from support import run_cli

from webhook.cli.explain import ago
from webhook.cluster import kinds as k
from webhook.cluster.listing import JUDGED_KINDS

KQ = "kueue.x-k8s.io/v1beta2"


def _state(tmp_path: Path, local_queue_to: str, *objects: dict[str, Any]) -> str:
    """A state file: the cohort, its queues, the LocalQueue kubemaker/team-a-queue, ``objects``,
    and typed empty lists for the kinds with none (as ``tpu-admission snapshot`` writes them)."""
    documents = [
        cluster_queue("team-a", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cluster_queue("team-b", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cohort("tpu-pool"),
        {
            "apiVersion": KQ,
            "kind": "LocalQueue",
            "metadata": {"name": "team-a-queue", "namespace": "kubemaker"},
            "spec": {"clusterQueue": local_queue_to},
        },
        *objects,
    ]
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def _explain(*args: str) -> tuple[int, dict[str, Any], str]:
    done = run_cli("explain", *args, "--output", "json")
    return done.returncode, json.loads(done.stdout), done.stderr


def test_rfc_example_one_is_running_from_its_jobsets_own_status(tmp_path: Path) -> None:
    jobset = StoredJobSet().ready(2).obj()
    jobset["metadata"]["namespace"] = "kubemaker"
    jobset["metadata"]["name"] = "llm-pretrain-a3f8"
    state = _state(tmp_path, "team-a", rfc_example_one().obj(), jobset)
    code, answer, _ = _explain("JobSets/llm-pretrain-a3f8", "-n", "kubemaker", "--cluster-state", state)
    assert code == 0
    assert answer["errors"] == []
    [result] = answer["results"]
    assert {key: result[key] for key in ("kind", "namespace", "name", "workload", "state", "reason", "since")} == {
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "llm-pretrain-a3f8",
        "workload": "kubemaker/jobset-llm-pretrain-a3f8-4f9d2",
        "state": "Running",
        "reason": None,
        "since": "2026-12-01T09:00:00Z",
    }
    assert result["clusterQueue"] == "team-a"
    assert result["quota"] == {
        "clusterQueue": {"tpu7x": {TPU: {"nominal": 256, "inUse": 128, "borrowed": 0, "pending": 0}}},
        "cohort": "tpu-pool",
    }
    assert result["preemptor"] is None and result["simulation"] is None


def test_rfc_example_two_is_preempted_by_team_a_and_says_so_in_80_columns(tmp_path: Path) -> None:
    state = _state(tmp_path, "team-b", rfc_example_two().obj(), preemptor_workload().obj())
    code, answer, _ = _explain("jobset/llm-pretrain-a3f8", "-n", "kubemaker", "--cluster-state", state)
    assert code == 0
    [result] = answer["results"]
    assert (result["state"], result["reason"], result["clusterQueue"], result["since"]) == (
        "Preempted",
        "InCohortReclamation",
        "team-b",
        "2026-12-01T10:00:00Z",
    )
    assert result["preemptor"] == {
        "workload": "team-a-ns/jobset-llm-finetune-77aa-1b2c3",
        "job": "JobSet/team-a-ns/llm-finetune-77aa",
        "clusterQueue": "team-a",
        "priority": 1000,
    }
    assert "the lending team took its quota back" in result["message"]
    text = run_cli("explain", "jobset/llm-pretrain-a3f8", "-n", "kubemaker", "--cluster-state", state)
    assert text.returncode == 0
    assert "Preempted" in text.stdout and "llm-finetune-77aa" in text.stdout and "#" in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80


def test_a_workload_whose_preemptor_is_gone_still_explains(tmp_path: Path) -> None:
    state = _state(tmp_path, "team-b", rfc_example_two().obj())
    code, answer, _ = _explain("kwl/jobset-llm-pretrain-a3f8-4f9d2", "-n", "kubemaker", "--cluster-state", state)
    assert code == 0
    [result] = answer["results"]
    assert result["state"] == "Preempted"
    assert result["preemptor"] == {"workload": None, "job": None, "clusterQueue": "team-a", "priority": None}
    assert PREEMPTOR_UID in result["message"] and PREEMPTOR_JOB_UID in result["message"]
    assert "no longer in the cluster" in result["message"]


def test_exit_codes_not_found_bad_usage_and_unreadable(tmp_path: Path) -> None:
    state = _state(tmp_path, "team-a", rfc_example_one().obj())
    code, answer, stderr = _explain("jobset/other", "-n", "kubemaker", "--cluster-state", state)
    assert (code, answer["results"]) == (1, []) and "not found" in stderr
    assert answer["errors"] == [
        "JobSet kubemaker/other: not found: no Workload in kubemaker names JobSet other as its owner; JobSets "
        "themselves are not read here, so one Kueue does not manage (no kueue.x-k8s.io/queue-name label) is not "
        "known either"
    ]
    done = run_cli("explain", "jobst/llm-pretrain-a3f8", "-n", "kubemaker", "--cluster-state", state)
    assert done.returncode == 2 and "did you mean JobSet?" in done.stderr and "Traceback" not in done.stderr
    done = run_cli("explain", "jobset/x", "--cluster-state", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2 and "--cluster-state" in done.stderr and "Traceback" not in done.stderr
    no_workloads = tmp_path / "queues.yaml"
    no_workloads.write_text(yaml.safe_dump(cohort("tpu-pool")))
    done = run_cli("explain", "workload/w", "--cluster-state", str(no_workloads))
    assert done.returncode == 2 and "Workloads cannot be read now" in done.stderr


def test_a_jobset_in_the_files_without_a_workload_is_not_managed(tmp_path: Path) -> None:
    jobset = StoredJobSet().queue(None).obj()
    jobset["metadata"]["namespace"] = "kubemaker"
    state = _state(tmp_path, "team-a", rfc_example_one().uid("other").job_uid("other").obj(), jobset)
    name = jobset["metadata"]["name"]
    code, answer, _ = _explain(f"jobset/{name}", "-n", "kubemaker", "--cluster-state", state)
    assert code == 0
    [result] = answer["results"]
    assert (result["state"], result["workload"]) == ("NotManaged", None)
    assert JOBSET_UID in result["message"]


def test_quota_prints_the_cohort_tree_as_bars_and_as_numbers(tmp_path: Path) -> None:
    state = _state(tmp_path, "team-b", rfc_example_two().obj(), preemptor_workload().obj())
    done = run_cli("quota", "--cluster-state", state)
    assert done.returncode == 0
    assert "tpu-pool/" in done.stdout and "team-a" in done.stdout and "team-b" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    numbers = json.loads(run_cli("quota", "--cluster-state", state, "--output", "json").stdout)
    assert json.dumps(numbers).count('"team-a"') >= 1
    done = run_cli("quota", "--cluster-state", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_from_a_live_cluster_the_job_is_read_by_name_and_its_own_status_decides(tmp_path: Path) -> None:
    """--kubeconfig against the local API test server: the state listed as audit lists it, the
    JobSet read by name (its replicatedJobsStatus says every replica is ready: Running)."""
    jobset = StoredJobSet().ready(2).obj()
    jobset["metadata"].update(namespace="kubemaker", name="llm-pretrain-a3f8")
    api = FakeApiServer(kinds=JUDGED_KINDS).start()
    try:
        for obj in yaml.safe_load_all(Path(_state(tmp_path, "team-a", rfc_example_one().obj())).read_text()):
            api.put(k.BY_KIND[obj["kind"]], obj)
        api.put(JUDGED_KINDS[0], jobset)
        kubeconfig = str(write_kubeconfig(tmp_path / "config", api.port))
        code, answer, _ = _explain("jobset/llm-pretrain-a3f8", "-n", "kubemaker", "--kubeconfig", kubeconfig)
        assert code == 0
        [result] = answer["results"]
        assert (result["state"], result["since"], result["clusterQueue"]) == (
            "Running",
            "2026-12-01T09:00:00Z",
            "team-a",
        )
        assert api.list_queries(JUDGED_KINDS[0])[-1]["fieldSelector"] == ["metadata.name=llm-pretrain-a3f8"]
        code, answer, _ = _explain("jobset/gone", "-n", "kubemaker", "--kubeconfig", kubeconfig)
        assert code == 1
        assert answer["errors"] == [
            "JobSet kubemaker/gone: not found: no JobSet kubemaker/gone was read, and no Workload names it as its owner"
        ]
    finally:
        api.stop()
    done = run_cli("explain", "jobset/x", "--kubeconfig", kubeconfig)
    assert done.returncode == 2 and "could not be listed" in done.stderr and "Traceback" not in done.stderr


def test_a_deployments_pod_running_and_ready_in_the_files_is_running(tmp_path: Path) -> None:
    """A Deployment is one Workload per Pod: the Pod's readiness, read from the state, decides."""
    pod = "web-7c9d8f6b4-x2k4m"
    workload = rfc_example_one().name(f"pod-{pod}-abcde").job_uid("uid-pod").owner("Pod", pod).obj()
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": "kubemaker"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    answers = []
    for objects in ((workload,), (workload, running)):
        code, answer, _ = _explain(
            "deployment/web", "-n", "kubemaker", "--cluster-state", _state(tmp_path, "team-a", *objects)
        )
        assert code == 0, answer
        answers.append(answer["results"][0]["state"])
    assert answers == ["Starting", "Running"]


def test_the_readme_example_runs_as_written_on_the_shipped_state(monkeypatch: Any) -> None:
    """The README's explain block: the line that reads the shipped example state answers, from
    the repository root, with the job's state, its queue and Kueue's reason."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    readme = (root / "README.md").read_text()
    section = readme[readme.index("## Why is my job not running?") :]
    block = section[section.index("```bash\n") + len("```bash\n") : section.index("```\n", section.index("```bash"))]
    commands = [line for line in block.splitlines() if line.startswith("tpu-admission explain")]
    offline = [line for line in commands if "--cluster-state tests/fixtures/" in line]
    assert len(commands) == 2 and len(offline) == 1
    done = run_cli(*shlex.split(offline[0])[1:])
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "JobSet kubemaker/llm-pretrain-a3f8: Queued"
    assert "insufficient unused quota for google.com/tpu in flavor tpu7x-4x4x4, 64 more needed" in " ".join(
        line.strip() for line in lines
    )
    as_json = run_cli(*shlex.split(offline[0])[1:], "-o", "json")
    (result,) = json.loads(as_json.stdout)["results"]
    assert as_json.returncode == 0 and result["state"] == "Queued"


EXAMPLE = ["--cluster-state", "tests/fixtures/cluster", "--cluster-state", "tests/fixtures/explain"]


def _tables(text: str) -> list[str]:
    """The quota tables' titles (``flavor resource``) of a text answer."""
    return [line.strip() for line in text.splitlines() if line.startswith("  tpu7x") or line.startswith("  cpu-")]


def test_explain_leads_with_the_resources_the_job_asks_for_and_wide_shows_every_table(monkeypatch: Any) -> None:
    """The queued example asks for TPU chips and ephemeral storage: its short answer shows
    those tables where a team uses or waits for them, not a table of zeros per resource."""
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    target = ["explain", "jobset/llm-pretrain-a3f8", "-n", "kubemaker", *EXAMPLE]
    short = run_cli(*target)
    wide = run_cli(*target, "-o", "wide")
    assert short.returncode == wide.returncode == 0
    assert _tables(short.stdout) == [
        "tpu7x-4x4x4 ephemeral-storage",
        "tpu7x-4x4x4 google.com/tpu",
        "tpu7x-4x4x8 google.com/tpu",
    ]
    assert len(_tables(wide.stdout)) == 20 and set(_tables(short.stdout)) < set(_tables(wide.stdout))
    assert short.stdout.splitlines()[-1] == (
        "  (17 more quota table(s), of resources it does not ask for or nobody uses: -o wide)"
    )
    assert short.stdout.split("\nQuota of")[0] == wide.stdout.split("\nQuota of")[0]  # the answer itself is whole
    assert len(short.stdout.splitlines()) * 2 < len(wide.stdout.splitlines())


def test_quota_leaves_out_tables_of_zeros_and_filters_as_asked(monkeypatch: Any) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    state = EXAMPLE[:2]
    short, wide = run_cli("quota", *state), run_cli("quota", *state, "-o", "wide")
    assert short.returncode == wide.returncode == 0
    # the chips' tables (the cohort's, then a ClusterQueue of no cohort); no other resource is in use
    assert _tables(short.stdout) == [
        "tpu7x-4x4x4 google.com/tpu",
        "tpu7x-4x4x8 google.com/tpu",
        "tpu7x-4x8x8 google.com/tpu",
        "tpu7x-4x4x4 google.com/tpu",
    ]
    assert len(_tables(wide.stdout)) == 26
    assert short.stdout.splitlines()[-1] == "(17 more table(s), idle or of zeros: -o wide or --resource)"
    assert len(short.stdout.splitlines()) * 3 < len(wide.stdout.splitlines())
    tpu = run_cli("quota", *state, "--resource", "google.com/tpu", "--cohort", "tpu-pool")
    assert _tables(tpu.stdout) == [
        "tpu7x-4x4x4 google.com/tpu",
        "tpu7x-4x4x8 google.com/tpu",
        "tpu7x-4x8x8 google.com/tpu",
    ]
    one = json.loads(
        run_cli("quota", *state, "--cluster-queue", "team-b", "--flavor", "tpu7x-4x4x8", "-o", "json").stdout
    )
    assert json.dumps(one).count("team-a") == 0 and "tpu7x-4x4x8" in json.dumps(one)
    typo = run_cli("quota", *state, "--resource", "google.com/tpus")
    assert (typo.returncode, typo.stdout) == (2, "")
    assert (
        typo.stderr
        == "tpu-admission: quota: --resource 'google.com/tpus' is not in the state; did you mean 'google.com/tpu'?\n"
    )


def test_times_say_how_long_ago_as_kubectls_age_does(monkeypatch: Any) -> None:
    now = datetime.datetime(2026, 12, 1, 11, 30, 5, tzinfo=datetime.UTC)
    assert [ago(when, now) for when in ("2026-12-01T11:30:00Z", "2026-12-01T11:28:00Z", "2026-12-01T08:00:00Z")] == [
        "5s ago",
        "2m ago",
        "3h ago",
    ]
    assert ago("2026-11-20T11:30:05Z", now) == "11d ago" and ago("2026-12-02T00:00:00Z", now) == "in the future"
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    done = run_cli("explain", "jobset/llm-pretrain-a3f8", "-n", "kubemaker", *EXAMPLE)
    age = ago("2026-12-01T08:00:00Z", datetime.datetime.now(datetime.UTC))
    assert f"since 2026-12-01T08:00:00Z ({age}):" in " ".join(line.strip() for line in done.stdout.splitlines())
    as_json = json.loads(
        run_cli("explain", "jobset/llm-pretrain-a3f8", "-n", "kubemaker", *EXAMPLE, "-o", "json").stdout
    )
    assert as_json["results"][0]["since"] == "2026-12-01T08:00:00Z"  # machines get the time alone
