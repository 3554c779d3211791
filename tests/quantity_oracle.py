"""Our quantity parser (``webhook.kube.quantity``) against k8s.io/apimachinery's own
``resource.ParseQuantity`` (``tests/oracle/quantity``, Go, in the oracle's module).

Inputs are drawn by Hypothesis from the scanner's grammar (a sign, digits, a point and
digits, suffix letters, an exponent's sign and digits, each part optional or malformed)
and from arbitrary text. Compared: whether it is a quantity at all, and its exact value.
One bound is documented and ours: a magnitude from 10^31 up is held at 10^31 (``BOUND``),
so there only "both parse, both at or beyond the bound" is required.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from oracle_harness import ORACLE_DIR, OracleUnavailable

from webhook.kube.quantity import BOUND, QuantityError, parse_quantity_string

APIMACHINERY = "k8s.io/apimachinery"
SUFFIXES = ("", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e", "E")
ODD = ("i", "K", "mi", "ki", "g", "Kii", "MM", " ", "e+", "E-", "+", "-", ".", "..")

digits = st.text("0123456789", max_size=24)
grammar = st.builds(
    lambda sign, whole, point, fraction, suffix, exp_sign, exponent: (
        f"{sign}{whole}{point}{fraction}{suffix}{exp_sign if suffix in ('e', 'E') else ''}"
        f"{exponent if suffix in ('e', 'E') else ''}"
    ),
    st.sampled_from(("", "", "+", "-")),
    digits,
    st.sampled_from(("", "", ".")),
    digits,
    st.sampled_from(SUFFIXES + ODD),
    st.sampled_from(("", "+", "-")),
    st.text("0123456789", max_size=4),  # apimachinery keeps 1e400 exact: a longer exponent would take it minutes
)
quantity_texts = grammar | st.text(alphabet="0123456789.+-eEinumkMGTPKi ", max_size=16) | st.text(max_size=8)


def draw_texts(count: int, seed: int) -> list[str]:
    """``count`` inputs drawn from ``seed`` in one Hypothesis run (fast; a long run adapts to
    how it goes, so on a loaded machine the inputs may differ: a failure names each input)."""
    drawn: list[str] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(quantity_texts)
    def collect(text: str) -> None:
        drawn.append(text)

    while len(drawn) < count:
        before = len(drawn)
        collect()
        if len(drawn) == before:
            break
    return drawn[:count]


def build_quantity_oracle(output: Path) -> Path:
    go = shutil.which("go")
    if go is None:
        raise OracleUnavailable("the quantity oracle needs Go (go on PATH) and the Go module proxy")
    env = {**os.environ, "GOFLAGS": os.environ.get("GOFLAGS", "-p=2"), "GOWORK": "off"}
    done = subprocess.run(
        [go, "build", "-o", str(output), "./quantity"],
        cwd=ORACLE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"go build ./quantity in {ORACLE_DIR} failed:\n{done.stderr.strip()}")
    return output


@dataclass(frozen=True)
class QuantityComparison:
    text: str
    ours: Decimal | None
    theirs: Decimal | None
    canonical: str | None

    @property
    def agrees(self) -> bool:
        if self.ours is None or self.theirs is None:
            return self.ours is None and self.theirs is None
        if abs(self.theirs) >= BOUND:  # ours holds it at the bound, with its sign
            return self.ours == BOUND.copy_sign(self.theirs)
        return self.ours == self.theirs


def ask_apimachinery(binary: Path, texts: Sequence[str]) -> list[tuple[Decimal | None, str | None]]:
    done = subprocess.run(
        [str(binary)],
        input="".join(json.dumps(t) + "\n" for t in texts),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"the quantity oracle failed: {done.stderr.strip()}")
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if len(answers) != len(texts):
        raise OracleUnavailable(f"the quantity oracle answered {len(answers)} of {len(texts)} inputs")
    return [(Decimal(a["value"]), a["canonical"]) if a["ok"] else (None, None) for a in answers]


def ours(text: str) -> Decimal | None:
    try:
        return parse_quantity_string(text)
    except QuantityError:
        return None


def compare_all(binary: Path, texts: Sequence[str]) -> list[QuantityComparison]:
    return [
        QuantityComparison(text, ours(text), theirs, canonical)
        for text, (theirs, canonical) in zip(texts, ask_apimachinery(binary, texts), strict=True)
    ]
