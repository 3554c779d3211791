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
- events + advisors: the same, and ``--advisors`` clients asking for a simulation back to
  back (each on its own keep-alive connection).

The advisor is its own process, ``serve-advisor``, watching the same API server: it is
called as the API server's aggregation layer calls it, with the front-proxy client
certificate (of a requestheader CA made here) and ``X-Remote-User``, on
``POST /apis/advisor.tpu-admission.antgroup.com/v1alpha1/namespaces/kubemaker/simulations``;
the test API server grants that user ``create simulations`` there. A tree without
``serve-advisor`` (before the advisor moved out) is called on its webhook's own
``POST /simulate``, as it served it. Answers of ``429`` are the advisor's bounded queue
doing its job; they are counted, and the client waits out their ``Retry-After`` before asking
again, as client-go does.

Prints p50, p99 and max per phase and the ratio of each loaded p99 to the quiet p99 of
the same server in the same round (the goal: events + advisors within 2x), median over
rounds. The machine is shared and small: read the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import churn_workload, one_slice_job  # noqa: E402
from cluster_apiserver import FakeApiServer, write_kubeconfig  # noqa: E402
from common import (  # noqa: E402
    ADVISOR_BASE,
    ADVISOR_USER,
    Server,
    advisor_context,
    advisor_server,
    client_context,
    dumps,
    has_advisor,
    make_certs,
    make_front_proxy,
    percentile,
    review_around,
    webhook_from,
    webhook_server,
    workspace,
)
from served_cluster import big_api  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402

VALIDATE = "/validate/production"
SIMULATIONS = f"{ADVISOR_BASE}/namespaces/kubemaker/simulations"
OLD_SIMULATE = "/simulate"  # the webhook's own route, in trees before the advisor's process
PROBE_EVERY = 0.02
PHASES = ("quiet", "events", "events + advisors")


class Connection:
    """One keep-alive TLS connection, opened again if the server closed it."""

    def __init__(
        self,
        server: Server,
        timeout: float = 60.0,
        context: ssl.SSLContext | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.server, self.timeout = server, timeout
        self.context = context or client_context(server.ca)
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self.http: http.client.HTTPSConnection | None = None
        #: the last answer's Retry-After, in seconds (0 when it gave none)
        self.retry_after = 0.0

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in range(2):
            if self.http is None:
                self.http = http.client.HTTPSConnection(
                    "127.0.0.1", self.server.port, context=self.context, timeout=self.timeout
                )
            try:
                self.http.request("POST", path, body, self.headers)
                response = self.http.getresponse()
                retry = response.getheader("Retry-After") or ""
                self.retry_after = float(retry) if retry.replace(".", "", 1).isdigit() else 0.0
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
    pending, held = churn_workload(queue, cluster_queue)
    step = 0
    while not stop.wait(1.0):
        if step % 3 == 2:
            api.delete(k.WORKLOADS, held["metadata"]["name"], held["metadata"]["namespace"])
        else:
            api.put(k.WORKLOADS, (pending, held)[step % 3])
        step += 1


@dataclass(frozen=True)
class Advice:
    """Where a simulation is asked for: the advisor's process with the front-proxy certificate,
    or an older tree's webhook on its own route."""

    server: Server
    path: str
    context: ssl.SSLContext
    headers: dict[str, str]

    def connection(self, timeout: float = 60.0) -> Connection:
        return Connection(self.server, timeout, self.context, self.headers)


def advisor(advice: Advice, body: bytes, stop: threading.Event, answered: list[int]) -> None:
    """Simulations back to back until ``stop``; each answer's status into ``answered``. A
    ``429`` is waited out for its ``Retry-After``, as client-go and kubectl do."""
    connection = advice.connection()
    try:
        while not stop.is_set():
            status, _ = connection.post(advice.path, body)
            answered.append(status)
            if status == 429:
                stop.wait(min(connection.retry_after, 5.0) or 1.0)
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
    server: Server, advice: Advice, api: FakeApiServer, body: bytes, asked: bytes, name: str, args: argparse.Namespace
) -> tuple[list[float], dict[int, int]]:
    stop = threading.Event()
    threads: list[threading.Thread] = []
    answered: list[int] = []
    if name != "quiet":
        threads.append(threading.Thread(target=events, args=(api, QUEUE, CLUSTER_QUEUE, stop), daemon=True))
    if name == "events + advisors":
        for _ in range(args.advisors):
            threads.append(threading.Thread(target=advisor, args=(advice, asked, stop, answered), daemon=True))
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


def wait_advised(advice: Advice, body: bytes, timeout: float = 600.0) -> None:
    """Until a simulation is answered 200 (the advisor synced and RBAC's answer read)."""
    connection = advice.connection(timeout=30)
    deadline = time.monotonic() + timeout
    status = 0
    try:
        while time.monotonic() < deadline:
            try:
                status, _ = connection.post(advice.path, body)
            except (OSError, http.client.HTTPException):
                status = 0
            if status == 200:
                return
            time.sleep(0.5)
    finally:
        connection.close()
    raise RuntimeError(f"{advice.server.name} answered {status} on {advice.path} for {timeout:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of probing per phase")
    parser.add_argument("--advisors", type=int, default=50, help="concurrent clients asking for simulations")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", type=Path, help="another source tree's webhook, beside this one")
    args = parser.parse_args()
    body = dumps(review_around(one_slice_job(QUEUE), namespace="kubemaker"))
    advised = one_slice_job(QUEUE)
    advised["metadata"].update(name="advice", namespace="kubemaker")
    asked = dumps(advised)
    print(f"building {args.workloads:,} Workloads, {args.queues} ClusterQueues, {args.nodes} Nodes ...", flush=True)
    api = big_api(args.workloads, args.queues, args.nodes).start()
    api.grants.add((ADVISOR_USER, "create", "simulations", "kubemaker"))
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.against is not None:
        trees.append((str(args.against), args.against.resolve()))
    #: (server, phase) -> per round (latencies, advisor answers by status)
    results: dict[tuple[str, str], list[tuple[list[float], dict[int, int]]]] = {}
    with workspace() as work, tempfile.TemporaryDirectory() as tmp:
        certs = work / "certs"
        make_certs(certs)
        front = make_front_proxy(work / "front-proxy")
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
        servers: dict[str, Server] = {}
        advices: dict[str, Advice] = {}
        started: list[Server] = []
        try:
            for number, (label, tree) in enumerate(trees):
                extra = ["--kubeconfig", str(kubeconfig)]
                if tree is None:
                    servers[label] = webhook_server(certs, work, extra=extra, name=f"first{number}")
                else:
                    servers[label] = webhook_from(tree, certs, work, f"first{number}", extra=extra)
                started.append(servers[label].start(timeout=120))
                if has_advisor(tree):
                    aside = advisor_server(certs, work, front, extra=extra, name=f"advisor{number}", tree=tree)
                    started.append(aside.start(timeout=120))
                    context = advisor_context(aside, front)
                    advices[label] = Advice(aside, SIMULATIONS, context, {"X-Remote-User": ADVISOR_USER})
                else:
                    server = servers[label]
                    advices[label] = Advice(server, OLD_SIMULATE, client_context(server.ca), {})
            for label, server in servers.items():
                wait_synced(server, body)
                wait_advised(advices[label], asked)
            for round_number in range(args.rounds):
                for label, server in servers.items():
                    for name in PHASES:
                        print(f"round {round_number + 1}: {label}, {name} ...", flush=True)
                        run = phase(server, advices[label], api, body, asked, name, args)
                        results.setdefault((label, name), []).append(run)
        finally:
            for process in started:
                process.stop()
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
