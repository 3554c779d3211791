"""The served rows' apps in one process: what each request's own Python costs, beside the floor's.

    .venv/bin/python bench/app_loop.py [--requests 10000] [--rounds 9]

Calls each ASGI app as uvicorn calls it (a scope, the body in one ``http.request``
message, ``send`` collecting the answer) and drives the coroutine without an event loop:
nothing of a request awaits anything but ``receive`` and ``send``, which answer at once.
No TLS, no parser, no socket: the figure is the app's own work, hot in the CPU caches,
the decision log line included (written, as ``serve`` writes it, to ``/dev/null``).

Rows, as ``bench/served_cluster.py`` serves them: the floor's endpoint (``bench/floor.py``,
a Starlette ``Route``, ``await request.json()``, a ``JSONResponse``); the webhook without
a cluster on ``/validate/production`` (a guaranteed one-slice RFC-0033 4.6 JobSet) and on
``/mutate/dev`` (the RFC example in a dev namespace: the label patch); with the fixture
cluster (tests/fixtures/cluster, read from files into the same store the watch fills)
team-a's job and team-b's (whose answer carries ``[simulate] starts now``). Rows interleave
round by round; the figure is the median of the rounds, µs per request.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import one_slice_job  # noqa: E402
from common import dev_review, dumps, review_around, rotated  # noqa: E402
from floor import admit_request  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.types import ASGIApp  # noqa: E402
from support import FIXTURES  # noqa: E402

from webhook.cluster.statefiles import state_from_objects  # noqa: E402
from webhook.objects.sources import load_documents  # noqa: E402
from webhook.policy.config import Policy  # noqa: E402
from webhook.serving import logsink  # noqa: E402
from webhook.serving.app import ServerState, create_app  # noqa: E402


def caller(app: ASGIApp, path: str, body: bytes) -> Callable[[], list[dict[str, Any]]]:
    """One request to ``app``, as uvicorn makes it; returns the messages the app sent."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
        "server": ("127.0.0.1", 8443),
        "client": ("127.0.0.1", 50000),
    }
    message = {"type": "http.request", "body": body, "more_body": False}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return message

    async def send(out: dict[str, Any]) -> None:
        sent.append(out)

    def request() -> list[dict[str, Any]]:
        sent.clear()
        with contextlib.suppress(StopIteration):  # the coroutine ends at its first step
            app(dict(scope), receive, send).send(None)  # type: ignore[attr-defined]
        return sent

    return request


def per_request(request: Callable[[], Any], count: int) -> float:
    """µs per request over ``count`` calls."""
    started = time.perf_counter()
    for _ in range(count):
        request()
    return (time.perf_counter() - started) / count * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--requests", type=int, default=10_000, help="requests per row and round")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()

    policy = Policy()
    logsink.install(logsink.BufferedJsonHandler(open(os.devnull, "w")), "info")  # noqa: SIM115 (the process's)
    fixture = state_from_objects([d.data for d in load_documents([str(FIXTURES / "cluster")])], policy)
    team_a = dumps(review_around(one_slice_job("team-a-queue"), namespace="kubemaker"))
    team_b = dumps(review_around(one_slice_job("team-b-queue"), namespace="kubemaker"))
    floor = Starlette(routes=[Route("/validate", admit_request, methods=["POST"])])
    structural = create_app(ServerState(policy))
    clustered = create_app(ServerState(policy, cluster=fixture))
    rows = {
        "floor (bench/floor.py --starlette)": caller(floor, "/validate", team_a),
        "no cluster, /validate/production": caller(structural, "/validate/production", team_a),
        "no cluster, /mutate/dev": caller(structural, "/mutate/dev", dumps(dev_review())),
        "fixture cluster, team-a": caller(clustered, "/validate/production", team_a),
        "fixture cluster, team-b ([simulate] starts now)": caller(clustered, "/validate/production", team_b),
    }
    for label, request in rows.items():
        status = request()[0].get("status")
        if status != 200:
            raise SystemExit(f"{label}: answered {status}")
        per_request(request, 500)  # warm-up: memos, specialization
    times: dict[str, list[float]] = {label: [] for label in rows}
    for number in range(args.rounds):
        for label, request in rotated(list(rows.items()), number):
            times[label].append(per_request(request, args.requests))
    floor_us = statistics.median(times[next(iter(rows))])
    print(f"{args.rounds} rounds × {args.requests} requests per row, rows interleaved; medians, µs per request")
    print()
    print("| app | µs per request | − floor |")
    print("| --- | ---: | ---: |")
    for label, figures in times.items():
        median = statistics.median(figures)
        print(f"| {label} | {median:.1f} | {median - floor_us:+.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
