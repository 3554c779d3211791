"""Our quantity parser against k8s.io/apimachinery's ``resource.ParseQuantity`` itself
(``tests/oracle/quantity``, Go) on generated inputs: whether each is a quantity, and its
exact value, within the one documented bound (``webhook.kube.quantity.BOUND``).
Without Go the tests skip with one line saying so; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from oracle_harness import built_for_tests
from quantity_oracle import QuantityComparison, build_quantity_oracle, compare_all, draw_texts

#: inputs a run of the suite checks, and the seed that draws them
INPUTS, SEED = 10_000, 45


@pytest.fixture(scope="module")
def apimachinery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_for_tests(
        build_quantity_oracle, tmp_path_factory.mktemp("quantity") / "quantity", "the quantity oracle"
    )


def test_generated_quantities_parse_as_apimachinery_parses_them(apimachinery: Path) -> None:
    compared = compare_all(apimachinery, draw_texts(INPUTS, SEED))
    wrong = [c for c in compared if not c.agrees]
    assert not wrong, "\n".join(
        f"{c.text!r}: ours {c.ours}, apimachinery {c.theirs} ({c.canonical})" for c in wrong[:20]
    )
    parsed = sum(1 for c in compared if c.theirs is not None)
    assert 0.2 * INPUTS < parsed < 0.9 * INPUTS, "the inputs should mix quantities and non-quantities"


def test_the_written_cases_of_the_parser_agree_too(apimachinery: Path) -> None:
    texts = ["1", "1.5Gi", "0.1n", "500m", "1e3", "Ki", ".", "1.", "+", "-", "9Ei", "1e400", "e-10", "Pi", " 1"]
    assert all(c.agrees for c in compare_all(apimachinery, texts))


def test_a_different_value_is_a_disagreement() -> None:
    assert not QuantityComparison("1", Decimal(2), Decimal(1), "1").agrees
    assert not QuantityComparison("x", None, Decimal(1), "1").agrees
    assert QuantityComparison("1e400", Decimal("1e31"), Decimal("1e400"), "10e399").agrees
