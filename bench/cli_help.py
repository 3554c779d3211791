"""How long ``tpu-admission --help`` (and each command's ``--help``) takes to answer, beside another tree.

    python bench/cli_help.py [--rounds 15] [--against TREE]

Each sample is a fresh interpreter running the console script's ``main`` with ``--help``
(what a shell runs for ``tpu-admission --help``), timed from ``fork`` to exit; a bare
``python -c pass`` is the floor, timed in the same rounds. With ``--against TREE`` (a
source tree: ``git archive af6ccf1 | tar -x -C /tmp/before``) that tree's package is run
the same way, round by round alternating, and the table gives both medians and their
ratio (below 1: this tree answers sooner).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = (["--help"], ["check", "--help"], ["audit", "--help"], ["simulate", "--help"], ["explain", "--help"])


def _once(tree: Path | None, argv: list[str]) -> float:
    if tree is None:
        code = "pass"
    else:
        code = (
            f"import sys; sys.path.insert(0, {str(tree)!r}); from webhook.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass"
        )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--against", type=Path, help="another source tree, run side by side")
    args = parser.parse_args()
    trees = {"this": ROOT} | ({"other": args.against.resolve()} if args.against else {})
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        samples.setdefault(("floor", "python -c pass"), []).append(_once(None, []))
        for argv in CASES:
            for name, tree in trees.items():
                samples.setdefault((name, " ".join(argv)), []).append(_once(tree, argv))
    floor = statistics.median(samples[("floor", "python -c pass")])
    print(f"python -c pass (floor): {floor * 1000:.0f} ms, median of {args.rounds}")
    print(f"{'command':22} {'this ms':>8} {'other ms':>9} {'this/other':>11}")
    for argv in CASES:
        case = " ".join(argv)
        this = statistics.median(samples[("this", case)])
        if args.against:
            other = statistics.median(samples[("other", case)])
            print(f"{case:22} {this * 1000:8.0f} {other * 1000:9.0f} {this / other:11.2f}")
        else:
            print(f"{case:22} {this * 1000:8.0f}")


if __name__ == "__main__":
    main()
