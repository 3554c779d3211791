"""Soak: steady mixed load on the webhook for N minutes; RSS growth and errors.

    python bench/soak.py --minutes 10

Starts ``python -m webhook serve`` on a loopback port, warms it up, takes the RSS
baseline, then keeps a steady load of three kinds of requests (admitted on /validate,
patched on /mutate in a dev namespace, denied on /mutate) for ``--minutes``, checking
every answer (a 200 AdmissionReview echoing its own uid). Goal: RSS growth under 5%
from the warmed-up baseline, zero errors. Exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    RESULTS,
    ClientStats,
    dev_review,
    drive,
    example_review,
    make_certs,
    percentile,
    rss_kib,
    webhook_server,
    workspace,
)

RSS_GOAL = 0.05


def denied_review() -> dict[str, object]:
    review = example_review()
    pod = review["request"]["object"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["priorityClassName"] = "high"
    return review


async def soak(port: int, ca: Path, pid: int, seconds: float, connections: int) -> tuple[ClientStats, list[int]]:
    stats = ClientStats()
    samples: list[int] = []
    mix = [(example_review(), "/validate"), (dev_review(), "/mutate"), (denied_review(), "/mutate")]
    per_kind = max(1, connections // len(mix))

    async def sample() -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            samples.append(rss_kib(pid))
            await asyncio.sleep(min(5.0, max(0.1, deadline - time.monotonic())))
        samples.append(rss_kib(pid))

    await asyncio.gather(
        sample(),
        *(drive(port, ca, body, path, seconds=seconds, connections=per_kind, stats=stats) for body, path in mix),
    )
    return stats, samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="steady-load time (default 10)")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds of load before the RSS baseline")
    parser.add_argument("--connections", type=int, default=6)
    args = parser.parse_args()
    with workspace() as work:
        certs = work / "certs"
        make_certs(certs)
        server = webhook_server(certs, work).start()
        try:
            warm, _ = asyncio.run(soak(server.port, server.ca, server.pid, args.warmup, args.connections))
            baseline = rss_kib(server.pid)
            started = time.monotonic()
            stats, samples = asyncio.run(soak(server.port, server.ca, server.pid, args.minutes * 60, args.connections))
            elapsed = time.monotonic() - started
            final = rss_kib(server.pid)
            alive = server.process is not None and server.process.poll() is None
        finally:
            server.stop()
    growth = (final - baseline) / baseline
    errors = stats.bad + stats.failed + warm.bad + warm.failed
    lines = [
        f"## Soak: {args.minutes:g} min steady mixed load (`python bench/soak.py --minutes {args.minutes:g}`)",
        "",
        "| requests | req/s | p50 ms | p99 ms | errors | RSS after warm-up MiB | RSS end MiB | RSS max MiB "
        "| growth | goal (< 5%, 0 errors) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {stats.ok + stats.bad} | {(stats.ok + stats.bad) / elapsed:.0f} "
        f"| {percentile(stats.latencies, 50) * 1000:.2f} | {percentile(stats.latencies, 99) * 1000:.2f} "
        f"| {errors} | {baseline / 1024:.1f} | {final / 1024:.1f} | {max(samples) / 1024:.1f} "
        f"| {growth * 100:+.2f}% | {'met' if growth < RSS_GOAL and errors == 0 and alive else '**not met**'} |",
        "",
        "RSS samples (MiB, every 5 s): " + ", ".join(f"{s / 1024:.1f}" for s in samples[:: max(1, len(samples) // 24)]),
    ]
    if stats.failures:
        lines += ["", "First failures:", *(f"- {f}" for f in stats.failures)]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "soak.md").write_text(text + "\n")
    return 0 if growth < RSS_GOAL and errors == 0 and alive else 1


if __name__ == "__main__":
    sys.exit(main())
