"""How many bytes a cached answer holds, roughly: what byte-bounded caches count.

Caches keyed or filled by what requests carry (a job's spec text in a shape key, a podSet
name in a result) must be bounded in bytes, not only in entries: 4,096 entries of a 3 MB
name each is 12 GB. ``weight`` estimates a value's bytes as CPython holds it: strings and
bytes exactly (``sys.getsizeof``), containers and objects (``__slots__``, ``__dict__``,
msgspec structs, dataclasses) by their parts, to a fixed depth and at most ``SAMPLED``
items per container (the rest counted at the sampled items' mean). Objects past the depth
count a fixed ``OBJECT`` bytes: what grows with a request is in the strings near the top.
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


def weight(value: object, depth: int = DEPTH) -> int:
    """``value``'s bytes, roughly (see the module's docstring)."""
    if isinstance(value, (str, bytes, bytearray)):
        return sys.getsizeof(value)
    if value is None or isinstance(value, (bool, int, float)):
        return 32
    if depth <= 0:
        return OBJECT
    if isinstance(value, Mapping):
        return 64 + 16 * len(value) + _items((part for pair in value.items() for part in pair), 2 * len(value), depth)
    if isinstance(value, (tuple, list, set, frozenset)):
        return 56 + 8 * len(value) + _items(value, len(value), depth)
    fields = _fields(value)
    if fields is None:
        return OBJECT
    return OBJECT + _items(fields, len(fields), depth)


def _items(items: Iterable[object], count: int, depth: int) -> int:
    seen = total = 0
    for item in itertools.islice(items, SAMPLED):
        total += weight(item, depth - 1)
        seen += 1
    return total if seen == count or seen == 0 else total * count // seen


def _fields(value: object) -> list[object] | None:
    """The values an object holds in its fields, or ``None`` for one without readable fields."""
    names = getattr(type(value), "__struct_fields__", None) or getattr(type(value), "__slots__", None)
    if isinstance(names, str):
        names = (names,)
    if names:
        return [getattr(value, name, None) for name in names]
    held = getattr(value, "__dict__", None)
    return list(held.values()) if isinstance(held, dict) else None
