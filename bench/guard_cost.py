"""What the connection guard costs: the floor server with and without it, same run.

    python bench/guard_cost.py [--seconds 4] [--rounds 3] [--connections 16] [--against TREE]

The guard (``webhook.serving.guard`` behind ``webhook.serving.listener``: handshake,
header and body deadlines, header and connection caps) sits in front of uvicorn's HTTP
protocol. To price it alone, the floor server (``bench/floor.py``: the thinnest
admission endpoint) runs plain and with ``--guarded``;
rounds alternate between the two so that the noise of a shared machine falls on both,
and the result is the median of the per-round ratios of requests per second.

``--against TREE`` prices a whole change set the same way: the webhook server from
another source tree (``git archive main | tar -x -C /tmp/main``) against this one, both
on ``/validate`` with the example review.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    BENCH,
    PYTHON,
    RESULTS,
    Server,
    dumps,
    example_review,
    free_port,
    have_wrk,
    make_certs,
    run_python_load,
    run_wrk,
    webhook_from,
    workspace,
)


def floor(certs: Path, work: Path, guarded: bool) -> Server:
    port = free_port()
    name = "floor-guarded" if guarded else "floor-plain"
    argv = [PYTHON, str(BENCH / "floor.py"), "--port", str(port), "--cert-dir", str(certs)]
    return Server(name, [*argv, "--guarded"] if guarded else argv, port, certs / "ca.crt", work / f"{name}.log")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--against", type=Path, help="compare the webhook of this source tree with this one's")
    args = parser.parse_args()
    body = example_review()
    with workspace() as work:
        certs = work / "certs"
        make_certs(certs)
        body_file = work / "body.json"
        body_file.write_bytes(dumps(body))
        if args.against:
            here = Path(__file__).resolve().parents[1]
            servers = {
                False: webhook_from(args.against.resolve(), certs, work, "webhook-baseline").start(),
                True: webhook_from(here, certs, work, "webhook-this-tree").start(),
            }
            names = (f"webhook from {args.against}", "webhook from this tree")
        else:
            servers = {False: floor(certs, work, False).start(), True: floor(certs, work, True).start()}
            names = ("floor on plain uvicorn", "floor on the webhook's serving stack")
        rps: dict[bool, list[float]] = {False: [], True: []}
        failures = 0
        try:
            for index in range(args.rounds):
                order = (False, True) if index % 2 == 0 else (True, False)
                for guarded in order:
                    server = servers[guarded]
                    if have_wrk():
                        result = run_wrk(server.url + "/validate", body_file, '"allowed":true',
                                         seconds=args.seconds, connections=args.connections)  # fmt: skip
                    else:
                        result = run_python_load(server.port, server.ca, body, "/validate", seconds=args.seconds,
                                                 connections=args.connections)  # fmt: skip
                    rps[guarded].append(result.rps)
                    failures += result.failures
        finally:
            for server in servers.values():
                server.stop()
    ratios = [g / p for g, p in zip(rps[True], rps[False], strict=True)]
    tool = "wrk" if have_wrk() else "python"
    title = "Change-set cost" if args.against else "Connection guard cost"
    lines = [
        f"## {title} (`python bench/guard_cost.py{' --against ' + str(args.against) if args.against else ''}`)",
        "",
        f"{tool}, {args.connections} keep-alive connections, {args.rounds} alternating rounds of {args.seconds:g} s, "
        "/validate with the example review.",
        "",
        "| server | requests/s (median) | per round |",
        "| --- | ---: | --- |",
        f"| {names[0]} | {statistics.median(rps[False]):.0f} | " + ", ".join(f"{r:.0f}" for r in rps[False]) + " |",
        f"| {names[1]} | {statistics.median(rps[True]):.0f} | " + ", ".join(f"{r:.0f}" for r in rps[True]) + " |",
        "",
        f"Second ÷ first, median of per-round ratios: **{statistics.median(ratios):.3f}** "
        f"({', '.join(f'{r:.3f}' for r in ratios)}); failed or wrong answers: {failures}.",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("change_cost.md" if args.against else "guard_cost.md")).write_text(text + "\n")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
