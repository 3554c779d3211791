"""Faults under load: SIGTERM with requests in flight, and certificate rotation.

    python bench/faults.py [--seconds 12]

1. SIGTERM under load, with the deployment's drain (``--drain-seconds``): readiness goes
   false, the server keeps answering through the drain, then stops; the load generator
   plays the endpoints controller and stops sending a second before the drain ends.
   Goal: every request sent is answered (0 dropped), and requests were answered after
   the signal.
2. SIGTERM under load without a drain: the requests already in flight when the signal
   lands are answered; counted separately are requests the client wrote onto a
   keep-alive connection the server was closing (the unavoidable HTTP/1.1 race that the
   drain exists to remove).
3. Certificate rotation under load: a new CA and serving certificate are written into
   the cert dir every ``--rotate-every`` seconds while clients open fresh TLS connections
   all the time (trusting old and new CAs, as a caBundle does during rotation).
   Goal: zero failures, and every rotated certificate was served.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    RESULTS,
    ClientStats,
    drive,
    example_review,
    large_review,
    make_certs,
    webhook_server,
    workspace,
)

from webhook import certs as certs_module


async def _sigterm_under_load(
    server_port: int, ca: Path, pid_signal: object, body: dict[str, object], path: str, *,
    signal_after: float, stop_after: float, connections: int,
) -> ClientStats:  # fmt: skip
    stats = ClientStats()
    answered_before: list[int] = []

    async def conductor() -> None:
        await asyncio.sleep(signal_after)
        answered_before.append(stats.ok)
        pid_signal()  # type: ignore[operator]
        await asyncio.sleep(stop_after)
        stats.stop_sending = True

    await asyncio.gather(
        conductor(),
        drive(server_port, ca, body, path, seconds=signal_after + stop_after + 30, connections=connections,
              reconnect=False, stats=stats),
    )  # fmt: skip
    stats.failures.insert(0, f"answered before SIGTERM: {answered_before[0]}")
    return stats


def sigterm(work: Path, certs: Path, *, drain: float, seconds: float) -> tuple[list[str], bool]:
    name = f"webhook-drain-{drain:g}"
    server = webhook_server(certs, work, extra=["--drain-seconds", str(drain)], name=name).start()
    body = example_review() if drain else large_review(20, 256)
    signal_after = seconds / 2
    stop_after = max(0.0, drain - 1.0) if drain else 5.0
    try:
        stats = asyncio.run(
            _sigterm_under_load(
                server.port, server.ca, lambda: server.signal(signal.SIGTERM), body, "/validate",
                signal_after=signal_after, stop_after=stop_after, connections=8,
            )
        )  # fmt: skip
        assert server.process is not None
        code = server.process.wait(30)
    finally:
        server.stop()
    before = int(stats.failures[0].rsplit(" ", 1)[1])
    after = stats.ok - before
    # failed = written but never answered; with reconnect=False a refused connect is not a request
    if drain:
        ok = stats.failed == 0 and stats.bad == 0 and after > 0
        goal = f"{'met' if ok else '**not met**'} (0 dropped, answered during the drain)"
    else:
        ok = stats.bad == 0
        goal = f"{'met' if ok else '**not met**'} (no wrong answer; dropped = keep-alive race, see text)"
    return [
        f"| SIGTERM, drain {drain:g} s | {stats.sent} | {before} | {after} | {stats.bad} | {stats.failed} "
        f"| exit {code} | {goal} |"
    ], ok


async def _rotate(certs: Path, every: float, times: int, cas: list[Path]) -> None:
    for index in range(times):
        await asyncio.sleep(every)
        ca, cert, key = certs_module.generate(list(certs_module.LOCAL_NAMES))
        ca_file = certs.parent / f"rotated-ca-{index}.crt"
        ca_file.write_bytes(ca)
        cas.append(ca_file)  # the client trusts it before the server serves it
        # key first, then cert: mid-rotation the pair does not match and the reloader retries
        certs_module.write(certs, ca, cert, key)


def rotation(work: Path, *, every: float, times: int) -> tuple[list[str], bool]:
    certs = work / "rotating-certs"
    make_certs(certs)
    server = webhook_server(certs, work, name="webhook-rotation").start()
    cas = [certs / "ca.crt"]
    stats = ClientStats()

    async def run() -> None:
        seconds = every * (times + 1.5)
        rotate = asyncio.create_task(_rotate(certs, every, times, cas))
        # the client context is rebuilt for every connection so that it trusts new CAs
        await _drive_trusting(server.port, cas, seconds, stats)
        await rotate

    try:
        asyncio.run(run())
    finally:
        server.stop()
    served = len(stats.peer_certs)
    ok = stats.bad == 0 and stats.failed == 0 and served == times + 1
    return [
        f"| certificate rotation ×{times} | {stats.sent} | {stats.connections} handshakes | {served} certs served "
        f"| {stats.bad} | {stats.failed} | — | {'met' if ok else '**not met**'} (0 failures, all {times + 1} served) |"
    ], ok


async def _drive_trusting(port: int, cas: list[Path], seconds: float, stats: ClientStats) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        # one short burst per trust set: 4 connections × 25 requests, new handshakes each burst
        await drive(port, list(cas), example_review(), "/validate", seconds=min(1.0, deadline - time.monotonic()),
                    connections=4, per_connection=25, stats=stats)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="load time around each SIGTERM")
    parser.add_argument("--drain", type=float, default=3.0, help="drain seconds for the first scenario")
    parser.add_argument("--rotate-every", type=float, default=3.0)
    parser.add_argument("--rotations", type=int, default=4)
    args = parser.parse_args()
    lines = [
        "## Faults under load (`python bench/faults.py`)",
        "",
        "| scenario | requests sent | answered before SIGTERM | answered after | wrong answers | dropped "
        "| exit | goal |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    with workspace() as work:
        certs = work / "certs"
        make_certs(certs)
        oks = []
        for rows, ok in (
            sigterm(work, certs, drain=args.drain, seconds=args.seconds),
            sigterm(work, certs, drain=0.0, seconds=args.seconds),
            rotation(work, every=args.rotate_every, times=args.rotations),
        ):
            lines += rows
            oks.append(ok)
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "faults.md").write_text(text + "\n")
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
