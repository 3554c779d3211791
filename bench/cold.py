"""A request's decision with the CPU caches as a served request finds them, in one process.

    python bench/cold.py [--samples 4000] [--rounds 3] [--evict-mib 64] [--against TREE]

In a running server uvicorn, httptools, TLS, the kernel and, on a shared machine, other
tenants run between two requests and evict part of what the last decision touched, so a
served decision costs more than a hot loop (``bench/run.py`` section 2) says, by how much
code and data it touches more than by how many instructions it runs. Served numbers show
that through a lot of noise; this brackets it in one process. Each sample is one
request's work as the server does it (``parse_review``, ``decide``, the answer's and the
log line's bytes) after reading ``--evict-mib`` MiB (a search through a buffer), which
evicts the caches (64 MiB: all of them on a machine with a 32 MiB L3; 4: the L1 and L2
only); *hot* is the same request again straight after. The cases are interleaved sample
by sample and the figure is the median. Processes differ by a few percent (memory
layout), so an A/B reads the ratio of a changed case against that of an unchanged one.

Cases: the RFC-0033 example on ``/validate`` (structural rules only); the dev-tier body
on ``/mutate`` (the label patch); a guaranteed one-slice 4.6 JobSet on
``/validate/production`` against the fixture cluster (tests/fixtures/cluster) held by a
watch cache on the test API server, as ``serve --kubeconfig`` has it (every cluster rule
runs, or is remembered), and the same job without a cluster: the difference of the two is
what the cluster costs a request.

``--against TREE`` (a source tree: ``git archive main | tar -x -C /tmp/main``) measures
that tree's package and this one's in alternating processes, ``--rounds`` each, and
prints this tree's cold median ÷ that tree's per case (below 1: this tree is cheaper).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _evictor(mib: int) -> Callable[[], None]:
    """Reads ``mib`` MiB, holding the GIL (hashlib would let the watch threads in)."""
    buffer = bytearray(mib * 1024 * 1024)

    def evict() -> None:
        buffer.find(b"\x01")

    return evict


def _cases(tree: Path) -> tuple[dict[str, Callable[[], object]], Callable[[], None]]:
    """The cases as one request's work each, with ``tree``'s package; and how to stop the cluster."""
    sys.path[:0] = [str(tree), str(HERE), str(ROOT / "tests")]
    import msgspec
    from bench_cluster import one_slice_job
    from cluster_apiserver import write_kubeconfig
    from common import dev_review, dumps, example_review, review_around
    from served_cluster import fixture_api

    from webhook.cluster import kinds as k
    from webhook.cluster.watch import WatchSettings, start_watch_cache
    from webhook.engine.decision import decide
    from webhook.policy.config import Policy
    from webhook.serving.app import admission_facts, decision_line
    from webhook.wire.jsonwire import encode
    from webhook.wire.reviews import parse_review, review_response

    policy = Policy()
    api = fixture_api()  # bookmarks once a minute, as an API server's: quicker ones would wake the threads
    api.start()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.port)
        cache = start_watch_cache(str(kubeconfig), policy, WatchSettings(watch_seconds=600))
        every = frozenset(kind.name for kind in k.WATCHED)
        deadline = time.monotonic() + 60
        while cache.snapshot().unavailable(every) and time.monotonic() < deadline:
            time.sleep(0.05)
    line = msgspec.json.Encoder()

    def request(body: bytes, stage: Any, tier: str | None, cluster: Any) -> Callable[[], object]:
        def work() -> object:
            review = parse_review(body)
            decision = decide(review.object, admission_facts(review, stage, tier), policy, cluster)
            answer = encode(review_response(review.uid, decision))
            return answer, line.encode(decision_line("/bench", review, decision, 0.001))

        return work

    guaranteed = dumps(review_around(one_slice_job("team-a-queue"), namespace="kubemaker"))
    cases = {
        "structural, /validate": request(dumps(example_review()), "validate", None, None),
        "dev tier, /mutate (patch)": request(dumps(dev_review()), "mutate", None, None),
        "the same job, no cluster": request(guaranteed, "validate", "production", None),
        "fixture cluster, /validate/production": request(guaranteed, "validate", "production", cache),
    }
    answer = cases["fixture cluster, /validate/production"]()[0]
    assert answer.endswith(b'"allowed":true}}'), answer  # every cluster rule ran: nothing skipped

    def stop() -> None:
        cache.stop()
        api.stop()

    return cases, stop


def measure(tree: Path, samples: int, evict_mib: int) -> dict[str, dict[str, float]]:
    """Per case, the median µs of one request's work, ``cold`` and ``hot``."""
    cases, stop = _cases(tree)
    _evict = _evictor(evict_mib)
    try:
        for work in cases.values():  # warm-up: imports, plans, the cluster's memo
            for _ in range(200):
                work()
        times: dict[tuple[str, str], list[int]] = {(name, m): [] for name in cases for m in ("cold", "hot")}
        clock = time.perf_counter_ns
        names = list(cases)
        for index in range(samples):
            for name in names if index % 2 == 0 else reversed(names):
                work = cases[name]
                _evict()
                started = clock()
                work()
                times[name, "cold"].append(clock() - started)
                started = clock()
                work()
                times[name, "hot"].append(clock() - started)
    finally:
        stop()
    return {name: {m: statistics.median(times[name, m]) / 1000 for m in ("cold", "hot")} for name in cases}


def _worker(tree: Path, samples: int, evict_mib: int) -> dict[str, dict[str, float]]:
    argv = [sys.executable, __file__, "--worker", str(tree), "--samples", str(samples), "--evict-mib", str(evict_mib)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--samples", type=int, default=4000, help="samples per case and process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree")
    parser.add_argument("--against", type=Path, help="another source tree to compare this one with")
    parser.add_argument(
        "--evict-mib", type=int, default=64, help="MiB read between two samples (64: past this machine's 32 MiB L3)"
    )
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.samples, args.evict_mib)))
        return 0
    trees = {"this tree": ROOT} if args.against is None else {"that tree": args.against.resolve(), "this tree": ROOT}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {label: [] for label in trees}
    for index in range(args.rounds):
        for label in trees if index % 2 == 0 else reversed(list(trees)):
            runs[label].append(_worker(trees[label], args.samples, args.evict_mib))
    cases = list(runs["this tree"][0])
    print(
        f"{args.rounds} processes per tree × {args.samples} interleaved samples per case, {args.evict_mib} MiB read "
        "before each cold one; medians, µs per request"
    )
    print()
    header = "| case | " + " | ".join(f"{label}: cold | {label}: hot" for label in trees) + " |"
    ratio = args.against is not None
    print(header + (" this ÷ that, cold |" if ratio else ""))
    print("| --- |" + " ---: |" * (2 * len(trees) + ratio))
    for case in cases:
        cells = []
        for label in trees:
            for mode in ("cold", "hot"):
                cells.append(f"{statistics.median(run[case][mode] for run in runs[label]):.1f}")
        row = f"| {case} | " + " | ".join(cells) + " |"
        if ratio:
            pairs = zip(runs["this tree"], runs["that tree"], strict=True)
            row += f" {statistics.median(a[case]['cold'] / b[case]['cold'] for a, b in pairs):.3f} |"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
