"""``/validate`` latency while the cluster changes and advisor calls load the same server, side by side.

    .venv/bin/python bench/admission_first.py [--workloads 20000] [--queues 200] [--nodes 1000]
        [--seconds 15] [--advisors 50] [--rounds 1] [--against TREE]

The test API server (tests/cluster_apiserver.py) holds bench/bench_cluster.py's cluster
with ``--workloads`` Workloads; ``serve --kubeconfig`` watches it (and, with ``--against
TREE``, that source tree's webhook beside it: ``git worktree add /tmp/before <commit>``).
Each server in turn, once synced, is probed on ``/validate/production`` with a guaranteed
one-slice JobSet (admitted; its ``[simulate]`` line is on, the default) every 20 ms over
one keep-alive TLS connection, for ``--seconds`` in each of three phases:

- quiet: nothing else;
- events: one Workload event a second (a Workload pending, then admitted, then deleted);
- events + advisors: the same, and ``--advisors`` clients calling ``POST /simulate`` on
  the same server back to back (each on its own keep-alive connection).

Prints p50, p99 and max per phase and the ratio of each loaded p99 to the quiet p99 of
the same server in the same round (the goal: events + advisors within 2x), median over
rounds. The machine is shared and small: read the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import one_slice_job, workload  # noqa: E402
from cluster_apiserver import FakeApiServer, write_kubeconfig  # noqa: E402
from common import (  # noqa: E402  # noqa: E402
    Server,
    client_context,
    dumps,
    make_certs,
    percentile,
    review_around,
    webhook_from,
    webhook_server,
    workspace,
)
from served_cluster import big_api  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402

VALIDATE = "/validate/production"
SIMULATE = "/simulate"
PROBE_EVERY = 0.02
PHASES = ("quiet", "events", "events + advisors")


class Connection:
    """One keep-alive TLS connection, opened again if the server closed it."""

    def __init__(self, server: Server, timeout: float = 60.0) -> None:
        self.server, self.timeout = server, timeout
        self.context = client_context(server.ca)
        self.http: http.client.HTTPSConnection | None = None

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in range(2):
            if self.http is None:
                self.http = http.client.HTTPSConnection(
                    "127.0.0.1", self.server.port, context=self.context, timeout=self.timeout
                )
            try:
                self.http.request("POST", path, body, {"Content-Type": "application/json"})
                response = self.http.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.http is not None:
            self.http.close()
            self.http = None


def events(api: FakeApiServer, queue: str, cluster_queue: str, stop: threading.Event) -> None:
    """One Workload event a second until ``stop``: pending, then admitted, then deleted."""
    obj = workload(0, 1)
    obj["metadata"]["name"] = "jobset-churn-a1b2c"
    obj["spec"]["queueName"] = queue
    pending = copy.deepcopy(obj)
    pending["status"] = {"conditions": []}
    held = copy.deepcopy(obj)
    held["status"]["admission"]["clusterQueue"] = cluster_queue
    step = 0
    while not stop.wait(1.0):
        if step % 3 == 2:
            api.delete(k.WORKLOADS, obj["metadata"]["name"], obj["metadata"]["namespace"])
        else:
            api.put(k.WORKLOADS, (pending, held)[step % 3])
        step += 1


def advisor(server: Server, body: bytes, stop: threading.Event, answered: list[int]) -> None:
    """``POST /simulate`` back to back until ``stop``; each answer's status into ``answered``."""
    connection = Connection(server)
    try:
        while not stop.is_set():
            status, _ = connection.post(SIMULATE, body)
            answered.append(status)
    except (OSError, http.client.HTTPException):
        pass
    finally:
        connection.close()


def probe(server: Server, body: bytes, seconds: float) -> list[float]:
    """``/validate`` latencies (seconds), one request every ``PROBE_EVERY``."""
    connection = Connection(server)
    latencies = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            status, _ = connection.post(VALIDATE, body)
            took = time.perf_counter() - started
            if status != 200:
                raise RuntimeError(f"{server.name} answered {status} on {VALIDATE}")
            latencies.append(took)
            time.sleep(max(0.0, PROBE_EVERY - took))
    finally:
        connection.close()
    return latencies


def phase(
    server: Server, api: FakeApiServer, body: bytes, advice: bytes, name: str, args: argparse.Namespace
) -> tuple[list[float], dict[int, int]]:
    stop = threading.Event()
    threads: list[threading.Thread] = []
    answered: list[int] = []
    if name != "quiet":
        threads.append(threading.Thread(target=events, args=(api, QUEUE, CLUSTER_QUEUE, stop), daemon=True))
    if name == "events + advisors":
        for _ in range(args.advisors):
            threads.append(threading.Thread(target=advisor, args=(server, advice, stop, answered), daemon=True))
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0 if threads else 0.0)  # the load under way before the first probe
        latencies = probe(server, body, args.seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    statuses: dict[int, int] = {}
    for status in answered:
        statuses[status] = statuses.get(status, 0) + 1
    return latencies, statuses


QUEUE = "team-0007-queue"
CLUSTER_QUEUE = "team-0007"


def wait_synced(server: Server, body: bytes, timeout: float = 600.0) -> None:
    connection = Connection(server, timeout=10)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                status, raw = connection.post(VALIDATE, body)
                answer: dict[str, Any] = json.loads(raw)["response"] if status == 200 else {}
            except (OSError, ValueError, KeyError, http.client.HTTPException):
                answer = {}
            warnings = answer.get("warnings") or []
            if answer.get("allowed") and all(w.startswith("[simulate]") for w in warnings):
                return
            time.sleep(0.5)
    finally:
        connection.close()
    raise RuntimeError(f"{server.name} did not sync within {timeout:.0f}s")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of probing per phase")
    parser.add_argument("--advisors", type=int, default=50, help="concurrent POST /simulate clients")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", type=Path, help="another source tree's webhook, beside this one")
    args = parser.parse_args()
    body = dumps(review_around(one_slice_job(QUEUE), namespace="kubemaker"))
    advised = one_slice_job(QUEUE)
    advised["metadata"].update(name="advice", namespace="kubemaker")
    advice = dumps(advised)
    print(f"building {args.workloads:,} Workloads, {args.queues} ClusterQueues, {args.nodes} Nodes ...", flush=True)
    api = big_api(args.workloads, args.queues, args.nodes).start()
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.against is not None:
        trees.append((str(args.against), args.against.resolve()))
    #: (server, phase) -> per round (latencies, advisor answers by status)
    results: dict[tuple[str, str], list[tuple[list[float], dict[int, int]]]] = {}
    with workspace() as work, tempfile.TemporaryDirectory() as tmp:
        certs = work / "certs"
        make_certs(certs)
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
        servers: dict[str, Server] = {}
        try:
            for number, (label, tree) in enumerate(trees):
                extra = ["--kubeconfig", str(kubeconfig)]
                if tree is None:
                    servers[label] = webhook_server(certs, work, extra=extra, name=f"first{number}")
                else:
                    servers[label] = webhook_from(tree, certs, work, f"first{number}", extra=extra)
                servers[label].start(timeout=120)
            for server in servers.values():
                wait_synced(server, body)
            for round_number in range(args.rounds):
                for label, server in servers.items():
                    for name in PHASES:
                        print(f"round {round_number + 1}: {label}, {name} ...", flush=True)
                        results.setdefault((label, name), []).append(phase(server, api, body, advice, name, args))
        finally:
            for server in servers.values():
                server.stop()
            api.stop()
    print()
    print(
        f"{args.workloads:,} Workloads; /validate probed every {PROBE_EVERY * 1000:.0f} ms for {args.seconds:.0f} s "
        f"per phase; {args.advisors} advisor clients; median over {args.rounds} round(s)"
    )
    print()
    print("| server | phase | requests | p50 ms | p99 ms | max ms | p99 / quiet p99 | advisor answers (last round) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, _ in trees:
        quiet = [percentile(latencies, 99) for latencies, _ in results[(label, "quiet")]]
        for name in PHASES:
            runs = results[(label, name)]
            p50 = statistics.median(percentile(latencies, 50) for latencies, _ in runs)
            p99s = [percentile(latencies, 99) for latencies, _ in runs]
            top = statistics.median(max(latencies) for latencies, _ in runs)
            ratio = statistics.median(p / q for p, q in zip(p99s, quiet, strict=True))
            count = statistics.median(len(latencies) for latencies, _ in runs)
            answers = ", ".join(f"{n}×{status}" for status, n in sorted(runs[-1][1].items())) or "-"
            row = f"| {label} | {name} | {count:.0f} | {ms(p50)} | {ms(statistics.median(p99s))} | {ms(top)} |"
            print(f"{row} {ratio:.2f} | {answers} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
