"""One copy of equal values across the cached objects: the watch cache's sharing table.

A cluster of 100,000 Workloads made from a few templates repeats the same usage, shapes,
conditions and strings over and over. The ledger's entries (``webhook.quota.ledger``) and
explain's records (``webhook.cluster.workloadindex``) hand each value they keep to the
store's ``Sharing``, which gives back the one equal copy already held, so Workloads made
from one template hold one copy between them. The table is the store's
(``webhook.cluster.store``): it lives and goes with the cache whose values it shares.

The table is bounded in values and in bytes (``weight``): past ``LIMIT`` values or
``BYTES`` it is cleared, and one value over ``VALUE_BYTES`` is never held. That only stops
sharing with what was kept before (the kept entries hold their own references); nothing is
lost.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, TypeVar

from webhook.kube.sizes import weight

LIMIT: Final = 65536
BYTES: Final = 16 * 1024 * 1024
VALUE_BYTES: Final = 64 * 1024

T = TypeVar("T")


class Share(Protocol):
    """What a projection hands each value it keeps to: a ``Sharing.share``, or ``unshared``."""

    def __call__(self, value: T, /) -> T: ...


class Sharing:
    """Equal values held once (see the module), bounded in values and bytes."""

    __slots__ = ("_table", "bytes")

    def __init__(self) -> None:
        self._table: dict[Any, Any] = {}
        #: the table's bytes (``weight``), as counted when each value was added
        self.bytes = 0

    def share(self, value: T, /) -> T:
        """The one held copy equal to ``value`` (``value`` itself when it is new, or not hashable)."""
        table = self._table
        try:
            held = table.get(value)
        except TypeError:  # not hashable (not Kueue's shape): kept as it is
            return value
        if held is not None:
            return held  # type: ignore[no-any-return]
        cost = weight(value)
        if cost > VALUE_BYTES:
            return value
        if len(table) >= LIMIT or self.bytes + cost > BYTES:
            table.clear()
            self.bytes = 0
        self.bytes += cost
        return table.setdefault(value, value)  # type: ignore[no-any-return]

    def held(self) -> tuple[int, int]:
        """(values, bytes) the table holds now: for the cache-size metric."""
        return len(self._table), self.bytes


def unshared(value: T, /) -> T:
    """No table: ``value`` itself (a projection made outside a store, held by nobody else)."""
    return value
