"""What one simulated scheduling attempt costs against a big, full cluster (the engine alone).

    python bench/simulate_engine.py [--cohorts 10] [--queues 100] [--rounds 30]

Builds RFC-0033-shaped state objects in memory: ``--cohorts`` cohorts under one root, each
with ``--queues`` ClusterQueues of 256 tpu7x chips (borrowingLimit 128); every other queue
borrows its full 128 and its neighbour lends it, so the tree is full: 192 or 64 Workloads
of 2 chips each per queue, priorities mixed (best-effort 100, guaranteed 1000). Then, with
fair sharing off and on, it times:

- the state read from the objects (``state_from_objects``) and the tree (``Simulator``);
- per job, median and slowest of ``--rounds``: a guaranteed 128-chip job within its
  queue's nominal (``preempt``: 64 best-effort victims, the heaviest ordinary case), the
  same as best-effort (``wait``: no victim Kueue would take), 1,000 chips (``never``),
  and a 4-chip job on a queue with room (``admit``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from simulate_builders import from_document, state_from_objects  # noqa: E402

from webhook.simulate.engine import Simulator  # noqa: E402

TPU = "google.com/tpu"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def objects(cohorts: int, queues: int, roomy: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"kind": "ResourceFlavor", "metadata": {"name": "tpu7x"}},
        {"kind": "Cohort", "metadata": {"name": "root"}, "spec": {}},
    ]
    rnd = random.Random(1)
    for c in range(cohorts):
        out.append({"kind": "Cohort", "metadata": {"name": f"c{c}"}, "spec": {"parentName": "root"}})
        for q in range(queues):
            name = f"q{c}-{q}"
            out.append(
                {
                    "kind": "ClusterQueue",
                    "metadata": {"name": name},
                    "spec": {
                        "cohortName": f"c{c}",
                        "namespaceSelector": {},
                        "resourceGroups": [
                            {
                                "coveredResources": [TPU],
                                "flavors": [
                                    {
                                        "name": "tpu7x",
                                        "resources": [{"name": TPU, "nominalQuota": 256, "borrowingLimit": 128}],
                                    }
                                ],
                            }
                        ],
                        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"},
                    },
                }
            )
            out.append(
                {"kind": "LocalQueue", "metadata": {"name": name, "namespace": "ns"}, "spec": {"clusterQueue": name}}
            )
            count = 192 if q % 2 else (32 if roomy and q == 0 else 64)
            for i in range(count):
                usage = {TPU: "2"}
                out.append(
                    {
                        "kind": "Workload",
                        "metadata": {"name": f"w{c}-{q}-{i}", "namespace": "ns", "uid": f"w{c}-{q}-{i}"},
                        "spec": {"queueName": name, "priority": rnd.choice([100, 1000])},
                        "status": {
                            "admission": {
                                "clusterQueue": name,
                                "podSetAssignments": [
                                    {"name": "main", "flavors": {TPU: "tpu7x"}, "resourceUsage": usage}
                                ],
                            },
                            "conditions": [
                                {
                                    "type": "QuotaReserved",
                                    "status": "True",
                                    "lastTransitionTime": _stamp(NOW + timedelta(seconds=i)),
                                }
                            ],
                        },
                    }
                )
    return out


def job(chips: int, priority: int) -> Any:
    pod = {"containers": [{"name": "c", "resources": {"requests": {TPU: "4"}}}]}
    doc = {
        "kind": "Workload",
        "metadata": {
            "name": "in",
            "namespace": "ns",
            "uid": "in",
            "creationTimestamp": _stamp(NOW + timedelta(hours=2)),
        },
        "spec": {
            "queueName": "q0-0",
            "priority": priority,
            "podSets": [{"name": "main", "count": chips // 4, "template": {"spec": pod}}],
        },
    }
    return from_document(doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    print("| fair sharing | Workloads | read (s) | tree (s) | case | outcome | victims | median (ms) | slowest (ms) |")
    print("| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |")
    for fair in (False, True):
        for roomy in (False, True):
            docs = objects(args.cohorts, args.queues, roomy)
            config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "fairSharing": {}} if fair else None
            started = time.perf_counter()
            state = state_from_objects(docs, configuration=config, now=NOW + timedelta(hours=3))
            read = time.perf_counter() - started
            started = time.perf_counter()
            simulator = Simulator(state)
            tree = time.perf_counter() - started
            cases = (
                [("admit", 4, 1000)] if roomy else [("preempt", 128, 1000), ("wait", 128, 100), ("never", 1000, 100)]
            )
            for label, chips, priority in cases:
                times = []
                for _ in range(args.rounds):
                    incoming = job(chips, priority)
                    started = time.perf_counter()
                    result = simulator.simulate(incoming)
                    times.append(time.perf_counter() - started)
                print(
                    f"| {'on' if fair else 'off'} | {len(state.admitted):,} | {read:.1f} | {tree:.1f} | {label} | "
                    f"{result.outcome} | {len(result.preemptions)} | {statistics.median(times) * 1000:.1f} | "
                    f"{max(times) * 1000:.1f} |"
                )


if __name__ == "__main__":
    main()
