"""The watch cache's one sharing table: equal values held once, bounded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from webhook.kube import sharing
from webhook.kube.sharing import shared


def test_equal_values_give_back_the_first_copy() -> None:
    first = ("tpu7x-4x4x4", "google.com/tpu", Decimal(64))
    equal = ("tpu7x-4x4x4", "google.com/tpu", Decimal(64))
    assert first is not equal
    assert shared(first) is first
    assert shared(equal) is first


def test_an_unhashable_value_is_kept_as_it_is() -> None:
    value = {"type": "QuotaReserved"}
    assert shared(value) is value


def test_the_table_is_cleared_past_its_limit_and_sharing_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sharing, "LIMIT", 3)
    monkeypatch.setattr(sharing, "_TABLE", {})
    kept = [shared(("value", n)) for n in range(3)]
    assert len(sharing._TABLE) == 3
    shared(("value", 3))  # past the limit: cleared, then this one held
    assert len(sharing._TABLE) == 1
    again = ("value", 0)
    assert shared(again) is again  # the table was cleared: a new first copy
    assert kept[0] == again and len(sharing._TABLE) == 2


def test_the_table_is_bounded_in_bytes_and_never_holds_a_large_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value from a request (a multi-MB podSet name) must not stay in the table: one over
    ``VALUE_BYTES`` is never held, and past ``BYTES`` the table is cleared."""
    monkeypatch.setattr(sharing, "_TABLE", {})
    monkeypatch.setattr(sharing._Held, "bytes", 0)
    big = ("name", "x" * (sharing.VALUE_BYTES + 1))
    assert shared(big) is big and sharing.held() == (0, 0)
    monkeypatch.setattr(sharing, "BYTES", 10_000)
    for n in range(20):
        shared(("value", str(n) * 1000))
    values, held = sharing.held()
    assert 0 < values < 20 and held <= 10_000
