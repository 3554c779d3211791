"""RSS of the webhook and of the advisor after many requests that each carry a unique multi-MB value, side by side.

    .venv/bin/python bench/rss_caches.py [--requests 150] [--megabytes 2.8] [--against TREE]

Starts the test API server holding the fixture cluster (tests/fixtures/cluster, with the
WorkloadPriorityClasses the simulator reads), ``serve --kubeconfig`` and ``serve-advisor
--kubeconfig`` against it (and, with ``--against TREE``, that source tree's beside them:
``git worktree add /tmp/before <commit>``; a tree without ``serve-advisor`` is asked for
simulations on its webhook's own ``POST /simulate``). Once each has synced, sends
``--requests`` requests per path, one at a time, each with a value of ``--megabytes`` MB
no other request has:

- webhook, ``/validate/production``: a guaranteed one-slice JobSet of team-b (admitted,
  with the ``[simulate]`` line) with the value in its container's environment;
- webhook, ``/mutate/production``: the same;
- advisor, ``POST .../namespaces/kubemaker/simulations`` (with the front-proxy client
  certificate and ``X-Remote-User``, as the API server's aggregation layer calls it): a
  Workload with the value in its pod template's environment (answered), then one with a
  podSet named by the value (the API server refuses such a name).

Prints each process's RSS once synced (after a few warm-up requests), after each path, and
a few seconds after the last request, with the growth from the first. The goal: within
64 MB of the start once the requests end. RSS depends on the allocator and the machine,
so read the rows side by side (the same run, the same machine), not against a constant.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from bench_cluster import one_slice_job  # noqa: E402
from cluster_apiserver import write_kubeconfig  # noqa: E402
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
    review_around,
    rss_kib,
    webhook_from,
    webhook_server,
    workspace,
)
from served_cluster import fixture_api  # noqa: E402

ADMISSION = ("/validate/production", "/mutate/production")
SIMULATIONS = f"{ADVISOR_BASE}/namespaces/kubemaker/simulations"
OLD_SIMULATE = "/simulate"  # the webhook's own route, in trees before the advisor's process


def with_value(obj: dict[str, Any], value: str) -> dict[str, Any]:
    """A copy of the JobSet ``obj`` with ``value`` in its first container's environment."""
    obj = copy.deepcopy(obj)
    pod = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["env"] = [{"name": "PAYLOAD", "value": value}]
    return obj


def workload_with(value: str, podset_name: str = "main") -> dict[str, Any]:
    """A Workload of team-b asking for one 4x8x8 slice, with ``value`` in its pod's environment."""
    container = {
        "name": "jax",
        "image": "python:3.12",
        "env": [{"name": "PAYLOAD", "value": value}],
        "resources": {"requests": {"google.com/tpu": "4"}, "limits": {"google.com/tpu": "4"}},
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "rss-probe", "namespace": "kubemaker"},
        "spec": {
            "queueName": "team-b-queue",
            "podSets": [{"name": podset_name, "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


@dataclass(frozen=True)
class Target:
    """A process measured and the paths sent to it, with how it is called."""

    role: str  # webhook or advisor
    server: Server
    paths: tuple[str, ...]
    context: ssl.SSLContext
    headers: dict[str, str]


def post(target: Target, path: str, body: bytes, timeout: float = 60.0) -> int:
    connection = http.client.HTTPSConnection("127.0.0.1", target.server.port, context=target.context, timeout=timeout)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json", **target.headers})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def bodies(path: str, index: int, size: int) -> list[bytes]:
    """The requests of number ``index`` on ``path``, each value unique."""
    value = f"{path}-{index:05d}-".ljust(size, "x")
    if path in (SIMULATIONS, OLD_SIMULATE):
        named = value[:size].replace("/", "-")
        return [dumps(workload_with(value)), dumps(workload_with("small", podset_name=named))]
    return [dumps(review_around(with_value(one_slice_job("team-b-queue"), value), namespace="kubemaker"))]


def wait_synced(server: Server, timeout: float = 120.0) -> None:
    body = dumps(review_around(one_slice_job("team-b-queue"), namespace="kubemaker"))
    deadline = time.monotonic() + timeout
    connection_context = client_context(server.ca)
    while time.monotonic() < deadline:
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=connection_context, timeout=10)
        try:
            connection.request("POST", "/validate/production", body, {"Content-Type": "application/json"})
            answer = json.loads(connection.getresponse().read())["response"]
            warnings = answer.get("warnings") or []
            if answer.get("allowed") and all(w.startswith("[simulate]") for w in warnings):
                return
        except (OSError, ValueError, KeyError):
            pass
        finally:
            connection.close()
        time.sleep(0.2)
    raise RuntimeError(f"{server.name} did not sync within {timeout:.0f}s")


def answered_once(target: Target, path: str, body: bytes, timeout: float = 120.0) -> None:
    """Until ``path`` answers 200 (the advisor synced and RBAC's answer read)."""
    deadline = time.monotonic() + timeout
    status = 0
    while time.monotonic() < deadline:
        try:
            status = post(target, path, body, timeout=10)
        except (OSError, http.client.HTTPException):
            status = 0
        if status == 200:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{target.server.name} answered {status} on {path} for {timeout:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--requests", type=int, default=150, help="requests per path, each with a unique value")
    parser.add_argument("--megabytes", type=float, default=2.8, help="the size of each unique value")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait after the last request")
    parser.add_argument("--against", type=Path, help="another source tree's webhook, beside this one")
    args = parser.parse_args()
    size = int(args.megabytes * 1_000_000)
    api = fixture_api().start()
    api.grants.add((ADVISOR_USER, "create", "simulations", "kubemaker"))
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.against is not None:
        trees.append((str(args.against), args.against.resolve()))
    rows: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    with workspace() as work, tempfile.TemporaryDirectory() as tmp:
        certs = work / "certs"
        make_certs(certs)
        front = make_front_proxy(work / "front-proxy")
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
        targets: dict[str, list[Target]] = {}
        started: list[Server] = []
        try:
            for number, (label, tree) in enumerate(trees):
                extra = ["--kubeconfig", str(kubeconfig)]
                if tree is None:
                    server = webhook_server(certs, work, extra=extra, name=f"rss{number}")
                else:
                    server = webhook_from(tree, certs, work, f"rss{number}", extra=extra)
                started.append(server.start(timeout=60))
                webhook = Target("webhook", server, ADMISSION, client_context(server.ca), {})
                if has_advisor(tree):
                    aside = advisor_server(certs, work, front, extra=extra, name=f"rss-advisor{number}", tree=tree)
                    started.append(aside.start(timeout=60))
                    context = advisor_context(aside, front)
                    advisor = Target("advisor", aside, (SIMULATIONS,), context, {"X-Remote-User": ADVISOR_USER})
                    targets[label] = [webhook, advisor]
                else:
                    targets[label] = [Target("webhook", server, (*ADMISSION, OLD_SIMULATE), webhook.context, {})]
            for label, measured in targets.items():
                wait_synced(measured[0].server)
                for target in measured:  # warm-up: every path's first-use costs, with small values
                    for path in target.paths:
                        answered_once(target, path, bodies(path, -1, 64)[0])
                        for body in bodies(path, -1, 64):
                            post(target, path, body)
                for target in measured:
                    start = rss_kib(target.server.pid)
                    row = [("synced", start, 0)]
                    for path in target.paths:
                        statuses: dict[int, int] = {}
                        for index in range(args.requests):
                            for body in bodies(path, index, size):
                                status = post(target, path, body)
                                statuses[status] = statuses.get(status, 0) + 1
                        kib = rss_kib(target.server.pid)
                        answered = ", ".join(f"{count}×{status}" for status, count in sorted(statuses.items()))
                        shown = "simulations" if path == SIMULATIONS else path
                        row.append((f"after {shown} ({answered})", kib, kib - start))
                    time.sleep(args.settle)
                    kib = rss_kib(target.server.pid)
                    row.append((f"{args.settle:.0f} s after the last request", kib, kib - start))
                    rows[(label, target.role)] = row
        finally:
            for process in started:
                process.stop()
            api.stop()
    print(f"{args.requests} requests per path, each with a unique {args.megabytes} MB value")
    print()
    print("| server | process | when | RSS MiB | growth MiB |")
    print("| --- | --- | --- | ---: | ---: |")
    for (label, role), row in rows.items():
        for when, kib, grown in row:
            print(f"| {label} | {role} | {when} | {kib / 1024:.0f} | {grown / 1024:+.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
