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


def test_a_long_quantity_is_parsed_but_not_kept_in_the_cache() -> None:
    """The cache is keyed by untrusted text: a long value (any number of digits is a
    quantity) is worked out every time and never kept, so it cannot fill memory."""
    from webhook.kube.quantity import _parse_text
    from webhook.kube.textcache import CACHED_CHARS

    long_value = "0" * (CACHED_CHARS + 1) + "4"
    before = _parse_text.cache_info()
    assert parse_quantity(long_value) == Decimal(4)
    after = _parse_text.cache_info()
    assert (after.hits, after.misses, after.currsize) == (before.hits, before.misses, before.currsize)
    assert parse_quantity("0" * (CACHED_CHARS - 1) + "4") == Decimal(4)  # short enough: cached
    assert _parse_text.cache_info().misses == before.misses + 1
