"""One copy of equal values across the cached objects: the watch cache's sharing table.

A cluster of 100,000 Workloads made from a few templates repeats the same usage, shapes,
conditions and strings over and over. The ledger's entries (``webhook.quota.ledger``) and
explain's records (``webhook.cluster.workloaddocs``) hand each value they keep to
``shared``, which gives back the one equal copy already held, so Workloads made from one
template hold one copy between them.

The table is bounded in values and in bytes (``weight``): past ``LIMIT`` values or
``BYTES`` it is cleared, and one value over ``VALUE_BYTES`` is never held. That only stops
sharing with what was kept before (the kept entries hold their own references); nothing is
lost.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from webhook.kube.sizes import weight

LIMIT: Final = 65536
BYTES: Final = 16 * 1024 * 1024
VALUE_BYTES: Final = 64 * 1024

_TABLE: dict[Any, Any] = {}


class _Held:
    """The table's bytes (``weight``), as counted when each value was added."""

    bytes = 0


T = TypeVar("T")


def shared(value: T) -> T:
    """The one held copy equal to ``value`` (``value`` itself when it is new, or not hashable)."""
    try:
        held = _TABLE.get(value)
    except TypeError:  # not hashable (not Kueue's shape): kept as it is
        return value
    if held is not None:
        return held  # type: ignore[no-any-return]
    cost = weight(value)
    if cost > VALUE_BYTES:
        return value
    if len(_TABLE) >= LIMIT or _Held.bytes + cost > BYTES:
        _TABLE.clear()
        _Held.bytes = 0
    _Held.bytes += cost
    return _TABLE.setdefault(value, value)  # type: ignore[no-any-return]


def held() -> tuple[int, int]:
    """(values, bytes) the table holds now: for the cache-size metric."""
    return len(_TABLE), _Held.bytes
