"""The one amount formatter (``webhook.kueue.amounts``): both notations, as messages print them."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest

from webhook.kube.quantity import BOUND
from webhook.kueue.amounts import canonical, format_amount, format_amounts

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


@pytest.mark.parametrize("resource", [None, "memory", "ephemeral-storage", "cpu", "google.com/tpu"])
def test_amounts_beyond_the_parsers_bound_say_so_and_never_raise(resource: str | None) -> None:
    """The parser holds a quantity at 10^31; sums and products of such (a pod's requests times
    its count) are "1e31 or more". Below it every amount is worked out exactly, whatever the
    caller's context: 10^31 - 1n in Ki has 37 digits, beyond Python's default 28."""
    for value in (BOUND, BOUND * 8, Decimal("1e1000"), Decimal(10**4000)):
        assert format_amount(value, resource) == "1e31 or more"
        assert format_amount(-value, resource) == "-1e31 or less"
    just_below = Decimal("9" * 31 + "." + "9" * 9)  # 10^31 - 1n: 40 digits
    with localcontext(prec=5):
        text = format_amount(just_below, resource)
    assert text == format_amount(just_below, resource) and "or more" not in text
    assert format_amount(Decimal(10**28 + 1)) == "10000000000000000000000000001"


def test_format_amounts_lists_resources_sorted() -> None:
    values = {"memory": Decimal(8 * GI), "cpu": Decimal("0.5"), "google.com/tpu": Decimal(4)}
    assert format_amounts(values) == "cpu 500m, google.com/tpu 4, memory 8Gi"


@pytest.mark.parametrize(
    ("value", "resource", "text"),
    [
        (10485760, "memory", "10Mi"),
        (1048576, "memory", "1Mi"),
        (1536, "memory", "1536"),
        (512, "memory", "512"),
        (3 * 2**30, "ephemeral-storage", "3Gi"),
        (2**21, "hugepages-2Mi", "2Mi"),
        (Decimal("0.5"), "cpu", "500m"),
        (2000, "cpu", "2k"),
        (1500, "cpu", "1500"),
        (4, "cpu", "4"),
        (0, "cpu", "0"),
        (64, "google.com/tpu", "64"),
        (Decimal("0.0000000001"), "cpu", "1n"),
    ],
)
def test_canonical_writes_a_quantity_as_kubernetes_does(value: Decimal | int, resource: str, text: str) -> None:
    assert canonical(value, resource) == text
