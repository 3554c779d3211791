"""``check --cluster-state`` on a big state file: the time to read it, and to check one job against it.

    .venv/bin/python bench/state_load.py [--workloads 100000] [--queues 1000] [--nodes 5000] [--rounds 3]

Writes the cluster of ``bench/bench_cluster.py`` (``--queues`` ClusterQueues with a
LocalQueue each, ``--nodes`` Nodes, ``--workloads`` Workloads) as one typed list per kind,
as ``tpu-admission snapshot`` writes it, once as JSON and once as YAML, then times
``tpu-admission check JOB --cluster-state FILE`` on each (a fresh process per round, the
median printed). The goal for the JSON of 100,000 Workloads (about 87 MB) is 5 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import cluster_objects, one_slice_job, workload  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402


def state_lists(workloads: int, queues: int, nodes: int) -> list[dict[str, Any]]:
    """One typed list per kind, as ``snapshot`` writes them (each item with its apiVersion and kind)."""
    by_kind: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    kinds = {kind.name: kind for kind in k.KINDS}
    for kind, obj in cluster_objects(queues, nodes):
        by_kind[kind.name].append({"apiVersion": kind.api_version, "kind": kind.kind, **obj})
    by_kind[k.WORKLOADS.name] = [workload(i, queues, nodes) for i in range(workloads)]
    return [
        {"apiVersion": kinds[name].api_version, "kind": f"{kinds[name].kind}List", "items": items}
        for name, items in by_kind.items()
    ]


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tpu-admission-state-") as work:
        directory = Path(args.keep or work)
        directory.mkdir(parents=True, exist_ok=True)
        lists = state_lists(args.workloads, args.queues, args.nodes)
        job = directory / "job.yaml"
        job.write_text(yaml.safe_dump(one_slice_job("team-0000-queue"), sort_keys=False))
        files = {"JSON": directory / "state.json", "YAML": directory / "state.yaml"}
        files["JSON"].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": lists}))
        # through JSON, so no object is shared: the YAML has no anchors, as snapshot's has none
        plain = json.loads(files["JSON"].read_text())["items"]
        files["YAML"].write_text(yaml.dump_all(plain, Dumper=yaml.CSafeDumper, sort_keys=False))
        del plain
        del lists
        print(f"## `check --cluster-state` on {args.workloads} Workloads ({args.rounds} rounds)\n")
        print("| state file | MB | median s | per round |")
        print("| --- | ---: | ---: | --- |")
        for label, path in files.items():
            argv = [sys.executable, "-m", "webhook", "check", str(job), "--cluster-state", str(path)]
            times = [timed(argv) for _ in range(args.rounds)]
            size = path.stat().st_size / 1e6
            rounds = ", ".join(f"{t:.1f}" for t in times)
            print(f"| {label} | {size:.0f} | {statistics.median(times):.1f} | {rounds} |")


if __name__ == "__main__":
    main()
