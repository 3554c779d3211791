"""Cluster-aware admission at scale: latency, memory per Workload, initial sync.

    .venv/bin/python bench/bench_cluster.py [--workloads 100000] [--queues 1000] [--nodes 5000]

Builds a cluster of ``--queues`` ClusterQueues (one LocalQueue each, cohorts of 100),
``--nodes`` Nodes (static tpu7x pools of 16/32/64 hosts plus CPU nodes) and
``--workloads`` Workloads (held, pending and finished; half guaranteed), serves it from
the test API server (tests/cluster_apiserver.py, real HTTP) and measures:

1. initial sync: ``start_watch_cache`` until every kind is synced (goal < 60 s);
2. memory per cached Workload: tracemalloc, the store's retained allocations after
   applying the Workloads, divided by their count (goal ≤ 1 KiB);
3. decision latency: ``decide()`` on the RFC-0033 4.6 job (guaranteed, so every
   cluster-aware rule runs) against the full cache, compared with the same decision
   against the small RFC fixture cluster measured in the same run (goal ≤ 1.2×); once
   with the store's memos warm (steady state) and once with them dropped before every
   decision (the first request after any change);
4. the worst shape for node fit: the same job plus a CPU head (no nodeSelector) whose
   CPU request no node holds, so every node is a candidate and none fits; memos cold.

Prints one table; the ratio column is against the baseline measured in this run.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from cluster_apiserver import FakeApiServer, write_kubeconfig  # noqa: E402
from support import FIXTURES, load_jobset, set_path  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402
from webhook.cluster.statefiles import state_from_objects  # noqa: E402
from webhook.cluster.store import ClusterStore  # noqa: E402
from webhook.cluster.watch import WatchSettings, start_watch_cache  # noqa: E402
from webhook.engine.decision import AdmissionFacts, decide  # noqa: E402
from webhook.objects.sources import load_documents  # noqa: E402
from webhook.policy.config import Policy  # noqa: E402

TIER = "scheduling.antgroup.com/kueue-tier"
KQ = "kueue.x-k8s.io/v1beta2"
TOPOLOGIES = (("4x4x4", 16), ("4x4x8", 32), ("4x8x8", 64), ("8x8x8", 128))
POLICY = Policy()


def cluster_objects(queues: int, nodes: int) -> Iterator[tuple[k.Kind, dict[str, Any]]]:
    yield k.NAMESPACES, {"metadata": {"name": "kubemaker", "labels": {TIER: "production"}}}
    for topology, _ in TOPOLOGIES:
        labels = {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": topology}
        yield k.RESOURCE_FLAVORS, {"metadata": {"name": f"tpu7x-{topology}"}, "spec": {"nodeLabels": labels}}
    yield k.RESOURCE_FLAVORS, {"metadata": {"name": "cpu-standard"}, "spec": {}}
    covered = ["google.com/tpu", "cpu", "memory", "ephemeral-storage"]
    for i in range(queues):
        if i % 100 == 0:
            yield k.COHORTS, {"metadata": {"name": f"pool-{i // 100}"}, "spec": {}}
        flavors = [
            {
                "name": f"tpu7x-{t}",
                "resources": [
                    {"name": "google.com/tpu", "nominalQuota": 256, "borrowingLimit": 128},
                    {"name": "cpu", "nominalQuota": "100000"},
                    {"name": "memory", "nominalQuota": "100000Gi"},
                    {"name": "ephemeral-storage", "nominalQuota": "100000Gi"},
                ],
            }
            for t, _ in TOPOLOGIES
        ]
        spec = {
            "cohortName": f"pool-{i // 100}",
            "namespaceSelector": {"matchLabels": {TIER: "production"}},
            "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
        }
        yield k.CLUSTER_QUEUES, {"metadata": {"name": f"team-{i:04}"}, "spec": spec}
        yield (
            k.LOCAL_QUEUES,
            {
                "metadata": {"name": f"team-{i:04}-queue", "namespace": "kubemaker"},
                "spec": {"clusterQueue": f"team-{i:04}"},
            },
        )
    made = 0
    pool = 0
    while made < nodes:
        topology, hosts = TOPOLOGIES[pool % 3]  # no 8x8x8 pools
        cpu_node = made >= nodes * 0.95
        for host in range(1 if cpu_node else hosts):
            if made >= nodes:
                break
            name = f"gke-pool-{pool}-{host}"
            labels = {"kubernetes.io/hostname": name, "cloud.google.com/gke-nodepool": f"pool-{pool}"}
            allocatable = {"cpu": "208", "memory": "720Gi", "ephemeral-storage": "200Gi", "pods": "110"}
            node_spec: dict[str, Any] = {}
            if not cpu_node:
                labels |= {
                    "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                    "cloud.google.com/gke-tpu-topology": topology,
                }
                allocatable["google.com/tpu"] = "4"
                node_spec["taints"] = [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]
            yield (
                k.NODES,
                {
                    "metadata": {"name": name, "labels": labels},
                    "spec": node_spec,
                    "status": {"allocatable": allocatable, "capacity": allocatable},
                },
            )
            made += 1
        pool += 1


def workload(i: int, queues: int) -> dict[str, Any]:
    team = f"team-{i % queues:04}"
    topology, hosts = TOPOLOGIES[i % 3]
    guaranteed = i % 2 == 0
    state = ("held", "pending", "finished", "held", "pending")[i % 5]
    pod = {
        "nodeSelector": {
            "cloud.google.com/gke-tpu-accelerator": "tpu7x",
            "cloud.google.com/gke-tpu-topology": topology,
        },
        "containers": [
            {
                "name": "jax",
                "image": "us-docker.pkg.dev/cloud-tpu-images/jax:latest",
                "resources": {
                    "requests": {"google.com/tpu": "4", "ephemeral-storage": "20Gi"},
                    "limits": {"google.com/tpu": "4"},
                },
            }
        ],
    }
    obj: dict[str, Any] = {
        "apiVersion": KQ,
        "kind": "Workload",
        "metadata": {
            "name": f"jobset-train-{i:06}-a1b2c",
            "namespace": "kubemaker",
            "uid": f"00000000-0000-0000-0000-{i:012}",
            "labels": {"kueue.x-k8s.io/job-uid": f"{i:012}"},
        },
        "spec": {
            "queueName": f"{team}-queue",
            "active": True,
            "priority": 1000 if guaranteed else 100,
            "priorityClassRef": {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "guaranteed" if guaranteed else "best-effort",
            },
            "podSets": [{"name": "workers", "count": hosts, "template": {"spec": pod}}],
        },
        "status": {"conditions": []},
    }
    if state in ("held", "finished"):
        obj["status"]["admission"] = {
            "clusterQueue": team,
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": hosts,
                    "flavors": {"google.com/tpu": f"tpu7x-{topology}"},
                    "resourceUsage": {"google.com/tpu": str(hosts * 4)},
                }
            ],
        }
        obj["status"]["conditions"].append(
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        )
    if state == "finished":
        obj["status"]["conditions"].append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "",
                "lastTransitionTime": "2026-01-02T00:00:00Z",
            }
        )
    return obj


def with_cpu_head(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` plus a one-pod CPU podSet without nodeSelector asking for more CPU than any node has."""
    out = copy.deepcopy(job)
    head = copy.deepcopy(out["spec"]["replicatedJobs"][0])
    head["name"], head["replicas"] = "coordinator", 1
    head["template"]["spec"]["parallelism"] = head["template"]["spec"]["completions"] = 1
    head["template"]["spec"]["template"] = {
        "spec": {"containers": [{"name": "head", "image": "python:3.12", "resources": {"requests": {"cpu": "300"}}}]}
    }
    out["spec"]["replicatedJobs"].append(head)
    return out


def latency(state: ClusterStore | None, obj: dict[str, Any], runs: int, cold: bool) -> float:
    """Median seconds per decision."""
    facts = AdmissionFacts(namespace="kubemaker", path_tier="production")
    times = []
    for _ in range(runs):
        if cold and state is not None:
            state.queue_generation += 1  # drops every memo, as any change to the queues does
        started = time.perf_counter()
        decide(obj, facts, POLICY, state)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def memory_per_workload(count: int, queues: int) -> tuple[float, float]:
    """Retained bytes per cached Workload (tracemalloc), and the same for a second store."""
    store = ClusterStore(POLICY)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    store.replace(k.WORKLOADS, (workload(i, queues) for i in range(count)))
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    retained = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return retained / count, len(store.workloads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=2000, help="decisions per latency measurement")
    args = parser.parse_args()

    job = load_jobset("rfc-4.6-static")
    set_path(job, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "guaranteed")
    set_path(job, 'metadata.labels["kueue.x-k8s.io/queue-name"]', "team-0007-queue")
    fixture_job = load_jobset("rfc-4.6-static")
    set_path(fixture_job, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "guaranteed")
    small = state_from_objects([d.data for d in load_documents([str(FIXTURES / "cluster")])], POLICY)

    print(f"building {args.workloads} Workloads, {args.queues} ClusterQueues, {args.nodes} Nodes ...", flush=True)
    api = FakeApiServer()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, obj in cluster_objects(args.queues, args.nodes):
        by_kind.setdefault(kind.name, []).append(obj)
    for kind in k.KINDS:
        api.load(kind, by_kind.get(kind.name, []))
    api.load(k.WORKLOADS, (workload(i, args.queues) for i in range(args.workloads)))
    api.start()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
        started = time.perf_counter()
        cache = start_watch_cache(str(kubeconfig), POLICY, WatchSettings(watch_seconds=600))
        everything = frozenset(kind.name for kind in k.KINDS)
        while cache.unavailable(everything):
            time.sleep(0.05)
        sync = time.perf_counter() - started
    print(f"synced in {sync:.1f}s; measuring latency ...", flush=True)
    assert len(cache.workloads) == args.workloads and len(cache.nodes) == args.nodes
    decision = decide(job, AdmissionFacts(namespace="kubemaker", path_tier="production"), POLICY, cache)
    rules = sorted({f.rule for f in decision.findings})

    def measure(state: ClusterStore, obj: dict[str, Any], cold: bool) -> float:
        return latency(state, obj, args.runs, cold)

    rows = []
    for label, cold in (("decision latency, memos warm", False), ("decision latency, memos cold", True)):
        base = measure(small, fixture_job, cold)
        full = measure(cache, job, cold)
        rows.append((label, f"{base * 1e6:.0f} µs", f"{full * 1e6:.0f} µs", full / base, "≤ 1.2"))
    base = measure(small, with_cpu_head(fixture_job), True)
    full = measure(cache, with_cpu_head(job), True)
    label = "CPU head fitting no node, memos cold"
    rows.append((label, f"{base * 1e6:.0f} µs", f"{full * 1e6:.0f} µs", full / base, "≤ 1.2"))
    structural = latency(None, fixture_job, args.runs, False)
    cache.stop()
    api.stop()
    del cache, api, by_kind
    gc.collect()

    print("measuring memory per Workload (tracemalloc) ...", flush=True)
    per_workload, _ = memory_per_workload(args.workloads, args.queues)
    rows.append(("memory per cached Workload", "1024 B", f"{per_workload:.0f} B", per_workload / 1024, "≤ 1.0"))
    rows.append((f"initial sync ({args.workloads} Workloads)", "60 s", f"{sync:.1f} s", sync / 60, "< 1.0"))

    print()
    print("| measure | baseline | this cluster | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    for label, base_text, full_text, ratio, goal in rows:
        print(f"| {label} | {base_text} | {full_text} | {ratio:.2f} | {goal} |")
    print()
    print(
        f"baseline: the same decision against tests/fixtures/cluster (a dozen objects); "
        f"structural rules only: {structural * 1e6:.0f} µs; findings on the big cluster: {rules or 'none'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
