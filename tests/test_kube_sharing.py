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
    kept = [shared(("value", n)) for n in range(4)]
    assert len(sharing._TABLE) == 4
    again = ("value", 0)
    assert shared(again) is again  # the table was cleared: a new first copy
    assert kept[0] == again and len(sharing._TABLE) == 1
