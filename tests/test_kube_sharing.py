"""The watch cache's sharing table: equal values held once, bounded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from webhook.kube import sharing
from webhook.kube.sharing import Sharing, unshared


def test_equal_values_give_back_the_first_copy() -> None:
    shared = Sharing().share
    first = ("tpu7x-4x4x4", "google.com/tpu", Decimal(64))
    equal = ("tpu7x-4x4x4", "google.com/tpu", Decimal(64))
    assert first is not equal
    assert shared(first) is first
    assert shared(equal) is first
    assert unshared(equal) is equal  # no table: each value its own


def test_each_table_shares_only_its_own_values() -> None:
    """A store's table: values another store's table holds are not handed out."""
    ours, theirs = Sharing().share, Sharing().share
    first, equal = ("value", 1), ("value", 1)
    assert (theirs(first), ours(equal)) == (first, equal)
    assert ours(equal) is equal and theirs(equal) is first


def test_an_unhashable_value_is_kept_as_it_is() -> None:
    value = {"type": "QuotaReserved"}
    assert Sharing().share(value) is value


def test_the_table_is_cleared_past_its_limit_and_sharing_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sharing, "LIMIT", 3)
    table = Sharing()
    kept = [table.share(("value", n)) for n in range(3)]
    assert table.held()[0] == 3
    table.share(("value", 3))  # past the limit: cleared, then this one held
    assert table.held()[0] == 1
    again = ("value", 0)
    assert table.share(again) is again  # the table was cleared: a new first copy
    assert kept[0] == again and table.held()[0] == 2


def test_the_table_is_bounded_in_bytes_and_never_holds_a_large_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value from a request (a multi-MB podSet name) must not stay in the table: one over
    ``VALUE_BYTES`` is never held, and past ``BYTES`` the table is cleared."""
    table = Sharing()
    big = ("name", "x" * (sharing.VALUE_BYTES + 1))
    assert table.share(big) is big and table.held() == (0, 0)
    monkeypatch.setattr(sharing, "BYTES", 10_000)
    for n in range(20):
        table.share(("value", str(n) * 1000))
    values, held = table.held()
    assert 0 < values < 20 and held <= 10_000
