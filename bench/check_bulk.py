"""``check`` over a large repository, against the floor of parsing it with PyYAML's C loader.

    python bench/check_bulk.py [--manifests 2000] [--rounds 5]

Writes ``--manifests`` copies of the RFC-0033 example JobSet (each its own file, its own
name) into a temporary directory, then times, in alternating rounds, two processes: the
floor (one Python process that reads every file with ``yaml.CSafeLoader`` and does nothing
else) and ``tpu-admission check DIR --output github`` (reading with line marks, judging,
annotating). Prints the median of each and the median of the per-round ratios: the goal
is ``check`` within 2x the floor. The ratio of CPU seconds (user + system of each child
process) is printed beside the wall-clock one: on a shared host the CPU ratio moves less.
"""

from __future__ import annotations

import argparse
import copy
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "jobsets" / "rfc-4.6-static.yaml"
FLOOR = """
import sys, yaml
from pathlib import Path
count = 0
for path in sorted(Path(sys.argv[1]).rglob("*.yaml")):
    count += sum(1 for _ in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
print(count)
"""


def write_manifests(directory: Path, count: int) -> None:
    base = yaml.safe_load(FIXTURE.read_text())
    for index in range(count):
        obj = copy.deepcopy(base)
        obj["metadata"]["name"] = f"{obj['metadata']['name']}-{index}"
        (directory / f"jobset-{index:05d}.yaml").write_text(yaml.safe_dump(obj, sort_keys=False))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of ``argv``."""
    cpu = _children_cpu()
    started = time.perf_counter()
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tpu-admission-bulk-") as work:
        directory = Path(work)
        write_manifests(directory, args.manifests)
        floor_argv = [sys.executable, "-c", FLOOR, str(directory)]
        check_argv = [sys.executable, "-m", "webhook", "check", str(directory), "--output", "github"]
        floors, checks, ratios, cpu_ratios = [], [], [], []
        for round_ in range(args.rounds):
            pair = (floor_argv, check_argv) if round_ % 2 == 0 else (check_argv, floor_argv)
            first, second = timed(pair[0]), timed(pair[1])
            (floor, floor_cpu), (check, check_cpu) = (first, second) if pair[0] is floor_argv else (second, first)
            floors.append(floor)
            checks.append(check)
            ratios.append(check / floor)
            cpu_ratios.append(check_cpu / floor_cpu)
    print(f"## `check` over {args.manifests} JobSet manifests ({args.rounds} alternating rounds)\n")
    print("| process | median s | per round |")
    print("| --- | ---: | --- |")
    print(
        f"| floor: PyYAML C loader, nothing else | {statistics.median(floors):.2f} | "
        + ", ".join(f"{t:.2f}" for t in floors)
        + " |"
    )
    print(
        f"| `tpu-admission check --output github` | {statistics.median(checks):.2f} | "
        + ", ".join(f"{t:.2f}" for t in checks)
        + " |"
    )
    print(f"\ncheck ÷ floor, median of per-round ratios: **{statistics.median(ratios):.2f}** (goal ≤ 2.0)")
    print(f"CPU seconds, check ÷ floor, median of per-round ratios: {statistics.median(cpu_ratios):.2f}")


if __name__ == "__main__":
    main()
