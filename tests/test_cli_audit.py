"""``tpu-admission audit`` end to end, through ``main(argv)``: from state files and from the local API test server.

The promise under test (the product spec): each audited object's verdict is what
``check`` says of it as its user wrote it (without the fields other writers set),
against the same state less its own Workload.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml
from cluster_apiserver import FakeApiServer, free_port, write_kubeconfig
from cluster_fixtures import OBJECTS, load
from support import DEPLOYMENTS, FIXTURES, JOBS, JOBSET_OWNER, JOBSETS, load_jobset, run_cli, set_path, write_yaml

from webhook.cli.main import build_parser
from webhook.cluster import kinds as k
from webhook.cluster import listing
from webhook.cluster.listing import JUDGED_KINDS
from webhook.cluster.reports import CLUSTER_POLICY_REPORTS, POLICY_REPORTS

STATE = FIXTURES / "cluster"
PRIORITY = "kueue.x-k8s.io/priority-class"
PODSET = "kueue.x-k8s.io/podset-"
RUNNING = "jobset-a-running-guaranteed-1a2b3"  # holds 128 guaranteed chips of tpu7x-4x4x4 in team-a
JOBSET_KIND, JOB_KIND, DEPLOYMENT_KIND = JUDGED_KINDS


# ---------------------------------------------------------------- the objects


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"] for job in obj["spec"]["replicatedJobs"]]
    return [obj["spec"]["template"]]


def user_wrote(obj: dict[str, Any], mode: str) -> dict[str, Any]:
    """The object as its user wrote it: no spec.suspend, and in dynamic mode no podset-* annotations.

    Spelled out here rather than through ``webhook.objects.stored``, which is under test.
    """
    obj = copy.deepcopy(obj)
    obj["spec"].pop("suspend", None)
    if mode == "dynamic" and obj["kind"] != "Deployment":
        for template in _pod_templates(obj):
            annotations = template.get("metadata", {}).get("annotations", {})
            for key in [key for key in annotations if key.startswith(PODSET)]:
                del annotations[key]
    return obj


def stored(obj: dict[str, Any], mode: str, patch: list[dict[str, Any]], uid: str) -> dict[str, Any]:
    """What the API server holds once the object ran the admission chain and its controllers ran."""
    obj = jsonpatch.apply_patch(copy.deepcopy(obj), patch)  # this webhook's own mutation (default labels)
    metadata = obj["metadata"]
    metadata.update(
        uid=uid,
        resourceVersion="48151623",
        generation=2,
        creationTimestamp="2026-01-01T00:00:00Z",
        managedFields=[{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1"}],
    )
    if obj["kind"] != "Deployment":
        obj["spec"]["suspend"] = False  # Kueue's webhook set true; its controller admitted the job
    for template in _pod_templates(obj):
        if mode == "dynamic" and obj["kind"] != "Deployment":  # the Slice Provisioner's webhook
            annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
            annotations[f"{PODSET}slice-required-topology"] = "cloud.google.com/gke-tpu-slice-4x4x4-id"
            annotations[f"{PODSET}slice-size"] = "16"
        for container in template["spec"].get("containers", []):  # the API server's defaults
            container.setdefault("imagePullPolicy", "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            resources = container.setdefault("resources", {})
            for resource, value in (resources.get("limits") or {}).items():
                resources.setdefault("requests", {}).setdefault(resource, value)
        template["spec"].setdefault("dnsPolicy", "ClusterFirst")
        template["spec"].setdefault("schedulerName", "default-scheduler")
    if obj["kind"] == "JobSet":
        obj["spec"].setdefault("successPolicy", {"operator": "All"})
        obj["spec"].setdefault("network", {"enableDNSHostnames": True, "subdomain": metadata["name"]})
        obj["status"] = {"replicatedJobsStatus": [{"name": "workers", "active": 2, "ready": 2}]}
    elif obj["kind"] == "Job":
        obj["spec"].setdefault("completionMode", "NonIndexed")
        obj["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = obj["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})
        labels.update({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": metadata["name"]})
        obj["status"] = {"active": 16, "startTime": "2026-01-01T00:00:05Z"}
    else:
        obj["spec"].setdefault("strategy", {"type": "RollingUpdate"})
        obj["status"] = {"replicas": 3, "readyReplicas": 3}
    return obj


def own_workload(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    """The object's Workload: RUNNING's (128 guaranteed chips held in team-a), now owned by it."""
    workload = copy.deepcopy(next(o for o in OBJECTS if o["metadata"].get("name") == RUNNING))
    name, namespace, kind = obj["metadata"]["name"], obj["metadata"]["namespace"], obj["kind"]
    if kind == "Deployment":  # Kueue's pod integration: one Workload per pod, owned by the pod
        reference = {"apiVersion": "v1", "kind": "Pod", "name": f"{name}-7d9fb5c4d8-x2k9p", "uid": "pod-uid"}
    else:
        reference = {"apiVersion": obj["apiVersion"], "kind": kind, "name": name, "uid": uid, "controller": True}
    workload["metadata"].update(name=f"{kind.lower()}-{name}-own", namespace=namespace, ownerReferences=[reference])
    workload["spec"]["queueName"] = obj["metadata"].get("labels", {}).get("kueue.x-k8s.io/queue-name", "q")
    return workload


def corpus() -> list[dict[str, Any]]:
    """Every fixture JobSet, Job and Deployment, and guaranteed versions of the admitted RFC examples."""
    objects = [yaml.safe_load(p.read_text()) for d in (JOBSETS, JOBS, DEPLOYMENTS) for p in sorted(d.glob("*.yaml"))]
    for obj in list(objects):
        if obj["metadata"]["name"] in ("llm-pretrain-a3f8", "llm-eval-b7c2", "eval-gateway"):
            guaranteed = copy.deepcopy(obj)
            guaranteed["metadata"]["name"] += "-g"
            set_path(guaranteed, f'metadata.labels["{PRIORITY}"]', "guaranteed")
            objects.append(guaranteed)
    # the same names occur in several fixtures: one object per (kind, namespace, name), as in a cluster
    unique: dict[tuple[str, str, str], dict[str, Any]] = {}
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace", "default"), obj["metadata"]["name"])
        if key in unique:
            obj["metadata"]["name"] += f"-{len(unique)}"
            key = (key[0], key[1], obj["metadata"]["name"])
        unique[key] = obj
    return list(unique.values())


def verdict(result: dict[str, Any]) -> tuple[Any, ...]:
    return (result["allowed"], result["tier"], result["mode"], result["violations"], result["warnings"])


Key = tuple[str, str, str]


def cluster_of(tmp_path: Path, mode: str) -> tuple[list[dict[str, Any]], dict[Key, tuple[Any, ...]]]:
    """The corpus as a cluster holds it (stored objects, each with its Workload), and check's verdicts.

    Each object's verdict is check's of the object as written, against the fixture state
    plus every *other* object's Workload: the same state less its own.
    """
    written = [user_wrote(obj, mode) for obj in corpus()]
    workloads = [own_workload(obj, f"uid-{index}") for index, obj in enumerate(written)]
    stored_objects, expected = [], {}
    for index, obj in enumerate(written):
        state = tmp_path / f"state-{mode}-{index}"
        shutil.copytree(STATE, state)
        others = [w for i, w in enumerate(workloads) if i != index]
        write_yaml(state / "others.yaml", {"apiVersion": "v1", "kind": "List", "items": others})
        manifest = write_yaml(tmp_path / f"written-{mode}-{index}.yaml", obj)
        done = run_cli("check", str(manifest), "--cluster-state", str(state), "--mode", mode, "--output", "json")
        assert done.returncode in (0, 1), done.stderr
        [result] = json.loads(done.stdout)["results"]
        expected[(result["kind"], result["namespace"], result["name"])] = verdict(result)
        stored_objects += [stored(obj, mode, result["patch"], f"uid-{index}"), workloads[index]]
    return stored_objects, expected


# ---------------------------------------------------------------- the promise, from files


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_each_verdict_is_checks_of_the_object_as_its_user_wrote_it(tmp_path: Path, mode: str) -> None:
    objects, expected = cluster_of(tmp_path, mode)
    state = tmp_path / "state"
    shutil.copytree(STATE, state)
    write_yaml(state / "objects.yaml", {"apiVersion": "v1", "kind": "List", "items": objects})
    done = run_cli("audit", "--cluster-state", str(state), "--mode", mode, "--output", "json")
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(done.stdout)
    got = {(r["kind"], r["namespace"], r["name"]): verdict(r) for r in document["results"]}
    assert got == expected
    # the comparison is worth something: every kind, denials and admissions, the quota rule both ways
    assert {kind for kind, _, _ in got} == {"JobSet", "Job", "Deployment"}
    assert {allowed for allowed, *_ in got.values()} == {True, False}
    rules = [v["rule"] for _, _, _, violations, _ in got.values() for v in violations]
    assert "guaranteed-balance-exceeded" in rules
    assert all(r["patch"] == [] for r in document["results"])  # stored objects carry their labels
    assert done.returncode == (0 if all(allowed for allowed, *_ in got.values()) else 1)


def test_the_own_workload_is_what_makes_the_difference(tmp_path: Path) -> None:
    """The guaranteed RFC example holds 128 chips: counted against itself it would be refused."""
    jobset = load_jobset("rfc-4.6-static")
    set_path(jobset, f'metadata.labels["{PRIORITY}"]', "guaranteed")
    running = stored(jobset, "static", [], "uid-1")
    own = own_workload(jobset, "uid-1")  # RUNNING's chips, now its: the fixture's RUNNING is left out
    state = tmp_path / "state"
    shutil.copytree(STATE, state)
    workloads = yaml.safe_load((state / "workloads.yaml").read_text())
    workloads["items"] = [w for w in workloads["items"] if w["metadata"]["name"] != RUNNING] + [own]
    write_yaml(state / "workloads.yaml", workloads)
    write_yaml(state / "objects.yaml", running)
    done = run_cli("audit", "--cluster-state", str(state), "--output", "json")
    assert done.returncode == 0, done.stdout
    # another uid: the Workload is a deleted namesake's, so it counts against this one
    own["metadata"]["ownerReferences"][0]["uid"] = "uid-of-an-older-jobset"
    write_yaml(state / "workloads.yaml", workloads)
    done = run_cli("audit", "--cluster-state", str(state), "--output", "json")
    assert done.returncode == 1
    [result] = json.loads(done.stdout)["results"]
    assert [v["rule"] for v in result["violations"]] == ["guaranteed-balance-exceeded"]
    assert "nominal 256 − in use 128 − pending 64" in result["violations"][0]["message"]


def test_what_is_not_judged_and_why(tmp_path: Path) -> None:
    """A JobSet's own Job is judged with its JobSet; an object in a namespace without a tier is not judged."""
    jobset = stored(load_jobset("rfc-4.6-static"), "static", [], "uid-1")
    child = yaml.safe_load((JOBS / "rfc-job-static.yaml").read_text())
    child["metadata"].update(name="llm-pretrain-a3f8-workers-0", ownerReferences=[{**JOBSET_OWNER, "uid": "uid-1"}])
    system = yaml.safe_load((DEPLOYMENTS / "service-deployment.yaml").read_text())
    system["metadata"].update(name="coredns", namespace="kube-system")
    files = write_yaml(
        tmp_path / "objects.yaml", {"apiVersion": "v1", "kind": "List", "items": [child, jobset, system]}
    )
    done = run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(files))
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("JobSet kubemaker/llm-pretrain-a3f8 (") and lines[0].endswith(
        ": admitted (tier production, mode static)"
    )
    assert lines[-1].startswith("tpu-admission audit: 1 checked, 1 admitted, 0 denied")
    assert lines[-1].endswith(
        "; not judged: 1 JobSet-owned Job(s) judged with their JobSet, 1 object(s) in namespaces without a tier"
    )
    done = run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(files), "--output", "json")
    assert [r["name"] for r in json.loads(done.stdout)["results"]] == ["llm-pretrain-a3f8"]


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        ({**JOBSET_OWNER, "uid": "uid-of-another-jobset"}, "llm-pretrain-a3f8-workers-0"),
        ({**JOBSET_OWNER, "name": "no-such-jobset", "uid": "uid-1"}, "no-such-jobset-workers-0"),
        ({**JOBSET_OWNER, "uid": "uid-1"}, "llm-pretrain-a3f8-my-own-0"),
        ({**JOBSET_OWNER, "uid": "uid-1"}, "my-tpu-job"),
    ],
    ids=["another-uid", "absent-jobset", "not-a-replicated-job", "not-its-name"],
)
def test_a_job_that_only_claims_a_jobset_owner_is_judged_on_its_own(
    tmp_path: Path, owner: dict[str, Any], name: str
) -> None:
    """An owner reference is what the Job says of itself: without its JobSet audited, or with
    a name the JobSet controller would not give it, the Job is judged like any other."""
    jobset = stored(load_jobset("rfc-4.6-static"), "static", [], "uid-1")
    child = yaml.safe_load((JOBS / "rfc-job-static.yaml").read_text())
    child["metadata"].update(name=name, ownerReferences=[owner])
    files = write_yaml(tmp_path / "objects.yaml", {"apiVersion": "v1", "kind": "List", "items": [child, jobset]})
    done = run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(files), "--output", "json")
    assert [(r["kind"], r["name"]) for r in json.loads(done.stdout)["results"]] == [
        ("JobSet", "llm-pretrain-a3f8"),
        ("Job", name),
    ]


def test_output_json_is_checks_shape(tmp_path: Path) -> None:
    obj = yaml.safe_load((JOBSETS / "falcon-migration.yaml").read_text())
    manifest = write_yaml(tmp_path / "m.yaml", obj)
    checked = json.loads(run_cli("check", str(manifest), "--cluster-state", str(STATE), "--output", "json").stdout)
    audited = json.loads(
        run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(manifest), "--output", "json").stdout
    )
    assert set(audited) == set(checked)
    assert [set(r) for r in audited["results"]] == [set(r) for r in checked["results"]]
    assert (audited["results"][0]["source"], audited["results"][0]["line"]) == (str(manifest), 1)
    assert audited["summary"] == checked["summary"]


def test_namespaces_narrow_the_audit(tmp_path: Path) -> None:
    files = ["--cluster-state", str(STATE), "--cluster-state", str(JOBSETS), "--cluster-state", str(DEPLOYMENTS)]
    done = run_cli("audit", *files, "--namespace", "default", "--output", "json")
    assert [(r["kind"], r["namespace"]) for r in json.loads(done.stdout)["results"]] == [("Deployment", "default")]
    done = run_cli("audit", *files, "--namespace", "default", "--namespace", "falcon-jobs", "--output", "json")
    assert {r["namespace"] for r in json.loads(done.stdout)["results"]} == {"default", "falcon-jobs"}


@pytest.mark.parametrize("output", ["junit", "sarif", "policyreport", "text"])
def test_every_output_renders(tmp_path: Path, output: str) -> None:
    done = run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(JOBSETS), "--output", output)
    assert done.returncode == 1 and done.stdout.strip(), done.stderr
    if output == "policyreport":
        reports = list(yaml.safe_load_all(done.stdout))
        assert {r["metadata"]["namespace"] for r in reports} == {"falcon-jobs", "kubemaker"}


def test_exit_codes(tmp_path: Path) -> None:
    admitted = ["--cluster-state", str(STATE), "--cluster-state", str(JOBSETS / "rfc-4.6-static.yaml")]
    assert run_cli("audit", *admitted).returncode == 0
    assert run_cli("audit", *admitted, "--strict").returncode == 0
    assert run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(JOBSETS)).returncode == 1
    assert run_cli("audit", "--cluster-state", str(STATE)).returncode == 1  # nothing judged, as kubectl apply ...
    assert run_cli("audit", "--cluster-state", str(STATE), "--allow-empty").returncode == 0  # ... unless allowed
    assert run_cli("audit", "--cluster-state", str(STATE), "--allow-empty", "--strict").returncode == 1
    nowhere = run_cli("audit", *admitted, "-n", "nosuchns")
    assert nowhere.returncode == 1 and nowhere.stdout.endswith("nothing was checked\n")
    assert run_cli("audit", *admitted, "-n", "nosuchns", "-A").returncode == 0  # -A: every namespace
    missing = run_cli("audit", "--cluster-state", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 2 and "--cluster-state" in missing.stderr and "no such file" in missing.stderr
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    assert run_cli("audit", "--cluster-state", str(tmp_path / "broken.yaml")).returncode == 2
    both = run_cli("audit", "--cluster-state", str(STATE), "--kubeconfig", "x")
    assert both.returncode == 2 and "not allowed with" in both.stderr
    apply_files = run_cli("audit", "--cluster-state", str(STATE), "--output", "policyreport", "--apply")
    assert apply_files.returncode == 2 and "live cluster" in apply_files.stderr
    apply_text = run_cli("audit", "--kubeconfig", "x", "--apply")
    assert apply_text.returncode == 2 and "--output policyreport" in apply_text.stderr
    bad_config = tmp_path / "policy.yaml"
    bad_config.write_text("mode: sideways\n")
    assert run_cli("audit", "--cluster-state", str(STATE), "--config", str(bad_config)).returncode == 2


# ---------------------------------------------------------------- live


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApiServer]:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    server = load(FakeApiServer(kinds=(*JUDGED_KINDS, POLICY_REPORTS, CLUSTER_POLICY_REPORTS))).start()
    try:
        yield server
    finally:
        server.stop()


def kubeconfig(api: FakeApiServer, tmp_path: Path) -> str:
    return str(write_kubeconfig(tmp_path / "kubeconfig", api.port))


def put_stored(api: FakeApiServer) -> None:
    """The corpus as stored objects, for tests of what is done with the verdicts."""
    kinds = {kind.kind: kind for kind in JUDGED_KINDS}
    for index, obj in enumerate(corpus()):
        api.put(kinds[obj["kind"]], stored(user_wrote(obj, "static"), "static", [], f"uid-{index}"))


def put_corpus(api: FakeApiServer, tmp_path: Path, mode: str) -> dict[Key, tuple[Any, ...]]:
    """The corpus as stored objects (with their Workloads) in the API server; check's verdicts by object."""
    kinds = {kind.kind: kind for kind in (*JUDGED_KINDS, k.WORKLOADS)}
    objects, expected = cluster_of(tmp_path, mode)
    for obj in objects:
        api.put(kinds[obj["kind"]], obj)
    return expected


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_live_verdicts_are_checks_too(
    api: FakeApiServer, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "PAGE_SIZE", 3)  # every list is paged
    expected = put_corpus(api, tmp_path, mode)
    done = run_cli("audit", "--kubeconfig", kubeconfig(api, tmp_path), "--mode", mode, "--output", "json")
    assert done.returncode in (0, 1), done.stderr
    results = json.loads(done.stdout)["results"]
    assert {(r["kind"], r["namespace"], r["name"]): verdict(r) for r in results} == expected
    assert {(r["source"], r["line"]) for r in results} == {("cluster", 0)}
    # one paged list per kind: each listed from the start once, then by its continue tokens
    for kind in (*JUDGED_KINDS, *k.KINDS):
        queries = api.list_queries(kind)
        assert [q for q in queries if "continue" not in q] == [{"limit": ["3"]}], kind.name
    assert len(api.list_queries(JOBSET_KIND)) > 1 and len(api.list_queries(k.WORKLOADS)) > 1


def test_live_namespaces_and_unreachable(api: FakeApiServer, tmp_path: Path) -> None:
    put_stored(api)
    done = run_cli("audit", "--kubeconfig", kubeconfig(api, tmp_path), "--namespace", "falcon-jobs", "--output", "json")
    assert {r["namespace"] for r in json.loads(done.stdout)["results"]} == {"falcon-jobs"}
    judged = [path for path in api.paths if path.rpartition("/")[2] in ("jobsets", "jobs", "deployments")]
    assert judged == [f"{kind.path.rpartition('/')[0]}/namespaces/falcon-jobs/{kind.plural}" for kind in JUDGED_KINDS]
    port = free_port()  # closed: nothing listens there
    gone = write_kubeconfig(tmp_path / "gone", port)
    done = run_cli("audit", "--kubeconfig", str(gone))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (  # the server and the cause, whole (it was cut at "...Failed to establish")
        f"tpu-admission audit: the cluster at http://127.0.0.1:{port} could not be listed: "
        "Namespaces: API server unreachable: Connection refused\n"
    )
    api.errors = {"Deployments": 403}
    done = run_cli("audit", "--kubeconfig", kubeconfig(api, tmp_path))
    assert done.returncode == 2 and "Deployments: forbidden (403)" in done.stderr and done.stdout == ""


def test_apply_writes_the_reports_and_removes_stale_ones(api: FakeApiServer, tmp_path: Path) -> None:
    put_stored(api)
    config = kubeconfig(api, tmp_path)
    stale = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport", "summary": {}, "results": []}
    labels = {"app.kubernetes.io/managed-by": "tpu-admission"}
    api.put(POLICY_REPORTS, {**stale, "metadata": {"name": "tpu-admission", "namespace": "gone", "labels": labels}})
    api.put(POLICY_REPORTS, {**stale, "metadata": {"name": "kyverno-owned", "namespace": "kubemaker"}})
    done = run_cli("audit", "--kubeconfig", config, "--output", "policyreport", "--apply")
    assert done.returncode == 1, done.stderr
    written = {key: obj for key, obj in api.objects[POLICY_REPORTS.path].items()}
    assert set(written) == {
        ("falcon-jobs", "tpu-admission"),
        ("kubemaker", "tpu-admission"),
        ("default", "tpu-admission"),
        ("kubemaker", "kyverno-owned"),  # not ours: left alone
    }
    # what was written is what --output policyreport prints (but for the time stamps)
    printed = run_cli("audit", "--kubeconfig", config, "--output", "policyreport")

    def untimed(report: dict[str, Any]) -> dict[str, Any]:
        results = [{key: value for key, value in r.items() if key != "timestamp"} for r in report["results"]]
        # what the API server assigns is not what was written
        assigned = ("resourceVersion", "uid", "creationTimestamp", "generation")
        metadata = {key: value for key, value in report["metadata"].items() if key not in assigned}
        return {**report, "metadata": metadata, "results": results}

    for document in yaml.safe_load_all(printed.stdout):
        namespace = document["metadata"]["namespace"]
        assert untimed(written[(namespace, "tpu-admission")]) == untimed(document)
    assert done.stdout.splitlines()[0] == (
        "tpu-admission audit: applied 3 PolicyReport(s), deleted 1 stale one(s) (gone/tpu-admission)"
    )
    assert api.applied(POLICY_REPORTS) == [
        ("default", "tpu-admission"),
        ("falcon-jobs", "tpu-admission"),
        ("kubemaker", "tpu-admission"),
    ]
    # again: the same three written, nothing left to delete
    again = run_cli("audit", "--kubeconfig", config, "--output", "policyreport", "--apply")
    assert again.stdout.splitlines()[0] == "tpu-admission audit: applied 3 PolicyReport(s)"
    # a namespaced run touches only its namespace
    run_cli("audit", "--kubeconfig", config, "--namespace", "default", "--output", "policyreport", "--apply")
    assert {key for key in api.objects[POLICY_REPORTS.path]} == set(written)


def test_apply_failures_are_exit_2(api: FakeApiServer, tmp_path: Path) -> None:
    put_stored(api)
    api.errors = {"PolicyReports": 403}
    done = run_cli("audit", "--kubeconfig", kubeconfig(api, tmp_path), "--output", "policyreport", "--apply")
    assert done.returncode == 2 and "not written: forbidden (403)" in done.stderr


def test_help_has_examples_and_exit_codes_and_no_markup() -> None:
    done = run_cli("audit", "--help")
    assert done.returncode == 0
    assert "examples:\n  tpu-admission audit " in done.stdout and "exit codes:\n  0  " in done.stdout
    assert "`" not in done.stdout
    assert "    audit " in run_cli("--help").stdout
    for line in done.stdout.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines():
        words = shlex.split(line.split("|")[0].split(">")[0].split("(")[0])
        if words[0] == "tpu-admission":
            build_parser().parse_args(words[1:])  # every example parses


def test_the_docs_commands_parse_and_name_what_exists() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    commands = [
        line.split("#")[0].split("|")[0].split(">")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", docs, re.S)
        for line in block.splitlines()
    ]
    audits = [shlex.split(c)[1:] for c in commands if c.startswith("tpu-admission ")]
    assert len(audits) >= 6
    for argv in audits:
        build_parser().parse_args(argv)
    for command in commands:
        if command.startswith("kubectl apply -k "):
            assert (Path(__file__).resolve().parents[1] / command.split()[-1] / "kustomization.yaml").is_file()


def test_offline_from_a_snapshot_is_the_live_audit(api: FakeApiServer, tmp_path: Path) -> None:
    """snapshot's typed lists (Workload uids dropped, owner references kept) plus the objects: the same verdicts."""
    expected = put_corpus(api, tmp_path, "static")
    config = kubeconfig(api, tmp_path)
    state = tmp_path / "snapshot.yaml"
    assert run_cli("snapshot", "--kubeconfig", config, "--output-file", str(state)).returncode == 0
    assert "kind: WorkloadList" in state.read_text()
    objects = [obj for kind in JUDGED_KINDS for obj in api.objects[kind.path].values()]
    listed = write_yaml(tmp_path / "objects.yaml", {"apiVersion": "v1", "kind": "List", "items": objects})
    offline = run_cli("audit", "--cluster-state", str(state), "--cluster-state", str(listed), "--output", "json")
    live = run_cli("audit", "--kubeconfig", config, "--output", "json")
    assert offline.returncode == live.returncode
    by_object = {(r["kind"], r["namespace"], r["name"]): verdict(r) for r in json.loads(offline.stdout)["results"]}
    assert by_object == expected
    assert by_object == {(r["kind"], r["namespace"], r["name"]): verdict(r) for r in json.loads(live.stdout)["results"]}


def test_typed_lists_are_audited_as_lists(tmp_path: Path) -> None:
    """A ``JobSetList`` as a list call answers it (items without apiVersion or kind) is read as its items."""
    jobset = stored(load_jobset("rfc-4.6-static"), "static", [], "uid-1")
    bare = {key: value for key, value in jobset.items() if key not in ("apiVersion", "kind")}
    files = write_yaml(
        tmp_path / "jobsets.yaml", {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSetList", "items": [bare]}
    )
    done = run_cli("audit", "--cluster-state", str(STATE), "--cluster-state", str(files), "--output", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["kind"], r["name"]) for r in json.loads(done.stdout)["results"]] == [("JobSet", "llm-pretrain-a3f8")]
