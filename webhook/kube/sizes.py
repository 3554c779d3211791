"""How many bytes a cached answer holds, roughly: what byte-bounded caches count.

Caches keyed or filled by what requests carry (a job's spec text in a shape key, a podSet
name in a result) must be bounded in bytes, not only in entries: 4,096 entries of a 3 MB
name each is 12 GB. ``weight`` counts what a request can grow: strings and bytes exactly
(``sys.getsizeof``), containers and objects (``__slots__``, ``__dict__``, msgspec structs,
dataclasses) by their parts, to a fixed depth, at most ``SAMPLED`` items per container and
``VISITS`` parts in all; a container's further items count nothing, an object past the depth
or the visits a fixed ``OBJECT`` bytes. What a request carries sits near
the top (a key's text, a result's names), so it is counted in full; a structure built from
the whole cluster (a simulator, a queue's index), bounded by the cluster rather than by
requests, is counted by its first parts only, so it is never refused as too large.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Mapping
from typing import Final

#: bytes counted for an object not looked into (past the depth, or opaque)
OBJECT: Final = 64
#: items of a container looked at; the rest are counted at their mean
SAMPLED: Final = 32
DEPTH: Final = 5


#: parts looked at per value, at most: past it the rest count ``OBJECT`` bytes each, so
#: weighing a large answer (a simulator, a queue's index) costs a bounded number of steps
VISITS: Final = 256


def weight(value: object, depth: int = DEPTH) -> int:
    """``value``'s bytes, roughly (see the module's docstring); at most ``VISITS`` parts looked at."""
    return _Weigher().weigh(value, depth)


class _Weigher:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = VISITS

    def weigh(self, value: object, depth: int) -> int:
        if isinstance(value, (str, bytes, bytearray)):
            return sys.getsizeof(value)
        if value is None or isinstance(value, (bool, int, float)):
            return 32
        self.left -= 1
        if depth <= 0 or self.left <= 0:
            return OBJECT
        if isinstance(value, Mapping):
            parts = (part for pair in value.items() for part in pair)
            return 64 + 16 * min(len(value), SAMPLED) + self._items(parts, depth)
        if isinstance(value, (tuple, list, set, frozenset)):
            return 56 + 8 * min(len(value), SAMPLED) + self._items(value, depth)
        fields = _fields(value)
        if fields is None:
            return OBJECT
        return OBJECT + self._items(fields, depth)

    def _items(self, items: Iterable[object], depth: int) -> int:
        return sum(self.weigh(item, depth - 1) for item in itertools.islice(items, SAMPLED))


def _fields(value: object) -> list[object] | None:
    """The values an object holds in its fields, or ``None`` for one without readable fields."""
    names = getattr(type(value), "__struct_fields__", None) or getattr(type(value), "__slots__", None)
    if isinstance(names, str):
        names = (names,)
    if names:
        return [getattr(value, name, None) for name in names]
    held = getattr(value, "__dict__", None)
    return list(held.values()) if isinstance(held, dict) else None
