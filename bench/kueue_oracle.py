"""The differential run against Kueue's own code: N generated states, both asked, compared.

    python bench/kueue_oracle.py --cases 5000 --seed 1 [--out oracle-disagreements]

Builds the oracle (``tests/oracle/``, Go; the build cache keeps a rebuild to seconds),
draws ``--cases`` cluster states and jobs from ``tests/oracle_cases.py`` with ``--seed``,
asks our simulator and Kueue, and writes every disagreement as a replayable case folder
under ``--out`` (``state.yaml``, ``incoming.yaml``, ``policy.yaml``, ``answers.json``; replay with
``tpu-admission simulate incoming.yaml --cluster-state state.yaml --config policy.yaml`` and
``tests/oracle`` ``go run . FOLDER``). Ends with ``oracle: A/N agree with Kueue vX.Y.Z
(K known differences)``, after the same line for the gates' "could it ever fit" on
each state at zero usage; exit 1 when any disagree. ``--quantities N`` instead fuzzes N
quantity strings against k8s.io/apimachinery's ``resource.ParseQuantity``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from oracle_cases import draw_cases  # noqa: E402
from oracle_harness import build_oracle, kueue_version, module_version, run_cases, write_disagreement  # noqa: E402
from quantity_oracle import APIMACHINERY, build_quantity_oracle, compare_all, draw_texts  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("oracle-disagreements"))
    parser.add_argument("--quantities", type=int, default=0, help="also fuzz N quantity strings against apimachinery")
    args = parser.parse_args()
    if args.quantities:
        return quantities(args.quantities, args.seed)
    with tempfile.TemporaryDirectory(prefix="kueue-oracle-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        binary = build_oracle(work / "oracle")
        built = time.perf_counter()
        drawn = draw_cases(args.cases, args.seed)
        run = run_cases(binary, drawn, work / "cases")
        finished = time.perf_counter()
        outcomes = Counter(" ".join((c.kueue["outcome"], c.kueue.get("reason", ""))).strip() for c in run.comparisons)
        known = Counter(c.known for c in [*run.comparisons, *run.gates] if c.known)
        for comparison in run.disagreements:
            folder = write_disagreement(comparison, args.out)
            print(f"disagreement: {folder}")
            for line in comparison.differences:
                print(f"  {line}")
        for gate in run.gate_disagreements:
            print(f"disagreement: {write_disagreement(gate, args.out)}\n  {gate.difference}")
    elapsed = finished - built
    print(f"build {built - started:.1f}s; {len(run.comparisons)} cases in {elapsed:.1f}s", end="")
    print(f" ({60 * len(run.comparisons) / elapsed:.0f} cases/min)" if elapsed else "")
    print("Kueue's outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    if known:
        print("known differences: " + ", ".join(f"{k} {v}" for k, v in sorted(known.items())))
    print(run.gate_line(kueue_version()))
    print(run.line(kueue_version()))
    return 1 if run.disagreements or run.gate_disagreements else 0


def quantities(count: int, seed: int) -> int:
    """Our quantity parser against ``resource.ParseQuantity`` on ``count`` generated strings."""
    with tempfile.TemporaryDirectory(prefix="quantity-oracle-") as tmp:
        binary = build_quantity_oracle(Path(tmp) / "quantity")
        started = time.perf_counter()
        compared = compare_all(binary, draw_texts(count, seed))
        elapsed = time.perf_counter() - started
    wrong = [c for c in compared if not c.agrees]
    for c in wrong[:50]:
        print(f"disagreement: {c.text!r}: ours {c.ours}, apimachinery {c.theirs} ({c.canonical})")
    parsed = sum(1 for c in compared if c.theirs is not None)
    print(f"{count} inputs ({parsed} quantities) in {elapsed:.1f}s")
    print(f"quantities: {count - len(wrong)}/{count} agree with k8s.io/apimachinery {module_version(APIMACHINERY)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
