"""The webhook with and without a cluster behind it, served over TLS, side by side with the floor.

    .venv/bin/python bench/served_cluster.py [--seconds 4] [--rounds 3] [--connections 4]
        [--workloads 100000] [--queues 1000] [--nodes 5000] [--no-big] [--against TREE]

Starts the test API server (tests/cluster_apiserver.py, real HTTP) in this process three
times: holding the fixture cluster (tests/fixtures/cluster), bench/bench_cluster.py's
cluster with 1,000 Workloads, and the same with ``--workloads`` (``--queues``
ClusterQueues, ``--nodes`` Nodes in both). Beside them: the floors (bench/floor.py: the
no-op Starlette endpoint the goals are judged against, and the thin one beside it), the
webhook without a cluster (structural rules only), and the webhook as ``serve
--kubeconfig`` against each API server. Once each cache has synced (the answer carries
no "skipped" warning) and, where the simulator has one to say, the ``[simulate]`` line is
served (it is worked out after a shape's first request on a snapshot), ``wrk`` loads every
row in turn, rows interleaved round by round, each round starting one row later
(``common.rotated``):

- with a cluster, a guaranteed one-slice RFC-0033 4.6 JobSet on ``/validate/production``:
  admitted after every cluster rule (any warning but the ``[simulate]`` line makes the
  row count a failure); with ``--workloads`` Workloads also on a webhook configured
  ``simulate: off``, so the snapshot's cost is seen without the simulator's line;
- without one, the same on ``/validate/production``, and the RFC example JobSet in a
  dev namespace without labels on ``/mutate/dev`` (answered with the label patch).

``--against TREE`` (a source tree: ``git worktree add /tmp/before <commit>``) adds that
tree's webhook for the same rows but the 1,000-Workload one, so a change is priced beside
the same floor in the same run.

Prints one markdown table: req/s, p50, p99 and server CPU per request per row, and the
throughput and p99 ratios to the floor (and throughput to the thin floor), paired per
round, median over rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import cluster_objects, one_slice_job, workload  # noqa: E402
from cluster_apiserver import FakeApiServer, write_kubeconfig  # noqa: E402
from common import (  # noqa: E402
    LoadResult,
    Server,
    client_context,
    cpu_seconds,
    dev_review,
    dumps,
    floor_server,
    have_wrk,
    make_certs,
    review_around,
    rotated,
    rss_kib,
    run_wrk,
    webhook_from,
    webhook_server,
    workspace,
)
from support import FIXTURES  # noqa: E402

from webhook.cluster import kinds as k  # noqa: E402
from webhook.objects.sources import load_documents  # noqa: E402

PATH = "/validate/production"
#: the floor serves the two admission paths without a tier (it judges nothing)
FLOOR_PATH = "/validate"
#: the whole answer ends here when every rule ran and nothing was skipped or warned
EXPECT = '"allowed":true}}'
THROUGHPUT_GOAL = 0.75
P99_GOAL = 2.0


#: the API server's bookmark interval (about a minute); the test server's default is for tests
BOOKMARK_SECONDS = 60.0


#: what the simulator reads besides the rules' kinds: the priority classes' values, Kueue's Configuration
SIMULATOR_KINDS = (k.WORKLOAD_PRIORITY_CLASSES, k.KUEUE_CONFIG)


def priority_classes() -> list[dict[str, Any]]:
    return [
        d.data for d in load_documents([str(FIXTURES / "cluster")]) if d.data.get("kind") == "WorkloadPriorityClass"
    ]


def fixture_api() -> FakeApiServer:
    """The test API server holding tests/fixtures/cluster (the kinds the cache watches, and the
    WorkloadPriorityClasses the [simulate] line reads)."""
    api = FakeApiServer(kinds=SIMULATOR_KINDS)
    api.bookmark_interval = BOOKMARK_SECONDS
    for document in load_documents([str(FIXTURES / "cluster")]):
        kind = k.BY_KIND.get(document.data.get("kind", ""))
        if kind is not None:
            api.put(kind, document.data)
    api.load(k.WORKLOAD_PRIORITY_CLASSES, priority_classes())
    return api


def big_api(workloads: int, queues: int, nodes: int) -> FakeApiServer:
    """The test API server holding bench/bench_cluster.py's cluster."""
    api = FakeApiServer(kinds=SIMULATOR_KINDS)
    api.bookmark_interval = BOOKMARK_SECONDS
    api.load(k.WORKLOAD_PRIORITY_CLASSES, priority_classes())
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, obj in cluster_objects(queues, nodes):
        by_kind.setdefault(kind.name, []).append(obj)
    for kind in k.KINDS:
        api.load(kind, by_kind.get(kind.name, []))
    api.load(k.WORKLOADS, (workload(i, queues, nodes) for i in range(workloads)))
    return api


def post(server: Server, body: bytes, timeout: float = 5.0) -> str:
    """One POST of ``body`` to ``PATH`` on a fresh TLS connection; the response body ("" on failure)."""
    import http.client

    connection = http.client.HTTPSConnection(
        "127.0.0.1", server.port, context=client_context(server.ca), timeout=timeout
    )
    try:
        connection.request("POST", PATH, body, {"Content-Type": "application/json"})
        return connection.getresponse().read().decode()
    except OSError:
        return ""
    finally:
        connection.close()


def wait_synced(server: Server, body: bytes, timeout: float, need: str = "") -> tuple[float, str]:
    """Seconds until the webhook answers ``body`` admitted with every cluster rule run (its cache
    synced: no "skipped" warning), and that answer: the whole answer each request must then get
    (the ``[simulate]`` line included, when the simulator answers)."""
    started = time.monotonic()
    answer = ""
    while time.monotonic() - started < timeout:
        answer = post(server, body)
        if _fully_judged(answer) and need in answer:
            return time.monotonic() - started, answer
        time.sleep(0.2)
    raise RuntimeError(f"{server.name} did not answer a fully judged decision in {timeout:.0f}s; last: {answer}")


def _fully_judged(answer: str) -> bool:
    """Admitted, and no warning but the simulator's line: every cluster rule ran, nothing warned."""
    try:
        response = json.loads(answer)["response"]
    except (ValueError, KeyError, TypeError):
        return False
    warnings = response.get("warnings") or []
    return response.get("allowed") is True and all(w.startswith("[simulate] ") for w in warnings)


#: the dev tier's answer carries the label patch
DEV_PATH, DEV_EXPECT = "/mutate/dev", '"patchType":"JSONPatch"'


def load(server: Server, file: Path, seconds: float, connections: int, path: str, expect: str) -> LoadResult:
    """One wrk run; the floor answers allowed without judging anything, so only that is expected of it."""
    if server.name in ("floor", "thin-floor"):
        expect, path = '"allowed":true', FLOOR_PATH
    before = cpu_seconds(server.pid)
    result = run_wrk(server.url + path, file, expect, seconds=seconds, connections=connections)
    result.server_cpu_us = (cpu_seconds(server.pid) - before) / max(result.requests, 1) * 1e6
    return result


def table(rows: Iterable[str], results: dict[str, list[LoadResult]], base: str, thin: str) -> list[str]:
    lines = [
        "| server | req/s | p50 ms | p99 ms | server CPU µs/req | req/s ÷ floor | p99 ÷ floor | floor's CPU ÷ CPU "
        "| req/s ÷ thin floor | failures |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label in rows:
        runs, floor = results[label], results[base]

        def med(attr: str, runs: list[LoadResult] = runs) -> float:
            return statistics.median(getattr(r, attr) for r in runs)

        rps = statistics.median(a.rps / b.rps for a, b in zip(runs, floor, strict=True))
        p99 = statistics.median(a.p99_ms / b.p99_ms for a, b in zip(runs, floor, strict=True))
        # CPU per request, which a shared machine disturbs less than throughput, as the same kind of ratio
        cpu = statistics.median(b.server_cpu_us / a.server_cpu_us for a, b in zip(runs, floor, strict=True))
        to_thin = statistics.median(a.rps / b.rps for a, b in zip(runs, results[thin], strict=True))
        failures = sum(r.failures for r in runs)
        lines.append(
            f"| {label} | {med('rps'):.0f} | {med('p50_ms'):.2f} | {med('p99_ms'):.2f} | {med('server_cpu_us'):.0f} "
            f"| {rps:.2f} | {p99:.2f} | {cpu:.2f} | {to_thin:.2f} | {failures} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds of load per row and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--no-big", action="store_true", help="the fixture cluster only")
    parser.add_argument("--against", type=Path, help="another source tree's webhook, against the fixture cluster")
    args = parser.parse_args()
    if not have_wrk():
        print("wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2

    bodies = {
        "fixture": dumps(review_around(one_slice_job("team-a-queue"), namespace="kubemaker")),
        # team-b has the chips free: the simulator answers "starts now", the [simulate] line is served
        "fixture-b": dumps(review_around(one_slice_job("team-b-queue"), namespace="kubemaker")),
        "1k": dumps(review_around(one_slice_job("team-0007-queue"), namespace="kubemaker")),
        "big": dumps(review_around(one_slice_job("team-0007-queue"), namespace="kubemaker")),
        "dev": dumps(dev_review()),
    }
    apis = {"fixture": fixture_api()}
    if not args.no_big:
        print(f"building 1000 and {args.workloads} Workloads, {args.queues} ClusterQueues, {args.nodes} Nodes ...")
        apis["1k"] = big_api(1000, args.queues, args.nodes)
        apis["big"] = big_api(args.workloads, args.queues, args.nodes)
    names = {"fixture": "fixture cluster", "1k": "1,000 Workloads", "big": f"{args.workloads:,} Workloads"}
    servers: dict[str, Server] = {}
    #: the servers with a cluster behind them, each with the cluster (its API server and body)
    clustered: dict[str, str] = {}
    #: (row label, server, body, path, expected end of the answer)
    rows: list[tuple[str, str, str, str, str]] = []
    files: dict[str, Path] = {}
    synced: dict[str, float] = {}
    #: per clustered server, the whole answer it gives once synced (what every loaded request must get)
    answers: dict[str, str] = {}
    trees: list[tuple[str, Path | None]] = [("webhook", None)]
    if args.against is not None:
        trees.append((str(args.against), args.against.resolve()))
    with workspace() as work, tempfile.TemporaryDirectory() as tmp:
        certs = work / "certs"
        make_certs(certs)
        servers["floor"] = floor_server(certs, work)
        servers["thin floor"] = floor_server(certs, work, thin=True)
        rows += [("floor", "floor", "fixture", FLOOR_PATH, ""), ("thin floor", "thin floor", "fixture", FLOOR_PATH, "")]
        kubeconfigs = {}
        for name, api in apis.items():
            api.start()
            kubeconfigs[name] = write_kubeconfig(Path(tmp) / f"kubeconfig-{name}", api.port)
        for number, (tree_label, tree) in enumerate(trees):

            def start(name: str, extra: list[str], tree: Path | None = tree, number: int = number) -> Server:
                if tree is None:
                    return webhook_server(certs, work, extra=extra, name=f"wh{number}-{name}")
                return webhook_from(tree, certs, work, f"wh{number}-{name}", extra=extra)

            label = f"{tree_label}, no cluster"
            servers[label] = start("structural", [])
            rows.append((f"{label}, {PATH}", label, "fixture", PATH, EXPECT))
            rows.append((f"{label}, {DEV_PATH}", label, "dev", DEV_PATH, DEV_EXPECT))
            for name in apis:
                if name == "1k" and tree is not None:
                    continue
                label = f"{tree_label}, {names[name]}"
                servers[label] = start(name, ["--kubeconfig", str(kubeconfigs[name])])
                clustered[label] = name
                rows.append((f"{label}, {PATH}", label, name, PATH, EXPECT))
                if name == "fixture" and tree is None:
                    label_b = f"{label} (team-b: [simulate] starts now)"
                    servers[label_b] = start("fixture-b", ["--kubeconfig", str(kubeconfigs[name])])
                    clustered[label_b] = "fixture-b"
                    rows.append((f"{label_b}, {PATH}", label_b, "fixture-b", PATH, EXPECT))
                if name == "big" and tree is None:  # the same without the [simulate] line: the snapshot alone
                    label_off = f"{label} (simulate: off)"
                    quiet = Path(tmp) / "simulate-off.yaml"
                    quiet.write_text("simulate: off\n")
                    extra = ["--kubeconfig", str(kubeconfigs[name]), "--config", str(quiet)]
                    servers[label_off] = start("big-off", extra)
                    clustered[label_off] = "big"
                    rows.append((f"{label_off}, {PATH}", label_off, "big", PATH, EXPECT))
        for name, body in bodies.items():
            files[name] = work / f"{name}.json"
            files[name].write_bytes(body)
        results: dict[str, list[LoadResult]] = {label: [] for label, *_ in rows}
        try:
            for server in servers.values():
                server.start()
            for label, name in clustered.items():
                # The line is worked out after the first request of a shape on a snapshot, then read:
                # where the simulator has one to say, the answer every request must get carries it.
                need = "" if name == "fixture" or label.endswith("(simulate: off)") else "[simulate] "
                synced[label], answers[label] = wait_synced(servers[label], bodies[name], timeout=900, need=need)
                line = answers[label].partition('"warnings":[')[2].rstrip("]}") or "no warning"
                print(f"{label}: synced in {synced[label]:.1f}s; answer's warnings: {line}", flush=True)
            rows = [(row, server, body, path, answers.get(server, expect)) for row, server, body, path, expect in rows]
            for _, server, body, path, expect in rows:  # warm-up, not recorded
                load(servers[server], files[body], 1, args.connections, path, expect)
            for number in range(args.rounds):
                for label, server, body, path, expect in rotated(rows, number):
                    result = load(servers[server], files[body], args.seconds, args.connections, path, expect)
                    results[label].append(result)
            rss = {label: rss_kib(server.pid) for label, server in servers.items()}
        finally:
            for server in servers.values():
                server.stop()
            for api in apis.values():
                api.stop()

    print()
    print(
        f"wrk, {args.connections} keep-alive connections, {args.rounds} rounds × {args.seconds:g} s per row, rows "
        f"interleaved, rotated each round; guaranteed one-slice RFC-0033 4.6 JobSet on {PATH} (admitted after "
        "every cluster rule), "
        f"the RFC example in a dev namespace on {DEV_PATH} (the label patch); "
        f"ratios paired per round, medians. Goals: req/s ≥ {THROUGHPUT_GOAL}× and p99 ≤ {P99_GOAL}× the floor "
        "(the no-op Starlette endpoint)."
    )
    print()
    for line in table(results, results, "floor", "thin floor"):
        print(line)
    print()
    print("RSS after the load: " + ", ".join(f"{label} {kib / 1024:.0f} MiB" for label, kib in rss.items()))
    print(json.dumps({"synced_seconds": synced}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
