"""``tpu-admission simulate`` end to end, through ``main(argv)``: from state files (read as ``check
--cluster-state`` reads them) and from the local API test server (listed as ``audit`` lists it)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cluster_apiserver import FakeApiServer, write_kubeconfig
from cluster_fixtures import OBJECTS, load, team_a_workload
from support import FIXTURES, run_cli, write_yaml

from webhook.cluster import kinds as k

STATE = str(FIXTURES / "cluster")
FITS = str(FIXTURES / "jobsets" / "rfc-4.6-static-single.yaml")  # 256 chips of tpu7x-4x8x8 in team-b
PENDING = "jobset-a-pending-guaranteed-4c5d6"  # a guaranteed Workload waiting in team-a


def test_a_jobset_that_fits_starts_now_text_outcome_first() -> None:
    done = run_cli("simulate", FITS, "--cluster-state", STATE)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"ADMIT  JobSet kubemaker/eval-4x8x8  ({FITS}:2)",
        "  ClusterQueue team-b",
        "  fits now in ClusterQueue team-b on tpu7x-4x8x8",
        "  podSet workers ×64: google.com/tpu: tpu7x-4x8x8",
        "tpu-admission simulate: 1 of 1 would start now",
    ]


def test_json_is_the_contracts(tmp_path: Path) -> None:
    job = write_yaml(tmp_path / "w.yaml", team_a_workload("huge", 4096))
    done = run_cli("simulate", FITS, str(job), "--cluster-state", STATE, "--output", "json")
    assert done.returncode == 1  # one of them does not start now
    answer = json.loads(done.stdout)
    assert set(answer) == {"results", "errors"} and answer["errors"] == []
    first, second = answer["results"]
    assert first == {
        "source": FITS,
        "line": 2,
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "eval-4x8x8",
        "outcome": "admit",
        "reason": "",
        "clusterQueue": "team-b",
        "podSets": [{"name": "workers", "count": 64, "flavors": {"google.com/tpu": "tpu7x-4x8x8"}, "borrows": 0}],
        "preemptions": [],
        "position": {"ahead": 0, "chipsAhead": 0},
        "message": "fits now in ClusterQueue team-b on tpu7x-4x8x8",
        "holders": None,
    }
    assert (second["kind"], second["name"], second["outcome"], second["reason"]) == (
        "Workload",
        "huge",
        "never",
        "ExceedsMaxQuota",
    )


def test_the_pending_workload_created_before_it_is_in_front(tmp_path: Path) -> None:
    """A Workload created after the one already pending in team-a has it in front."""
    job = write_yaml(tmp_path / "w.yaml", team_a_workload("late", 64))
    done = run_cli("simulate", str(job), "--cluster-state", STATE, "--output", "json")
    (result,) = json.loads(done.stdout)["results"]
    assert result["position"] == {"ahead": 1, "chipsAhead": 64}
    assert done.returncode == (0 if result["outcome"] in ("admit", "preempt") else 1)


def test_usage_errors_exit_2_with_a_message_never_a_traceback(tmp_path: Path) -> None:
    typo = run_cli("simulate", FITS, "--cluster-state", STATE, "--tier", "prodction")
    assert (typo.returncode, typo.stdout) == (2, "")
    assert typo.stderr == (
        "tpu-admission simulate: --tier 'prodction' is not a configured tier (production, dev); "
        "did you mean 'production'?\n"
    )
    missing = run_cli("simulate", str(tmp_path / "nothing.yaml"), "--cluster-state", STATE)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr + missing.stdout
    nowhere = tmp_path / "no-such-kubeconfig"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KUBECONFIG", str(nowhere))
        env.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        neither = run_cli("simulate", FITS)
    assert neither.returncode == 2 and neither.stderr == (
        f"tpu-admission simulate: no cluster configuration: $KUBECONFIG ({nowhere}) names no file that exists, "
        "and this is not a pod (KUBERNETES_SERVICE_HOST is not set); give --kubeconfig FILE; or give the state as "
        "--cluster-state FILE\n"
    )
    both = run_cli("simulate", FITS, "--cluster-state", STATE, "--context", "prod")
    assert both.returncode == 2 and "give one" in both.stderr
    no_paths = run_cli("simulate", "--cluster-state", STATE)
    assert (no_paths.returncode, no_paths.stderr) == (
        2,
        "tpu-admission: simulate: give the files to read: PATH... or -f PATH (- for stdin)\n",
    )
    bad_state = run_cli("simulate", FITS, "--cluster-state", str(tmp_path / "gone"))
    assert bad_state.returncode == 2 and bad_state.stderr.startswith("tpu-admission simulate: --cluster-state: ")


def test_other_kinds_are_skipped_as_check_skips_them_and_a_misspelt_kind_is_an_error(tmp_path: Path) -> None:
    """A Node or ConfigMap beside the jobs is left out (named); ``kind: Jobset`` is a mistake."""
    other = write_yaml(tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    done = run_cli("simulate", FITS, str(other), "--cluster-state", STATE, "--output", "json")
    assert done.returncode == 0  # the job starts now; the ConfigMap is not judged
    answer = json.loads(done.stdout)
    assert (answer["errors"], answer["skipped"]) == (
        [],
        [
            {
                "source": str(other),
                "line": 1,
                "kind": "ConfigMap",
                "namespace": "",
                "name": "x",
                "skipped": "not a JobSet, Job, Deployment or Workload (v1 ConfigMap)",
            }
        ],
    )
    alone = run_cli("simulate", str(other), "--cluster-state", STATE)
    assert alone.returncode == 1  # nothing to simulate ...
    assert alone.stdout.splitlines() == [
        f"{other}:1: skipped (not a JobSet, Job, Deployment or Workload (v1 ConfigMap))",
        "tpu-admission simulate: 0 of 0 would start now; 1 skipped",
    ]
    assert run_cli("simulate", str(other), "--cluster-state", STATE, "--allow-empty").returncode == 0  # ... unless so
    job = yaml.safe_load(Path(FITS).read_text())
    misspelt = write_yaml(tmp_path / "typo.yaml", {**job, "kind": "Jobset"})
    typo = run_cli("simulate", str(misspelt), "--cluster-state", STATE, "--output", "json")
    assert typo.returncode == 1
    (error,) = json.loads(typo.stdout)["errors"]
    assert error.startswith(f"{misspelt}:") and "did you mean" in error


def test_two_objects_of_one_name_are_told_apart_by_file_and_line(tmp_path: Path) -> None:
    job = yaml.safe_load(Path(FITS).read_text())
    (tmp_path / "two.yaml").write_text(yaml.safe_dump_all([job, job]))
    done = run_cli("simulate", str(tmp_path / "two.yaml"), "--cluster-state", STATE)
    heads = [line for line in done.stdout.splitlines() if line.startswith("ADMIT")]
    assert [head.rsplit("  ", 1)[1] for head in heads] == [
        f"({tmp_path / 'two.yaml'}:1)",
        f"({tmp_path / 'two.yaml'}:{len(yaml.safe_dump(job).splitlines()) + 2})",
    ]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApiServer]:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    server = load(FakeApiServer(kinds=(k.KUEUE_CONFIG, k.WORKLOAD_PRIORITY_CLASSES))).start()
    for obj in OBJECTS:
        if obj["kind"] == "WorkloadPriorityClass":
            server.put(k.WORKLOAD_PRIORITY_CLASSES, obj)
    try:
        yield server
    finally:
        server.stop()


def test_from_a_live_cluster_the_answer_is_the_files(api: FakeApiServer, tmp_path: Path) -> None:
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", api.port))
    live = run_cli("simulate", FITS, "--kubeconfig", kubeconfig, "--output", "json")
    files = run_cli("simulate", FITS, "--cluster-state", STATE, "--output", "json")
    assert (live.returncode, live.stderr) == (0, "")
    assert json.loads(live.stdout) == json.loads(files.stdout)


def test_the_cluster_is_found_as_kubectl_finds_it(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KUBECONFIG as a list of files (merged, a missing one skipped), --context picking one of its
    contexts, -f as kubectl spells a file, and kubectl's global flags before the command too."""
    fake = json.loads(write_kubeconfig(tmp_path / "second", api.port).read_text())
    first = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "nobody", "user": {"token": "x"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "nobody"}}],
        "current-context": "gone",
    }
    (tmp_path / "first").write_text(json.dumps(first))
    paths = [tmp_path / "missing", tmp_path / "first", tmp_path / "second"]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(path) for path in paths))
    files = run_cli("simulate", FITS, "--cluster-state", STATE, "-o", "json")
    (context,) = fake["contexts"]
    picked = run_cli("simulate", "-f", FITS, "--context", context["name"], "-o", "json")
    assert (picked.returncode, picked.stderr) == (0, "")
    assert json.loads(picked.stdout) == json.loads(files.stdout)
    hoisted = run_cli("--context", context["name"], "simulate", "-f", FITS, "-o", "json")
    assert (hoisted.returncode, hoisted.stdout) == (0, picked.stdout)
    current = run_cli("simulate", "-f", FITS)  # the first file's current context: a cluster that is not there
    assert current.returncode == 2 and "127.0.0.1:9" in current.stderr and "Traceback" not in current.stderr


def test_a_deployment_says_how_many_of_its_pods_start_now(tmp_path: Path) -> None:
    """One Workload per pod (Kueue's pod integration): team-b has the CPU for all 3 pods."""
    deployment = yaml.safe_load((FIXTURES / "deployments" / "service-deployment.yaml").read_text())
    deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-b-queue"
    path = write_yaml(tmp_path / "d.yaml", deployment)
    done = run_cli("simulate", str(path), "--cluster-state", STATE, "--output", "json")
    (result,) = json.loads(done.stdout)["results"]
    assert (done.returncode, result["outcome"], result["clusterQueue"]) == (0, "admit", "team-b")
    assert result["podSets"] == [
        {
            "name": "main",
            "count": 1,
            "flavors": {"cpu": "cpu-standard", "ephemeral-storage": "cpu-standard", "memory": "cpu-standard"},
            "borrows": 0,
        }
    ]
    assert result["message"].endswith("; 3 of 3 pods start now (one Workload per pod)")


def test_a_typed_list_is_simulated_item_by_item(tmp_path: Path) -> None:
    """A ``JobSetList`` (what a list call answers) is its JobSets, not an object of its own."""
    job = yaml.safe_load(Path(FITS).read_text())
    bare = {key: value for key, value in job.items() if key not in ("apiVersion", "kind")}
    listed = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSetList", "items": [bare]}
    write_yaml(tmp_path / "list.yaml", listed)
    done = run_cli("simulate", str(tmp_path / "list.yaml"), "--cluster-state", STATE, "--output", "json")
    answer = json.loads(done.stdout)
    assert answer["errors"] == []
    assert [(r["kind"], r["name"], r["outcome"]) for r in answer["results"]] == [
        ("JobSet", job["metadata"]["name"], "admit")
    ]
    assert done.returncode == 0


def test_a_static_job_whose_pools_are_held_waits_topology_placement_failed(tmp_path: Path) -> None:
    """The fixture's 4x8x8 JobSet fits team-b's quota, but a Workload of team-a holds both hosts of the
    only 4x8x8 node pool (its topologyAssignment, by hostname) and team-b may not preempt it."""
    holder = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "holder", "namespace": "kubemaker", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "team-a-queue", "priority": 1000, "podSets": []},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
            "admission": {
                "clusterQueue": "team-a",
                "podSetAssignments": [
                    {
                        "name": "workers",
                        "flavors": {"google.com/tpu": "tpu7x-4x8x8"},
                        "resourceUsage": {"google.com/tpu": "256"},
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "slices": [
                                {
                                    "domainCount": 2,
                                    "valuesPerLevel": [
                                        {"individual": {"prefix": "gke-tpu-4x8x8-a-", "roots": ["0", "1"]}}
                                    ],
                                    "podCounts": {"universal": 32},
                                }
                            ],
                        },
                    }
                ],
            },
        },
    }
    extra = write_yaml(tmp_path / "holder.yaml", holder)
    done = run_cli("simulate", FITS, "--cluster-state", STATE, "--cluster-state", str(extra))
    assert (done.returncode, done.stderr) == (1, "")
    why = [
        f"WAIT (TopologyPlacementFailed)  JobSet kubemaker/eval-4x8x8  ({FITS}:2)",
        "  ClusterQueue team-b",
        "  needs 1 whole node pool of 4x8x8 (flavor tpu7x-4x8x8) with every host free; 0 of 1 free;"
        " held by kubemaker/holder (1 pool); no preemption Kueue would make frees enough of them",
    ]
    assert done.stdout.splitlines() == [  # the why first and short; the detail on asking
        *why,
        "  (3 more lines: -o wide)",
        "tpu-admission simulate: 0 of 1 would start now",
    ]
    wide = run_cli("simulate", FITS, "--cluster-state", STATE, "--cluster-state", str(extra), "-o", "wide")
    assert (wide.returncode, wide.stderr) == (1, "")
    assert wide.stdout.splitlines() == [
        *why,
        "  podSet workers ×64: google.com/tpu: tpu7x-4x8x8",
        "  node pools of 4x8x8 (tpu7x-4x8x8): needs 1, 0 of 1 free",
        "  held by: kubemaker/holder (team-a, 1 pool)",
        "tpu-admission simulate: 0 of 1 would start now",
    ]
    states = ["--cluster-state", STATE, "--cluster-state", str(extra)]
    answer = json.loads(run_cli("simulate", FITS, *states, "--output", "json").stdout)
    assert answer["results"][0]["holders"] == {
        "flavor": "tpu7x-4x8x8",
        "resource": "nodePools",
        "clusterQueues": [],
        "workloads": [{"name": "kubemaker/holder", "clusterQueue": "team-a", "amount": 1}],
    }


def test_no_output_echoes_a_control_character_raw(tmp_path: Path) -> None:
    """A file's name is the answer's ``source`` and starts each error line: with an escape
    sequence or a right-to-left override in it, text and JSON carried them raw."""
    named = tmp_path / "job\x1b[2J\u202e.yaml"
    named.write_text(Path(FITS).read_text())
    other = write_yaml(
        tmp_path / "cm\x07\u2066.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    )
    for output in ("text", "json"):
        done = run_cli("simulate", str(named), str(other), "--cluster-state", STATE, "--output", output)
        assert done.returncode == 0 and "skipped" in done.stdout  # the ConfigMap is skipped, as check skips it
        for said in (done.stdout, done.stderr):
            assert not any(c in said for c in "\x1b\x07\u202e\u2066"), said
    done = run_cli("simulate", str(named), "--cluster-state", STATE, "--output", "json")
    (result,) = json.loads(done.stdout)["results"]
    assert result["source"] == f"{tmp_path}/job\\u001b[2J\\u202e.yaml" and result["line"] == 2


def test_a_workload_beyond_kueues_schema_never_starts_naming_the_limit(tmp_path: Path) -> None:
    """19 podSets: one more than the Workload CRD's maxItems; Kueue could never have created it."""
    requests = {"requests": {"cpu": "1"}}
    podsets = [
        {"name": f"p{i}", "count": 1, "template": {"spec": {"containers": [{"name": "c", "resources": requests}]}}}
        for i in range(19)
    ]
    wide = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wide", "namespace": "kubemaker", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "team-b-queue", "podSets": podsets},
    }
    path = str(write_yaml(tmp_path / "wide.yaml", wide))
    done = run_cli("simulate", path, "--cluster-state", STATE)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.splitlines() == [
        f"NEVER (Misconfigured)  Workload kubemaker/wide  ({path}:1)",
        "  beyond Kueue's Workload schema: 19 podSets, but a Kueue Workload holds at most 18 (spec.podSets maxItems)",
        "tpu-admission simulate: 0 of 1 would start now",
    ]


def test_a_jobset_beyond_kueues_schema_is_denied_first_for_that_limit(tmp_path: Path) -> None:
    """The webhook's decision runs first and denies it; the limit is the answer's first violation."""
    job = yaml.safe_load(Path(FITS).read_text())
    template = job["spec"]["replicatedJobs"][0]
    job["spec"]["replicatedJobs"] = [{**template, "name": f"w{i}"} for i in range(19)]
    path = str(write_yaml(tmp_path / "wide.yaml", job))
    done = run_cli("simulate", path, "--cluster-state", STATE)
    assert done.returncode == 1
    assert done.stdout.splitlines()[:2] == [
        f"NEVER (Denied)  JobSet kubemaker/eval-4x8x8  ({path}:1)",
        "  the webhook would deny it: [workload-schema-exceeded] spec.replicatedJobs: 19 replicatedJobs make 19 "
        "podSets, but a Kueue Workload holds at most 18: Kueue cannot create its Workload, and the JobSet stays "
        "suspended; split the JobSet into JobSets of at most 18 replicatedJobs, or merge replicatedJobs that share "
        "a pod template",
    ]
