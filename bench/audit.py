"""``tpu-admission audit`` of a large cluster: wall time, peak memory, list requests.

    .venv/bin/python bench/audit.py [--jobsets 10000] [--namespaces 20] [--queues 100] [--nodes 2000]

Builds a cluster in the test API server (tests/cluster_apiserver.py, real HTTP on
loopback): ``--namespaces`` production namespaces, ``--queues`` ClusterQueues with their
LocalQueues spread over them, ``--nodes`` Nodes (static tpu7x pools and CPU nodes, as
bench/bench_cluster.py builds them), and ``--jobsets`` JobSets, each with its own
Workload (held, pending or finished; half guaranteed). Every tenth JobSet is one a rule
refuses (no priority label), every seventh was suspended by Kueue, and some of the
JobSet controller's Jobs are there too (one for every hundredth JobSet), which the audit
must not judge again.

Then it runs ``tpu-admission audit --kubeconfig ...`` in a child process, once per
output (``json``, ``policyreport``), and once over a cluster with no JobSets (start-up,
policy and the state kinds: the fixed cost), and prints one table: wall time, the
child's peak RSS (``ru_maxrss``), the list requests it made per kind, and the results
counted from its output. Goal: 10,000 JobSets in under a minute, memory bounded (the
objects are streamed page by page; what stays is one small result per object).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

import yaml  # noqa: E402
from bench_cluster import TIER, TOPOLOGIES, cluster_objects, workload  # noqa: E402
from cluster_apiserver import FakeApiServer, write_kubeconfig  # noqa: E402
from support import load_jobset  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402
from webhook.cluster.listing import JUDGED_KINDS  # noqa: E402

JOBSETS, JOBS, _ = JUDGED_KINDS


def namespace_of(queue: int, namespaces: int) -> str:
    return f"team-{queue % namespaces:02}"


def state(queues: int, nodes: int, namespaces: int) -> dict[k.Kind, list[dict[str, Any]]]:
    """bench_cluster's queues and nodes, its LocalQueues moved into ``namespaces`` namespaces."""
    by_kind: dict[k.Kind, list[dict[str, Any]]] = {}
    for kind, obj in cluster_objects(queues, nodes):
        if kind is k.NAMESPACES:
            continue
        if kind is k.LOCAL_QUEUES:
            queue = int(obj["metadata"]["name"].split("-")[1])
            obj["metadata"]["namespace"] = namespace_of(queue, namespaces)
        by_kind.setdefault(kind, []).append(obj)
    by_kind[k.NAMESPACES] = [
        {"metadata": {"name": f"team-{n:02}", "labels": {TIER: "production"}}} for n in range(namespaces)
    ]
    return by_kind


def jobset(i: int, queues: int, namespaces: int, template: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(template)
    queue = i % queues
    topology, hosts = TOPOLOGIES[i % 3]
    guaranteed = i % 2 == 0
    obj["metadata"] = {
        "name": f"train-{i:06}",
        "namespace": namespace_of(queue, namespaces),
        "uid": f"10000000-0000-0000-0000-{i:012}",
        "resourceVersion": "1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {
            "kueue.x-k8s.io/queue-name": f"team-{queue:04}-queue",
            "kueue.x-k8s.io/priority-class": "guaranteed" if guaranteed else "best-effort",
        },
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "jobset.x-k8s.io/v1alpha2"}],
    }
    if i % 10 == 3:
        del obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]  # a refused one
    job = obj["spec"]["replicatedJobs"][0]
    job["replicas"] = 1
    job["template"]["spec"]["parallelism"] = job["template"]["spec"]["completions"] = hosts
    pod = job["template"]["spec"]["template"]
    pod["metadata"]["annotations"]["kueue.x-k8s.io/podset-slice-size"] = str(hosts)
    pod["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = topology
    obj["spec"]["suspend"] = i % 7 == 0  # Kueue's: not judged
    obj["status"] = {"replicatedJobsStatus": [{"name": "workers", "active": 1, "ready": 1}]}
    return obj


def own_workload(i: int, obj: dict[str, Any], queues: int) -> dict[str, Any]:
    wl = workload(i, queues)
    wl["metadata"]["namespace"] = obj["metadata"]["namespace"]
    wl["metadata"]["name"] = f"jobset-{obj['metadata']['name']}-a1b2c"
    wl["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return wl


def child_job(obj: dict[str, Any]) -> dict[str, Any]:
    """The Job the JobSet controller made for the JobSet's first replica."""
    template = obj["spec"]["replicatedJobs"][0]["template"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{obj['metadata']['name']}-workers-0",
            "namespace": obj["metadata"]["namespace"],
            "uid": obj["metadata"]["uid"].replace("10000000", "20000000"),
            "labels": dict(obj["metadata"]["labels"]),
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": obj["metadata"]["name"],
                    "uid": obj["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy(template["spec"]),
    }


def run_audit(kubeconfig: Path, output: str, out: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit code of one ``audit`` in a child process."""
    command = [sys.executable, "-m", "webhook", "audit", "--kubeconfig", str(kubeconfig), "--output", output]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    started = time.perf_counter()
    with out.open("w") as stdout:
        child = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    assert child.stderr is not None
    errors = child.stderr.read().decode()
    child.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"audit failed ({code}): {errors}")
    return elapsed, usage.ru_maxrss / 1024, code


def counted(output: str, path: Path) -> str:
    text = path.read_text()
    if output == "json":
        document = json.loads(text)
        summary = document["summary"]
        return f"{summary['checked']} results, {summary['denied']} denied"
    reports = [r for r in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if r]
    results = sum(len(r["results"]) for r in reports)
    fails = sum(r["summary"]["fail"] for r in reports)
    return f"{len(reports)} PolicyReports, {results} results, {fails} fail"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobsets", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--outputs", default="json,policyreport")
    args = parser.parse_args()

    template = load_jobset("rfc-4.6-static")
    print(
        f"building {args.jobsets} JobSets (and their Workloads) in {args.namespaces} namespaces, "
        f"{args.queues} ClusterQueues, {args.nodes} Nodes ...",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, count in (("no JobSets (fixed cost)", 0), (f"{args.jobsets} JobSets", args.jobsets)):
            api = FakeApiServer(kinds=JUDGED_KINDS)
            for kind, objects in state(args.queues, args.nodes, args.namespaces).items():
                api.load(kind, objects)
            jobsets = [jobset(i, args.queues, args.namespaces, template) for i in range(count)]
            api.load(k.WORKLOADS, [own_workload(i, obj, args.queues) for i, obj in enumerate(jobsets)])
            api.load(JOBS, [child_job(obj) for i, obj in enumerate(jobsets) if i % 100 == 0])
            api.load(JOBSETS, jobsets)
            del jobsets
            api.start()
            try:
                kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
                for output in args.outputs.split(","):
                    api.requests.clear()
                    out = Path(tmp) / f"out-{output}"
                    seconds, rss, code = run_audit(kubeconfig, output, out)
                    lists = {kind.name: api.list_requests(kind) for kind in (*JUDGED_KINDS, *k.KINDS)}
                    rows.append((label, output, seconds, rss, code, lists, counted(output, out)))
                    print(f"  {label}, --output {output}: {seconds:.1f} s, peak RSS {rss:.0f} MiB", flush=True)
            finally:
                api.stop()

    print()
    print("| cluster | --output | wall time | peak RSS (child) | exit | list requests (JobSets/Workloads) | output |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for label, output, seconds, rss, code, lists, what in rows:
        requests = f"{lists['JobSets']}/{lists['Workloads']} (all kinds: {sum(lists.values())})"
        print(f"| {label} | {output} | {seconds:.1f} s | {rss:.0f} MiB | {code} | {requests} | {what} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
