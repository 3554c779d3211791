"""The one amount formatter (``webhook.quota.amounts``): both notations, as messages print them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from webhook.quota.amounts import format_amount, format_amounts

GI = 2**30


@pytest.mark.parametrize(
    ("value", "resource", "text"),
    [
        # the exact decimal: quota sums in a bound's explanation, and what is compared with them
        (Decimal("320"), None, "320"),
        (Decimal("1E+2"), None, "100"),
        (Decimal("4.0"), None, "4"),
        (Decimal("0.5"), None, "0.5"),
        (Decimal(64 * GI), None, str(64 * GI)),
        # as people write a quantity of the resource
        (Decimal(16 * GI), "memory", "16Gi"),
        (Decimal(4000 * GI), "memory", "4000Gi"),  # exact in Gi, not 3.9Ti
        (Decimal(int(1.5 * 2**40) + 1), "ephemeral-storage", "1.5Ti"),  # no exact unit: the largest, rounded
        (Decimal(512), "memory", "512"),  # under 1Ki
        (Decimal("0.5"), "cpu", "500m"),
        (Decimal("1.25"), "cpu", "1250m"),
        (Decimal(64), "google.com/tpu", "64"),
        (64, "google.com/tpu", "64"),  # chips counted as int
        (Decimal("2.0"), "", "2"),
    ],
)
def test_format_amount(value: Decimal | int, resource: str | None, text: str) -> None:
    assert format_amount(value, resource) == text


def test_format_amounts_lists_resources_sorted() -> None:
    values = {"memory": Decimal(8 * GI), "cpu": Decimal("0.5"), "google.com/tpu": Decimal(4)}
    assert format_amounts(values) == "cpu 500m, google.com/tpu 4, memory 8Gi"
