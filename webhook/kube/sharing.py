"""One copy of equal values across the cached objects: the watch cache's sharing table.

A cluster of 100,000 Workloads made from a few templates repeats the same usage, shapes,
conditions and strings over and over. The ledger's entries (``webhook.quota.ledger``) and
explain's records (``webhook.cluster.workloaddocs``) hand each value they keep to
``shared``, which gives back the one equal copy already held, so Workloads made from one
template hold one copy between them.

The table is bounded: past ``LIMIT`` values it is cleared. That only stops sharing with
what was kept before (the kept entries hold their own references); nothing is lost.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

LIMIT: Final = 65536

_TABLE: dict[Any, Any] = {}

T = TypeVar("T")


def shared(value: T) -> T:
    """The one held copy equal to ``value`` (``value`` itself when it is new, or not hashable)."""
    if len(_TABLE) > LIMIT:
        _TABLE.clear()
    try:
        return _TABLE.setdefault(value, value)  # type: ignore[no-any-return]
    except TypeError:  # not hashable (not Kueue's shape): kept as it is
        return value
