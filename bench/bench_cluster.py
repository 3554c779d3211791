"""Cluster-aware admission at scale: latency, the cost of one watch event, memory per Workload, initial sync.

    .venv/bin/python bench/bench_cluster.py [--workloads 100000] [--queues 1000] [--nodes 5000]

Builds a cluster of ``--queues`` ClusterQueues (one LocalQueue each, cohorts of 100),
``--nodes`` Nodes (static tpu7x pools of 16/32/64 hosts plus CPU nodes) and
``--workloads`` Workloads (held, pending and finished; half guaranteed), serves it from
the test API server (tests/cluster_apiserver.py, real HTTP) and measures:

1. initial sync: ``start_watch_cache`` until every kind is synced (goal < 60 s);
2. memory per cached Workload: tracemalloc, the store's retained allocations after
   applying the Workloads, divided by their count (goal ≤ 1 KiB);
3. decision latency: ``decide()`` on a guaranteed one-slice RFC-0033 4.6 JobSet decoded
   from its JSON text (as the API server sends it) on ``/validate/production`` (admitted after every
   cluster-aware rule) against the full cache, compared with the same decision against
   the small RFC fixture cluster measured in the same run (goal ≤ 1.2×); once with the
   snapshot's memos warm (steady state), once right after a Workload event on the job's
   own ClusterQueue (what a busy cluster sees: a new snapshot, sharing the queue and node
   parts and their memos, publishing the ledger's new counts), and once with every part
   of the snapshot made again before each decision (the first request after a change to
   the queues and nodes);
4. the worst shape for node fit: the same job plus a CPU head (no nodeSelector) whose
   CPU request no node holds, so every node is a candidate and none fits; memos cold;
5. one watch event applied to the full cache (``store.apply``) and the next snapshot
   published (``store.snapshot()``, what the next request pays), median µs per event:
   Workloads added, modified (status only, and admitted) and deleted; a Node heartbeat;
   a ClusterQueue's status and its spec (goal < 1 ms each).

Prints one table; the ratio column is against the baseline measured in this run.
"""

from __future__ import annotations

import argparse
import copy
import gc
import itertools
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
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
from webhook.objects.jsontext import plain_json  # noqa: E402
from webhook.objects.sources import load_documents  # noqa: E402
from webhook.policy.config import Policy  # noqa: E402

TIER = "scheduling.antgroup.com/kueue-tier"
KQ = "kueue.x-k8s.io/v1beta2"
TOPOLOGIES = (("4x4x4", 16), ("4x4x8", 32), ("4x8x8", 64), ("8x8x8", 128))
POLICY = Policy()
#: the TPU flavors are topology-aware and tolerate the TPU taint, as RFC-0033's (tests/fixtures/cluster)
TPU_TOLERATION = {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}


def cluster_objects(queues: int, nodes: int) -> Iterator[tuple[k.Kind, dict[str, Any]]]:
    yield k.NAMESPACES, {"metadata": {"name": "kubemaker", "labels": {TIER: "production"}}}
    for topology, _ in TOPOLOGIES:
        labels = {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": topology}
        spec = {"nodeLabels": labels, "topologyName": "nodepool-topology", "tolerations": [TPU_TOLERATION]}
        yield k.RESOURCE_FLAVORS, {"metadata": {"name": f"tpu7x-{topology}"}, "spec": spec}
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


def pool_triples(nodes: int) -> int:
    """How many whole (4x4x4, 4x4x8, 4x8x8) triples of TPU node pools ``cluster_objects`` makes of ``nodes``."""
    return max(1, int(nodes * 0.95) // sum(hosts for _, hosts in TOPOLOGIES[:3]))


def placement(pool: int, hosts: int) -> dict[str, Any]:
    """A v1beta2 ``topologyAssignment`` of one slice: every host of node pool ``pool``."""
    return {
        "levels": ["cloud.google.com/gke-nodepool", "kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": hosts,
                "valuesPerLevel": [
                    {"universal": f"pool-{pool}"},
                    {"individual": {"prefix": f"gke-pool-{pool}-", "roots": [str(h) for h in range(hosts)]}},
                ],
            }
        ],
    }


def workload(i: int, queues: int, nodes: int = 5000) -> dict[str, Any]:
    """A Workload of ``team-NNNN``: held (placed on a node pool of its topology), pending or finished.

    Held Workloads far outnumber the pools at this scale, so every pool is held by some: the
    simulator's static placement is exercised in full (a job waits for a pool, or preempts to free one).
    """
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
                    "topologyAssignment": placement(i % 3 + 3 * (i // 3 % pool_triples(nodes)), hosts),
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


def one_slice_job(queue: str) -> dict[str, Any]:
    """The RFC-0033 4.6 static JobSet as a guaranteed job of one slice, sent to LocalQueue ``queue``."""
    job = load_jobset("rfc-4.6-static")
    set_path(job, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "guaranteed")
    set_path(job, 'metadata.labels["kueue.x-k8s.io/queue-name"]', queue)
    set_path(job, "spec.replicatedJobs[0].replicas", 1)
    return job


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


FACTS = AdmissionFacts(namespace="kubemaker", stage="validate", path_tier="production")


def latency(state: ClusterStore | None, obj: dict[str, Any], runs: int, before: Callable[[], None] | None) -> float:
    """Median seconds per decision of ``obj`` from its JSON text (decoded as the review decoder
    decodes it, in the timed part); ``before`` runs ahead of each one, untimed (a change to the state)."""
    text = json.dumps(obj).encode()
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        started = time.perf_counter()
        decide(plain_json(text), FACTS, POLICY, state)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def drop_memos(state: ClusterStore) -> Callable[[], None]:
    def drop() -> None:
        # every part of the next snapshot made again, as after a change to the queues and the nodes
        with state.lock:
            state._queues_changed = state._nodes_changed = state._counted_changed = True
            state.version += 1

    return drop


def churn_workload(queue: str, cluster_queue: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two states of a guaranteed Workload of ``queue`` that comes and goes: pending, and
    admitted to ``cluster_queue`` (then it is deleted)."""
    obj = workload(0, 1)
    obj["metadata"]["name"] = "jobset-churn-a1b2c"
    obj["spec"]["queueName"] = queue
    pending = copy.deepcopy(obj)
    pending["status"] = {"conditions": []}
    held = copy.deepcopy(obj)
    held["status"]["admission"]["clusterQueue"] = cluster_queue
    return pending, held


def workload_churn(state: ClusterStore, queue: str, cluster_queue: str) -> Callable[[], None]:
    """A guaranteed Workload of ``queue`` that comes and goes (pending, then admitted, then deleted)."""
    steps = iter(range(10**9))
    pending, held = churn_workload(queue, cluster_queue)

    def event() -> None:
        step = next(steps)
        current = (pending, held, pending)[step % 3]
        current["metadata"]["resourceVersion"] = f"churn-{step}"
        state.apply(k.WORKLOADS, "DELETED" if step % 3 == 2 else "MODIFIED", current)

    return event


def event_costs(state: ClusterStore, count: int, queues: int, node_count: int) -> list[tuple[str, float]]:
    """Median seconds of one ``store.apply`` per kind of event, ``count`` events each, state restored after."""

    def timed(events: list[tuple[k.Kind, str, dict[str, Any]]]) -> float:
        times = []
        for kind, event, obj in events:
            started = time.perf_counter()
            state.apply(kind, event, obj)
            state.snapshot()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    def version(obj: dict[str, Any], tag: str) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["metadata"]["resourceVersion"] = tag
        return out

    base = 10**7
    added = [workload(base + i * 5 + 1, queues) for i in range(count)]  # pending, half of them guaranteed
    for i, obj in enumerate(added):
        obj["metadata"]["resourceVersion"] = f"a{i}"
    rows = [("Workload ADDED (pending)", timed([(k.WORKLOADS, "ADDED", obj) for obj in added]))]
    touched = []
    for i, obj in enumerate(added):
        out = version(obj, f"s{i}")
        out["status"]["conditions"] = [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": f"waiting {i}"}
        ]
        touched.append(out)
    rows.append(("Workload MODIFIED, status only", timed([(k.WORKLOADS, "MODIFIED", obj) for obj in touched])))
    admitted = [version(workload(base + i * 5, queues), f"h{i}") for i in range(count)]  # held
    for obj, old in zip(admitted, added, strict=True):
        obj["metadata"]["name"] = old["metadata"]["name"]
    rows.append(("Workload MODIFIED, admitted", timed([(k.WORKLOADS, "MODIFIED", obj) for obj in admitted])))
    rows.append(("Workload DELETED", timed([(k.WORKLOADS, "DELETED", obj) for obj in admitted])))
    every_node = (obj for kind, obj in cluster_objects(queues, node_count) if kind is k.NODES)
    nodes = list(itertools.islice(every_node, count))  # the cache's own first nodes, unchanged but their status
    beats = []
    for i, node in enumerate(nodes):
        out = version(node, f"n{i}")
        out["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": f"2026-01-01T{i}"}]
        beats.append(out)
    rows.append(("Node MODIFIED, heartbeat", timed([(k.NODES, "MODIFIED", obj) for obj in beats])))
    queue_objects = [obj for kind, obj in cluster_objects(min(queues, count), 0) if kind is k.CLUSTER_QUEUES]
    usage = []
    for i, obj in enumerate(queue_objects):
        out = version(obj, f"q{i}")
        out["status"] = {"admittedWorkloads": i, "flavorsUsage": []}
        usage.append(out)
    rows.append(("ClusterQueue MODIFIED, status only", timed([(k.CLUSTER_QUEUES, "MODIFIED", obj) for obj in usage])))
    respec = []
    for i, obj in enumerate(queue_objects):
        out = version(obj, f"r{i}")
        out["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 320
        respec.append(out)
    rows.append(("ClusterQueue MODIFIED, spec", timed([(k.CLUSTER_QUEUES, "MODIFIED", obj) for obj in respec])))
    restore = [(k.CLUSTER_QUEUES, "MODIFIED", version(obj, f"o{i}")) for i, obj in enumerate(queue_objects)]
    restore += [(k.NODES, "MODIFIED", version(obj, f"m{i}")) for i, obj in enumerate(nodes)]
    timed(restore)
    return rows


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
    return retained / count, len(store.counted.entries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=2000, help="decisions per latency measurement")
    args = parser.parse_args()

    job = one_slice_job("team-0007-queue")
    fixture_job = one_slice_job("team-a-queue")
    small = state_from_objects([d.data for d in load_documents([str(FIXTURES / "cluster")])], POLICY)

    print(f"building {args.workloads} Workloads, {args.queues} ClusterQueues, {args.nodes} Nodes ...", flush=True)
    api = FakeApiServer()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, obj in cluster_objects(args.queues, args.nodes):
        by_kind.setdefault(kind.name, []).append(obj)
    for kind in k.KINDS:
        api.load(kind, by_kind.get(kind.name, []))
    api.load(k.WORKLOADS, (workload(i, args.queues, args.nodes) for i in range(args.workloads)))
    api.start()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
        started = time.perf_counter()
        cache = start_watch_cache(str(kubeconfig), POLICY, WatchSettings(watch_seconds=600))
        everything = frozenset(kind.name for kind in k.KINDS)
        while cache.snapshot().unavailable(everything):
            time.sleep(0.05)
        sync = time.perf_counter() - started
    print(f"synced in {sync:.1f}s; measuring latency ...", flush=True)
    assert len(cache.counted.entries) == args.workloads and len(cache.nodes) == args.nodes
    decision = decide(job, FACTS, POLICY, cache)
    rules = sorted({f.rule for f in decision.findings}) + decision.warnings
    assert decide(fixture_job, FACTS, POLICY, small).findings == [], "the fixture job is admitted"

    rows = []
    for label, before in (
        ("decision latency, memos warm", lambda state: None),
        ("decision latency, right after a Workload event on its queue", None),
        ("decision latency, memos cold", drop_memos),
    ):
        if before is None:
            base = latency(small, fixture_job, args.runs, workload_churn(small, "team-a-queue", "team-a"))
            full = latency(cache, job, args.runs, workload_churn(cache, "team-0007-queue", "team-0007"))
        else:
            base = latency(small, fixture_job, args.runs, before(small))
            full = latency(cache, job, args.runs, before(cache))
        rows.append((label, f"{base * 1e6:.0f} µs", f"{full * 1e6:.0f} µs", full / base, "≤ 1.2"))
    base = latency(small, with_cpu_head(fixture_job), args.runs, drop_memos(small))
    full = latency(cache, with_cpu_head(job), args.runs, drop_memos(cache))
    label = "CPU head fitting no node, memos cold"
    rows.append((label, f"{base * 1e6:.0f} µs", f"{full * 1e6:.0f} µs", full / base, "≤ 1.2"))
    structural = latency(None, fixture_job, args.runs, None)
    print("measuring one watch event's cost ...", flush=True)
    for label, seconds in event_costs(cache, min(args.runs, 2000), args.queues, args.nodes):
        rows.append((f"one event: {label}", "1000 µs", f"{seconds * 1e6:.1f} µs", seconds / 1e-3, "< 1.0"))
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
        f"structural rules only: {structural * 1e6:.0f} µs; findings and warnings on the big cluster: "
        f"{rules or 'none'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
