"""The simulator through the cluster snapshot at scale: cost per job, steady and after a Workload event.

    .venv/bin/python bench/simulate_live.py [--workloads 100000] [--queues 1000] [--nodes 5000] [--runs 300]

Builds bench/bench_cluster.py's cluster (``--queues`` ClusterQueues in cohorts of 100,
``--nodes`` Nodes, ``--workloads`` Workloads held, pending and finished) and puts its
cohorts in a tree (``pool-N`` under ``region-M``, five pools a region, under ``root``),
with the fixture cluster's WorkloadPriorityClasses, into a store as a synced watch
holds them. Then, per job (the guaranteed one-slice RFC-0033 4.6 JobSet
sent to LocalQueue ``team-NNNN-queue``, a different queue each run), median and p99 of:

1. **steady**: ``simulate_object`` on the snapshot's simulator (state, tree and the
   queues' parts already built by earlier runs; no answer memoized: the engine runs);
2. **after a Workload event**: one Workload of the job's ClusterQueue modified (its
   priority) and the next snapshot published before each run; the time counts the
   simulator made for that snapshot (its state, from the snapshot's counters, the cohort
   tree, the parts of the queues the attempt reads, shared with the previous snapshot's
   where unchanged) and the answer;
3. **the [simulate] line** in ``decide`` on ``/validate/production`` (the rules and the
   line, answers memoized per snapshot and job shape, steady);
4. **a busy queue**: a small CPU job (a Workload of priority 1500, created now) that fits
   now, behind ``--ahead`` pending Workloads of priority 2000 in its ClusterQueue (another
   queue each run, none of those of rows 1–3): ``--fitting`` of them small CPU ones that fit
   and go first, the rest TPU ones of four shapes beyond the queue's potential, which never
   can. The whole queue in front is worked out (the queue's parts built on its first read,
   as in row 1).

Also prints the first simulator's build on the fresh snapshot, and the outcomes seen.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import KQ, cluster_objects, one_slice_job, workload  # noqa: E402
from support import FIXTURES  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402
from webhook.cluster.store import ClusterStore  # noqa: E402
from webhook.engine.decision import AdmissionFacts, decide  # noqa: E402
from webhook.kueue.workload import submitted_workload  # noqa: E402
from webhook.objects.sources import load_documents  # noqa: E402
from webhook.policy.config import Policy  # noqa: E402
from webhook.simulate.live import LiveSimulator, live, simulate_object  # noqa: E402

POLICY = Policy()
TPU = POLICY.tpu.resource_name


def cohort_tree(queues: int) -> list[dict[str, Any]]:
    """Cohort objects: ``pool-N`` (the ClusterQueues' cohorts) under ``region-M`` under ``root``."""
    pools = (queues + 99) // 100
    out = [{"apiVersion": KQ, "kind": "Cohort", "metadata": {"name": "root"}, "spec": {}}]
    for region in range((pools + 4) // 5):
        out.append(
            {
                "apiVersion": KQ,
                "kind": "Cohort",
                "metadata": {"name": f"region-{region}"},
                "spec": {"parentName": "root"},
            }
        )
    for pool in range(pools):
        out.append(
            {
                "apiVersion": KQ,
                "kind": "Cohort",
                "metadata": {"name": f"pool-{pool}"},
                "spec": {"parentName": f"region-{pool // 5}"},
            }
        )
    return out


#: the TPU shapes of a busy queue's Workloads ahead: (topology, hosts), each beyond 256 + 128 chips
BEYOND: tuple[tuple[str, int], ...] = (("4x4x4", 128), ("4x4x8", 160), ("4x8x8", 192), ("8x8x8", 256))


def pending_workload(
    name: str, queue: str, priority: int, requests: dict[str, str], count: int, created: str, topology: str = ""
) -> dict[str, Any]:
    """A pending Workload of LocalQueue ``queue`` in kubemaker: one podSet of ``count`` pods of ``requests``."""
    pod: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if topology:
        pod["nodeSelector"] = {
            "cloud.google.com/gke-tpu-accelerator": "tpu7x",
            "cloud.google.com/gke-tpu-topology": topology,
        }
    return {
        "apiVersion": KQ,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "kubemaker", "uid": name, "creationTimestamp": created},
        "spec": {
            "queueName": queue,
            "priority": priority,
            "active": True,
            "podSets": [{"name": "main", "count": count, "template": {"spec": pod}}],
        },
        "status": {"conditions": []},
    }


def busy_queue(queue: str, ahead: int, fitting: int) -> list[dict[str, Any]]:
    """``ahead`` Workloads waiting in front of any job of priority below 2000 in LocalQueue ``queue``."""
    out = []
    for i in range(ahead):
        created = f"2020-01-01T00:{i // 60 % 60:02}:{i % 60:02}Z"
        name = f"{queue}-ahead-{i:05}"
        if i < fitting:
            out.append(pending_workload(name, queue, 2000, {"cpu": str(1 + i % 2)}, 1, created))
        else:
            topology, hosts = BEYOND[i % len(BEYOND)]
            out.append(pending_workload(name, queue, 2000, {"google.com/tpu": "4"}, hosts, created, topology))
    return out


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed(runs: int, before: Callable[[int], None], action: Callable[[int], Any]) -> list[float]:
    out = []
    for i in range(runs):
        before(i)
        started = time.perf_counter()
        action(i)
        out.append((time.perf_counter() - started) * 1e3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--ahead", type=int, default=400, help="Workloads ahead of the busy queue's job")
    parser.add_argument("--fitting", type=int, default=40, help="of those, how many fit and go first")
    args = parser.parse_args()

    print(f"building {args.workloads:,} Workloads, {args.queues:,} ClusterQueues, {args.nodes:,} Nodes ...", flush=True)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, obj in cluster_objects(args.queues, args.nodes):
        by_kind.setdefault(kind.name, []).append(obj)
    by_kind.setdefault(k.COHORTS.name, []).extend(cohort_tree(args.queues))
    held = [workload(i, args.queues, args.nodes) for i in range(args.workloads)]
    busy = [f"team-{(i + args.queues // 2) % args.queues:04}-queue" for i in range(args.runs)]
    by_kind[k.WORKLOADS.name] = held + [w for queue in busy for w in busy_queue(queue, args.ahead, args.fitting)]
    store = ClusterStore(POLICY)
    for kind in k.KINDS:  # as a synced watch holds them
        store.replace(kind, by_kind.get(kind.name, []), atomic=False)
        store.availability.mark_synced(kind.name)
    store.replace(
        k.WORKLOAD_PRIORITY_CLASSES,
        [d.data for d in load_documents([str(FIXTURES / "cluster")]) if d.data["kind"] == "WorkloadPriorityClass"],
    )
    jobs = [one_slice_job(f"team-{i % args.queues:04}-queue") for i in range(args.runs)]
    for job in jobs:
        job["metadata"]["namespace"] = "kubemaker"

    snapshot = store.snapshot()
    started = time.perf_counter()
    simulator = live(snapshot, POLICY)
    first_build = (time.perf_counter() - started) * 1e3
    outcomes: Counter[str] = Counter()

    def steady(i: int) -> None:
        outcomes[simulate_object(simulator, jobs[i]).outcome] += 1

    simulator_now: list[LiveSimulator] = [simulator]
    # a Workload of the run's ClusterQueue (held ones are i % 5 in (0, 3)), modified before each run
    changed = [copy.deepcopy(held[(i % args.queues) + 0 * args.queues]) for i in range(args.runs)]

    def event(i: int) -> None:
        obj = changed[i]
        obj["spec"]["priority"] = obj["spec"]["priority"] + 1
        store.apply(k.WORKLOADS, "MODIFIED", obj)

    def after_event(i: int) -> None:
        simulator_now[0] = live(store.snapshot(), POLICY)
        simulate_object(simulator_now[0], jobs[i])

    def nothing(i: int) -> None:
        return None

    timed(20, nothing, steady)  # warm-up: the first queues' parts
    steady_ms = timed(args.runs, nothing, steady)
    event_ms = timed(args.runs, event, after_event)

    bodies = [json.loads(json.dumps(job)) for job in jobs]  # as the review decoder hands them on
    facts = AdmissionFacts(operation="CREATE", stage="validate", namespace="kubemaker", kind="JobSet")
    lines: Counter[str] = Counter()

    def with_line(i: int) -> None:
        decision = decide(bodies[i], facts, POLICY, store)
        lines[next((w.split(":")[0] for w in decision.warnings if w.startswith("[simulate]")), "no line")] += 1

    timed(args.runs, nothing, with_line)  # warm: the rules' and the line's memos for this snapshot
    line_ms = timed(args.runs, nothing, with_line)

    busy_jobs = [
        submitted_workload(pending_workload(f"small-{i}", queue, 1500, {"cpu": "1"}, 1, "2030-01-01T00:00:00Z"), TPU)
        for i, queue in enumerate(busy)
    ]
    busy_simulator = live(store.snapshot(), POLICY)
    busy_outcomes: Counter[str] = Counter()

    def behind(i: int) -> None:
        result = busy_simulator.simulate(busy_jobs[i])
        busy_outcomes[f"{result.outcome}, {result.position.ahead} ahead"] += 1

    busy_ms = timed(args.runs, nothing, behind)

    print()
    print(f"first simulator on a fresh snapshot: {first_build:.1f} ms")
    print(f"busy queue outcomes: {dict(busy_outcomes)}")
    print(f"outcomes (steady): {dict(outcomes)}; webhook lines: {dict(lines)}")
    print()
    print("| per job | median ms | p99 ms |")
    print("| --- | ---: | ---: |")
    for label, samples in (
        ("simulate, steady", steady_ms),
        ("simulate, after a Workload event (new snapshot)", event_ms),
        ("decide on /validate/production with the [simulate] line", line_ms),
        (f"simulate, a busy queue ({args.ahead} ahead, {args.fitting} go first)", busy_ms),
    ):
        median, p99 = percentiles(samples)
        print(f"| {label} | {median:.3f} | {p99:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
