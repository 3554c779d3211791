"""Where a request's server CPU goes: the webhook's serving stack with its app cut at each stage.

    python bench/stages.py [--rounds 3] [--seconds 3] [--body example|dev|denied] [--path /validate]

Each stage is a server process on the real serving stack (``webhook.serving.runner.build_server``:
TLS context, connection guard, uvicorn/httptools/uvloop) whose app runs the real code
of a request up to that stage and then answers; the floor (``bench/floor.py``: a no-op
Starlette endpoint) is the baseline, with the thin floor (a plain ASGI endpoint before the
router) beside it. The same wrk load hits each in turn, rounds interleaved; what is reported is
the server process's CPU time per answered request (median over rounds), which a shared
machine disturbs far less than throughput, and ``floor ÷ stage``: the throughput ratio
one core would allow.

| stage | the app does |
| --- | --- |
| floor app | the floor's work (``json.loads``, answer "allowed") written by ``_send_json`` (msgspec) |
| decode | reads the body, ``parse_review`` (msgspec), answers "allowed" for its uid |
| + decide | ``decide`` and ``review_response`` of the real decision |
| + log | the decision log line, as the server writes it |
| webhook | the real app (``create_app``): adds the path and content-type checks, timing, metrics |

The floor app prices our stack (one write per answer, the guard) against stock uvicorn.
Each stage's increment is the in-place cost of what it adds: in a running server the
code competes for the CPU caches with uvicorn, httptools and TLS between requests, so
it costs more than a hot loop (``bench/run.py`` section 2) says.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    PYTHON,
    RESULTS,
    Server,
    cpu_seconds,
    dev_review,
    dumps,
    example_review,
    floor_server,
    free_port,
    have_wrk,
    make_certs,
    rotated,
    run_python_load,
    run_wrk,
    workspace,
)

STAGES = ("floor app", "decode", "+ decide", "+ log", "webhook")
GOAL = 0.85


def stage_app(stage: str, state: Any) -> Callable[..., Any]:
    """The ASGI app of ``stage`` (see the module doc); anything but a POST goes to the real app."""
    from webhook.engine.decision import Decision, decide
    from webhook.serving.app import (
        _body_headers,
        _read_body,
        _send_json,
        admission_facts,
        create_app,
        decision_line,
        decisions,
    )
    from webhook.wire.reviews import parse_review, review_response

    real = create_app(state)
    if stage == "webhook":
        return real
    policy = state.policy

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await real(scope, receive, send)
        if stage == "floor app":
            review = json.loads(await _read_body(receive, _body_headers(scope)[1], policy.server.max_body_bytes))
            answer = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": True},
            }
            return await _send_json(send, 200, answer)
        review = parse_review(await _read_body(receive, _body_headers(scope)[1], policy.server.max_body_bytes))
        if stage == "decode":
            return await _send_json(send, 200, review_response(review.uid, Decision()))
        facts = admission_facts(review, "mutate" if scope["path"].startswith("/mutate") else "validate", None)
        decision = decide(review.object, facts, policy, state.cluster)
        answer = review_response(review.uid, decision)
        if stage == "+ log" and decisions.enabled():
            decisions.write(decision_line(scope["path"], review, decision, 0.0))
        await _send_json(send, 200, answer)

    return app


def serve(stage: str, port: int, cert_dir: Path) -> None:
    """One stage's server, as ``python -m webhook serve`` runs (logging, loop, TLS)."""
    from webhook.cli.serve import setup_logging
    from webhook.rules.catalog import load_policy
    from webhook.serving import certs
    from webhook.serving.app import ServerState
    from webhook.serving.runner import TlsSettings, build_server, loop_factory, run_server

    policy = load_policy(None)
    setup_logging("info")
    files, _ = certs.ensure(cert_dir)
    tls = TlsSettings(cert=files.cert, key=files.key, min_version="1.2", client_ca=None, client_names=())
    state = ServerState(policy=policy)
    server, reloader = build_server(state, "127.0.0.1", port, tls, app=stage_app(stage, state))
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(run_server(server, reloader))


def bodies() -> dict[str, dict[str, Any]]:
    from run import denied_review

    return {"example": example_review(), "dev": dev_review(), "denied": denied_review()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--body", choices=("example", "dev", "denied"), default="example")
    parser.add_argument("--path", choices=("/validate", "/mutate"), default="/validate")
    parser.add_argument("--output", type=Path, default=RESULTS / "stages.md")
    parser.add_argument("--serve", choices=STAGES, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cert-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port, args.cert_dir)
        return 0

    review = bodies()[args.body]
    with workspace() as work:
        certs = work / "certs"
        make_certs(certs)
        body_file = work / "body.json"
        body_file.write_bytes(dumps(review))
        servers: dict[str, Server] = {
            "floor": floor_server(certs, work),
            "thin floor": floor_server(certs, work, thin=True),
        }
        for stage in STAGES:
            port = free_port()
            argv = [PYTHON, __file__, "--serve", stage, "--port", str(port), "--cert-dir", str(certs)]
            servers[stage] = Server(stage, argv, port, certs / "ca.crt", work / f"{stage.replace(' ', '_')}.log")
        cpu: dict[str, list[float]] = {name: [] for name in servers}
        expect = '"allowed"'  # an answer; the cut-down stages allow what the webhook denies

        def load(server: Server, seconds: float) -> float:
            before = cpu_seconds(server.pid)
            if have_wrk():
                result = run_wrk(server.url + args.path, body_file, expect, seconds=seconds,
                                 connections=args.connections)  # fmt: skip
            else:
                result = run_python_load(server.port, server.ca, review, args.path, seconds=seconds,
                                         connections=args.connections)  # fmt: skip
            if result.failures:
                raise SystemExit(f"{server.name}: {result.failures} failed requests")
            return (cpu_seconds(server.pid) - before) / max(result.requests, 1) * 1e6

        try:
            for server in servers.values():
                server.start()
            for server in servers.values():
                load(server, 1)  # warm-up
            for number in range(args.rounds):
                for name, server in rotated(list(servers.items()), number):
                    cpu[name].append(load(server, args.seconds))
        finally:
            for server in servers.values():
                server.stop()

    median = {name: statistics.median(values) for name, values in cpu.items()}
    floor = median["floor"]
    lines = [
        f"## Server CPU per request, by stage ({args.body} body, {args.path})",
        "",
        f"{args.rounds} interleaved rounds × {args.seconds:g} s, {args.connections} connections; "
        "median µs of server CPU (user + system, all threads) per answered request.",
        "",
        "| server | µs/request | added by the stage | floor ÷ this (one core's throughput ratio) |",
        "| --- | ---: | ---: | ---: |",
        f"| floor (`bench/floor.py --starlette`: no-op Starlette endpoint, stock uvicorn) | {floor:.1f} | | 1.00 |",
        f"| thin floor (`bench/floor.py`: plain ASGI endpoint, stock uvicorn) | {median['thin floor']:.1f} | "
        f"| {floor / median['thin floor']:.2f} |",
    ]
    previous = None
    for stage in STAGES:
        added = "" if previous is None else f"{median[stage] - median[previous]:+.1f}"
        lines.append(f"| {stage} | {median[stage]:.1f} | {added} | {floor / median[stage]:.2f} |")
        previous = stage
    budget = floor / GOAL
    lines += [
        "",
        f"A throughput of {GOAL}× the floor allows {budget:.1f} µs per request: "
        f"{budget - median['decode']:.1f} µs beyond decoding and answering, for deciding, "
        f"logging and counting (they take {median['webhook'] - median['decode']:.1f} µs here).",
    ]
    text = "\n".join(lines)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
