from __future__ import annotations

from decimal import Decimal

import pytest

from webhook.kube.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4", 4),
        (4, 4),
        ("500m", Decimal("0.5")),
        ("20Gi", 20 * 2**30),
        ("1e3", 1000),
        ("1.5k", 1500),
        ("100000Gi", 100000 * 2**30),
        (2.5, Decimal("2.5")),
    ],
)
def test_quantities(value: object, expected: object) -> None:
    assert parse_quantity(value) == Decimal(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["", "four", "4 Gi", "4GiB", True, None, [4], "4\n4"])
def test_not_quantities(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_a_long_quantity_is_parsed() -> None:
    """Any number of digits is a quantity."""
    assert parse_quantity("0" * 300 + "4") == Decimal(4)
    assert parse_quantity("0" * 255 + "4") == Decimal(4)
