"""The benchmark: one command, one markdown table of ratios against baselines from the same run.

    python bench/run.py            # full run (~8 minutes)
    python bench/run.py --quick    # short run (~1.5 minutes), for development

It starts its own servers on loopback ports (the webhook as ``python -m webhook serve``,
and two floors from ``bench/floor.py`` on the same certificate: a no-op Starlette endpoint,
the goals' yardstick, and the thinnest admission endpoint on this stack), loads them with
``wrk`` (or a Python asyncio client when ``wrk`` is not installed), stops them, prints the
table and writes it to ``bench/results/latest.md``. The machine is shared and noisy: every
number that matters is a ratio to a baseline measured in the same run, interleaved round
by round, median over rounds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    BENCH,
    PYTHON,
    RESULTS,
    ROOT,
    LoadResult,
    Server,
    cpu_seconds,
    dev_review,
    dumps,
    example_review,
    floor_server,
    have_wrk,
    large_review,
    make_certs,
    rotated,
    rss_kib,
    run_python_load,
    run_wrk,
    webhook_server,
    workspace,
)

from webhook.engine.decision import AdmissionFacts, decide
from webhook.policy.config import Policy
from webhook.wire.jsonwire import encode
from webhook.wire.reviews import parse_review, review_response

THROUGHPUT_GOAL = 0.85
P99_GOAL = 1.5
DENIED_GOAL = 0.65
DECISION_GOAL = 1.0


def fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


# --------------------------------------------------------------------------- 1. HTTP


def denied_review() -> dict[str, Any]:
    """The example JobSet with four findings on /mutate: no accelerator selector, no static
    topology selector, a pod priorityClassName and spec.suspend set."""
    review = example_review()
    pod = review["request"]["object"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["nodeSelector"] = {}
    pod["spec"]["priorityClassName"] = "high"
    review["request"]["object"]["spec"]["suspend"] = False
    return review


def http_section(args: argparse.Namespace, work: Path, certs: Path, env: dict[str, str]) -> list[str]:
    floor = floor_server(certs, work)
    thin = floor_server(certs, work, thin=True)
    hook = webhook_server(certs, work)
    floor.env = thin.env = hook.env = env
    bodies = {
        "example": example_review(),
        "dev": dev_review(),
        "denied": denied_review(),
        "large": large_review(20, 256),
    }
    files = {}
    for name, body in bodies.items():
        files[name] = work / f"{name}.json"
        files[name].write_bytes(dumps(body))
    # (label, server, path, body, expected substring, floor row it is compared with)
    rows: list[tuple[str, Server, str, str, str, str]] = [
        ("floor /validate", floor, "/validate", "example", '"allowed":true', "floor /validate"),
        ("thin floor /validate", thin, "/validate", "example", '"allowed":true', "floor /validate"),
        ("webhook /validate", hook, "/validate", "example", '"allowed":true', "floor /validate"),
        ("webhook /mutate", hook, "/mutate", "example", '"allowed":true', "floor /validate"),
        ("webhook /mutate, dev tier (patch)", hook, "/mutate", "dev", '"patchType":"JSONPatch"',
         "floor /validate"),
        ("webhook /mutate, denied (4 findings)", hook, "/mutate", "denied", '"allowed":false', "floor /validate"),
        ("floor /validate, large", floor, "/validate", "large", '"allowed":true', "floor /validate, large"),
        ("thin floor /validate, large", thin, "/validate", "large", '"allowed":true', "floor /validate, large"),
        ("webhook /validate, large", hook, "/validate", "large", '"allowed":true', "floor /validate, large"),
    ]  # fmt: skip
    # the goals: /validate and /mutate (the dev tier's patch included) at 0.85 of the floor;
    # a denial words four findings, and a 20-podSet JobSet is no goal's
    goals: dict[str, tuple[float | None, float | None]] = {
        "webhook /mutate, denied (4 findings)": (DENIED_GOAL, None),
        "webhook /validate, large": (None, None),
    }
    runs = [(conns, row) for conns in args.connections for row in rows]
    results: dict[tuple[int, str], list[LoadResult]] = {(conns, label): [] for conns, (label, *_) in runs}
    tool = "wrk" if have_wrk() and not args.python_client else "python asyncio client"
    servers = (floor, thin, hook)
    try:
        for server in servers:
            server.start()
        for conns, (_label, server, path, body, expect, _) in runs:  # warm-up, not recorded
            load(tool, server, path, files[body], bodies[body], expect, 1, conns)
        for number in range(args.rounds):
            for conns, (label, server, path, body, expect, _) in rotated(runs, number):
                results[conns, label].append(
                    load(tool, server, path, files[body], bodies[body], expect, args.seconds, conns)
                )
        rss = {"floor": rss_kib(floor.pid), "webhook": rss_kib(hook.pid)}
    finally:
        for server in servers:
            server.stop()

    def med(key: tuple[int, str], attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in results[key])

    def paired(key: tuple[int, str], base: tuple[int, str], attr: str) -> float:
        return statistics.median(
            getattr(a, attr) / getattr(b, attr) for a, b in zip(results[key], results[base], strict=True)
        )

    lines = [
        "## 1. HTTP over TLS on loopback",
        "",
        f"Load: {tool}, keep-alive, {' and '.join(map(str, args.connections))} connections, {args.rounds} rounds × "
        f"{args.seconds:g} s per row, rows interleaved each round; medians over rounds; ratios are paired per round. "
        "Body `example` is the RFC-0033 example AdmissionReview (shared/examples, 4.6 static, "
        "production, allowed); `dev` is the same JobSet in a dev namespace without labels "
        "(answered with the label patch); `denied` is the example with four findings on /mutate; "
        "`large` is 20 replicatedJobs × 256 replicas. "
        f"Server RSS after the load: floor {rss['floor'] / 1024:.1f} MiB, webhook {rss['webhook'] / 1024:.1f} MiB.",
        "",
        "Server CPU µs/req is the server process's CPU time (user + system, all threads) over the "
        "requests it answered; floor ÷ webhook CPU is the throughput ratio one core would allow, "
        "whatever else the machine runs. The goals are judged against the floor (a no-op Starlette "
        "endpoint); the thin floor (a plain ASGI endpoint before Starlette's router) is the stricter "
        "reference beside it.",
        "",
        "| row | conns | req/s | p50 ms | p99 ms | server CPU µs/req | req/s ÷ floor | p99 ÷ floor "
        "| floor CPU ÷ CPU | req/s ÷ thin floor | failures | goal |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for conns, (label, _server, _path, _body, _expect, base) in runs:
        key = (conns, label)
        failures = sum(r.failures for r in results[key])
        thin_base = (conns, "thin " + base)
        thin_ratio = "1.00" if key == thin_base else fmt(paired(key, thin_base, "rps"))
        if label == base:
            goal = "baseline"
            rps_ratio = p99_ratio = cpu_ratio = "1.00"
        else:
            rr, pr = paired(key, (conns, base), "rps"), paired(key, (conns, base), "p99_ms")
            rps_ratio, p99_ratio = fmt(rr), fmt(pr)
            cpu_ratio = fmt(1 / paired(key, (conns, base), "server_cpu_us"))
            rps_goal, p99_goal = goals.get(label, (THROUGHPUT_GOAL, P99_GOAL))
            goal = "reported" if rps_goal is None else f"rps ≥ {rps_goal}× {verdict(rr >= rps_goal)}"
            if p99_goal is not None:
                goal += f", p99 ≤ {p99_goal}× {verdict(pr <= p99_goal)}"
            if label.startswith("thin floor"):
                goal = "reference"
        lines.append(
            f"| {label} | {conns} | {med(key, 'rps'):.0f} | {fmt(med(key, 'p50_ms'))} | {fmt(med(key, 'p99_ms'))} "
            f"| {med(key, 'server_cpu_us'):.0f} | {rps_ratio} | {p99_ratio} | {cpu_ratio} | {thin_ratio} | {failures} "
            f"| {goal} |"
        )
    return lines


def load(
    tool: str, server: Server, path: str, file: Path, body: dict[str, Any], expect: str, seconds: float,
    connections: int,
) -> LoadResult:  # fmt: skip
    """One load run; also the server's CPU time per request, which the load generator and
    the other processes on a shared machine disturb far less than throughput."""
    before = cpu_seconds(server.pid)
    if tool == "wrk":
        result = run_wrk(server.url + path, file, expect, seconds=seconds, connections=connections)
    else:
        result = run_python_load(server.port, server.ca, body, path, seconds=seconds, connections=connections)
    result.server_cpu_us = (cpu_seconds(server.pid) - before) / max(result.requests, 1) * 1e6
    return result


# --------------------------------------------------------------------------- 2. and 3. in-process


def per_call(fn: Callable[[], object], budget: float) -> float:
    """Seconds per call: calibrated batch, best of a few batches within ``budget`` seconds."""
    number = 1
    while True:
        started = time.perf_counter()
        for _ in range(number):
            fn()
        took = time.perf_counter() - started
        if took > 0.02:
            break
        number *= 2
    batches = max(3, int(budget / took))
    best = took / number
    for _ in range(min(batches, 50)):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - started) / number)
    return best


def decision_fns(body: bytes, stage: str, policy: Policy) -> tuple[Callable[[], object], Callable[[], object]]:
    """(decision only: object read + engine + patch + response bytes; parse + decision) for one request body."""
    request = parse_review(body)
    facts = AdmissionFacts(
        operation=request.operation,
        stage=stage,
        namespace=request.namespace,
        user=request.user,  # type: ignore[arg-type]
    )

    def decision() -> object:
        return encode(review_response(request.uid, decide(request.object, facts, policy)))

    def whole() -> object:
        parsed = parse_review(body)
        return encode(review_response(parsed.uid, decide(parsed.object, facts, policy)))

    return decision, whole


def ratio_rounds(
    baseline: Callable[[], object], subject: Callable[[], object], rounds: int, budget: float
) -> tuple[float, float, float]:
    """Median over interleaved rounds of (baseline s, subject s, subject ÷ baseline)."""
    base, subj, ratios = [], [], []
    for _ in range(rounds):
        b = per_call(baseline, budget)
        s = per_call(subject, budget)
        base.append(b)
        subj.append(s)
        ratios.append(s / b)
    return statistics.median(base), statistics.median(subj), statistics.median(ratios)


def decision_section(args: argparse.Namespace) -> list[str]:
    lines = [
        "## 2. In-process decision cost vs `json.loads` of the same bytes",
        "",
        "decision = reading the object (`read_workload`) + engine + patch + response building + encoding the response; "
        "whole = `parse_review` (the server's envelope decode: msgspec, json.loads only for odd bodies) + decision. "
        f"Best-of-batches per round, median over {args.rounds} interleaved rounds.",
        "",
        "| case | body KiB | json.loads µs | decision µs | decision ÷ loads | whole ÷ loads | goal (≤ 1.0×) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, review, stage, policy in decision_cases():
        body = dumps(review)
        decision, whole = decision_fns(body, stage, policy)
        base, cost, ratio = ratio_rounds(lambda b=body: json.loads(b), decision, args.rounds, args.budget)
        _, _, whole_ratio = ratio_rounds(lambda b=body: json.loads(b), whole, args.rounds, args.budget)
        lines.append(
            f"| {label} | {len(body) / 1024:.1f} | {base * 1e6:.1f} | {cost * 1e6:.1f} | {fmt(ratio)} "
            f"| {fmt(whole_ratio)} | {verdict(ratio <= DECISION_GOAL)} |"
        )
    return lines


def decision_cases() -> list[tuple[str, dict[str, Any], str, Policy]]:
    """``(label, review, stage, policy)`` of section 2 (and of the reader A/B)."""
    static, dynamic = Policy(), Policy(mode="dynamic")
    dynamic_review = example_review()
    from common import load_jobset

    dynamic_obj = load_jobset("rfc-4.3.1-dynamic")
    dynamic_review["request"]["object"] = dynamic_obj
    dynamic_review["request"]["namespace"] = (dynamic_obj.get("metadata") or {}).get("namespace", "default")
    return [
        ("example, /validate (static)", example_review(), "validate", static),
        ("example, /mutate (static)", example_review(), "mutate", static),
        ("dev tier, /mutate (patch)", dev_review(), "mutate", static),
        ("rfc-4.3.1, /mutate (dynamic)", dynamic_review, "mutate", dynamic),
        ("denied (4 findings), /mutate", denied_review(), "mutate", static),
    ]


def size_section(args: argparse.Namespace) -> list[str]:
    policy = Policy()
    sizes = [1, 5, 10, 20, 40, 80]
    costs: dict[int, float] = {}
    loads: dict[int, float] = {}
    bytes_: dict[int, int] = {}
    for n in sizes:
        body = dumps(large_review(n, 256))
        bytes_[n] = len(body)
        decision, _ = decision_fns(body, "mutate", policy)
        loads[n], costs[n], _ = ratio_rounds(lambda b=body: json.loads(b), decision, args.rounds, args.budget)
    lines = [
        "## 3. Size: replicatedJobs × 256 replicas each (example JobSet's TPU replicatedJob, copied)",
        "",
        "Linear growth means cost ÷ replicatedJobs stays flat and decision ÷ json.loads stays flat "
        "(json.loads is linear in the bytes).",
        "",
        "| replicatedJobs | body KiB | decision µs | µs per replicatedJob | ÷ cost at 1 | decision ÷ loads |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in sizes:
        lines.append(
            f"| {n} | {bytes_[n] / 1024:.1f} | {costs[n] * 1e6:.1f} | {costs[n] / n * 1e6:.1f} "
            f"| {fmt(costs[n] / costs[1])} | {fmt(costs[n] / loads[n])} |"
        )
    growth = costs[80] / costs[20]
    lines += [
        "",
        f"20 → 80 replicatedJobs (4× the work) costs {growth:.2f}× (linear: 4, quadratic: 16) — "
        f"{'linear' if growth < 6 else '**super-linear**'}. The issue's large JobSet is the 20 row.",
    ]
    return lines


# --------------------------------------------------------------------------- 4. cluster


def cluster_section(args: argparse.Namespace) -> list[str]:
    """bench/bench_cluster.py (the cluster cache's own benchmark) at 10k and 100k Workloads, then
    bench/served_cluster.py (the webhook served with a cluster behind it, beside the floor)."""
    script = BENCH / "bench_cluster.py"
    lines = ["## 4. Cluster scale (bench/bench_cluster.py)", ""]
    if not script.exists():
        return [*lines, "_bench/bench_cluster.py is not present in this tree; no cluster-scale numbers._"]
    if args.quick:
        runs = [["--workloads", "10000", "--queues", "100", "--nodes", "500", "--runs", "300"]]
    else:
        runs = [["--workloads", "10000"], ["--workloads", "100000"]]
    for extra in runs:
        argv = [PYTHON, str(script), *extra]
        command = f"python bench/bench_cluster.py {' '.join(extra)}"
        lines += [f"`{command}`:", ""]
        try:
            done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1200)
        except subprocess.TimeoutExpired:
            lines += ["_did not finish within 20 minutes._", ""]
            continue
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            lines += [f"_exited {done.returncode}:_", "", "```", *tail, "```", ""]
            continue
        output = done.stdout.strip().splitlines()
        first = next((i for i, line in enumerate(output) if line.startswith("|")), len(output))
        lines += [*output[first:], ""]
    served = ["--no-big", "--seconds", "2", "--rounds", "2"] if args.quick else ["--seconds", "4", "--rounds", "3"]
    command = f"python bench/served_cluster.py {' '.join(served)}"
    lines += ["### Served with a cluster behind it (bench/served_cluster.py)", "", f"`{command}`:", ""]
    try:
        argv = [PYTHON, str(BENCH / "served_cluster.py"), *served]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1200)
        output = done.stdout.strip().splitlines()
        first = next((i for i, line in enumerate(output) if line.startswith("wrk,")), len(output))
        lines += [*output[first:], ""] if done.returncode == 0 else [f"_exited {done.returncode}._", ""]
    except subprocess.TimeoutExpired:
        lines += ["_did not finish within 20 minutes._", ""]
    return lines[:-1]


# --------------------------------------------------------------------------- 5. startup


def startup_section(args: argparse.Namespace, work: Path, certs: Path, env: dict[str, str]) -> list[str]:
    times: dict[str, list[float]] = {"floor": [], "webhook": [], "webhook, generating its certificate": []}
    rss: dict[str, int] = {}
    for round_ in range(args.startup_rounds):
        fresh = work / f"fresh-certs-{round_}"
        for label, server in (
            ("floor", floor_server(certs, work)),
            ("webhook", webhook_server(certs, work)),
            ("webhook, generating its certificate", webhook_server(fresh, work, name="webhook-fresh")),
        ):
            server.env = env
            try:
                server.start()
                times[label].append(server.ready_at - server.started)
                rss[label] = rss_kib(server.pid)
            finally:
                server.stop()
    floor = statistics.median(times["floor"])
    lines = [
        "## 5. Startup: process start → first 200 from `/readyz`",
        "",
        f"Median of {args.startup_rounds} starts each, interleaved; polled every 5 ms over TLS.",
        "",
        "| server | start → ready ms | ÷ floor | RSS at ready MiB |",
        "| --- | ---: | ---: | ---: |",
    ]
    for label, values in times.items():
        value = statistics.median(values)
        lines.append(f"| {label} | {value * 1000:.0f} | {fmt(value / floor)} | {rss[label] / 1024:.1f} |")
    return lines


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="short run for development")
    parser.add_argument("--seconds", type=float, help="seconds of load per HTTP row and round")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (HTTP and in-process)")
    parser.add_argument(
        "--connections",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[4, 8],
        help="keep-alive connections, comma-separated (default 4,8: each row is run at each)",
    )
    parser.add_argument("--python-client", action="store_true", help="use the asyncio client even if wrk exists")
    parser.add_argument("--server-env", action="append", default=[], metavar="K=V", help="environment for both servers")
    parser.add_argument(
        "--only",
        action="append",
        choices=["http", "decision", "size", "cluster", "startup"],
        help="run only these",
    )
    parser.add_argument("--output", type=Path, default=RESULTS / "latest.md")
    args = parser.parse_args(argv)
    args.seconds = args.seconds or (2.0 if args.quick else 10.0)
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.budget = 0.2 if args.quick else 0.6
    args.startup_rounds = 2 if args.quick else 5
    env = dict(item.split("=", 1) for item in args.server_env)
    sections = args.only or ["http", "decision", "size", "cluster", "startup"]

    started = time.monotonic()
    header = [
        f"# tpu-admission benchmark{' (quick)' if args.quick else ''}",
        "",
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {platform.python_implementation()} "
        f"{platform.python_version()} · {os.cpu_count()} CPUs (shared) · `python bench/run.py"
        f"{' --quick' if args.quick else ''}`" + (f" · server env {args.server_env}" if env else ""),
        "",
        "Ratios are against baselines measured in the same run; absolute numbers are only context.",
    ]
    out: list[str] = header
    with workspace() as work:
        certs = work / "certs"
        make_certs(certs)
        for section in sections:
            print(f"[bench] {section} …", file=sys.stderr, flush=True)
            if section == "http":
                body = http_section(args, work, certs, env)
            elif section == "decision":
                body = decision_section(args)
            elif section == "size":
                body = size_section(args)
            elif section == "cluster":
                body = cluster_section(args)
            else:
                body = startup_section(args, work, certs, env)
            out += ["", *body]
    out += ["", f"_Total bench time {time.monotonic() - started:.0f} s._", ""]
    text = "\n".join(out)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
