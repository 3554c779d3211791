"""A map whose copies cost almost nothing: the store's Workloads and the ledger's counts.

The store holds every Workload of the cluster and a snapshot must hold them
as they were when it was made, while the watch goes on writing. Copying the map per
snapshot would cost a request time that grows with the cluster; instead the map is split into buckets by key
hash, ``fork`` hands out a second map over the same buckets and marks them shared on
both sides, and the next write to a shared bucket copies that bucket only
(copy-on-write). A write after a fork copies 1/256 of the map; a write with no fork in
between copies nothing. Values are never changed in place by their holders (a counter is
replaced, not incremented), so a fork's values are its own.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, ValuesView
from typing import Any, Final, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
N = TypeVar("N")

_BUCKETS: Final = 256
_MASK: Final = _BUCKETS - 1


class Table(Mapping[K, V], Generic[K, V]):
    """A mutable map that forks in O(buckets): what the two sides write after is their own."""

    __slots__ = ("_buckets", "_len", "_shared")

    def __init__(self) -> None:
        self._buckets: list[dict[K, V]] = [{} for _ in range(_BUCKETS)]
        self._shared = [False] * _BUCKETS
        self._len = 0

    def __getitem__(self, key: K) -> V:
        return self._buckets[hash(key) & _MASK][key]

    def get(self, key: K, default: V | None = None) -> V | None:  # type: ignore[override]
        return self._buckets[hash(key) & _MASK].get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._buckets[hash(key) & _MASK]

    def __iter__(self) -> Iterator[K]:
        for bucket in self._buckets:
            yield from bucket

    def __len__(self) -> int:
        return self._len

    def items(self) -> ItemsView[K, V]:
        """The pairs, read bucket by bucket (not a lookup per key, as ``Mapping``'s would)."""
        return _Items(self)

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def __repr__(self) -> str:
        return f"Table({dict(self.items())!r})"

    def _writable(self, key: K) -> dict[K, V]:
        index = hash(key) & _MASK
        if self._shared[index]:
            self._buckets[index] = dict(self._buckets[index])
            self._shared[index] = False
        return self._buckets[index]

    def __setitem__(self, key: K, value: V) -> None:
        bucket = self._writable(key)
        if key not in bucket:
            self._len += 1
        bucket[key] = value

    def pop(self, key: K, default: V | None = None) -> V | None:
        if key not in self:
            return default
        self._len -= 1
        return self._writable(key).pop(key)

    def fork(self) -> Table[K, V]:
        """A second map with the same contents; each side's next write to a bucket copies it first."""
        self._shared = [True] * _BUCKETS
        out: Table[K, V] = Table.__new__(Table)
        out._buckets = list(self._buckets)
        out._shared = [True] * _BUCKETS
        out._len = self._len
        return out


class _Items(ItemsView[K, V]):
    _mapping: Table[K, V]

    def __iter__(self) -> Iterator[tuple[K, V]]:
        for bucket in self._mapping._buckets:
            yield from bucket.items()


class _Values(ValuesView[V]):
    _mapping: Table[Any, V]

    def __iter__(self) -> Iterator[V]:
        for bucket in self._mapping._buckets:
            yield from bucket.values()


class SetTable(Mapping[K, set[N]], Generic[K, N]):
    """Key -> a set of names (nodes of a label, LocalQueues of a ClusterQueue), forked like a
    ``Table``; each set is copied the first time it changes after a ``fork``, so a write
    after a fork copies the one set it touches, not the map."""

    __slots__ = ("_fresh", "_make", "sets")

    def __init__(self, make: Callable[[Iterable[N]], set[N]] = set) -> None:
        self.sets: Table[K, set[N]] = Table()
        #: the keys whose sets were made since the last fork (this side's own)
        self._fresh: set[K] = set()
        #: makes a set (empty, or a copy): a subclass can carry what is worked out from one set
        self._make = make

    def __getitem__(self, key: K) -> set[N]:
        return self.sets[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self.sets)

    def __len__(self) -> int:
        return len(self.sets)

    def items(self) -> ItemsView[K, set[N]]:
        return self.sets.items()

    def move(self, key: K, name: N, sign: int) -> None:
        """Add (``sign`` > 0) or remove ``name`` under ``key``; an emptied set goes."""
        names = self.sets.get(key)
        if names is None:
            if sign < 0:
                return
            names = self._make(())
        elif key not in self._fresh:
            names = self._make(names)  # shared with a fork: copied before it changes
        if key not in self._fresh:
            self.sets[key] = names
            self._fresh.add(key)
        if sign > 0:
            names.add(name)
            return
        names.discard(name)
        if not names:
            self.sets.pop(key)
            self._fresh.discard(key)

    def fork(self) -> SetTable[K, N]:
        out: SetTable[K, N] = SetTable.__new__(SetTable)
        out.sets, out._fresh, out._make = self.sets.fork(), set(), self._make
        self._fresh = set()
        return out
