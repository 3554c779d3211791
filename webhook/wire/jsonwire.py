"""JSON out: msgspec's encoder, with the one thing it refuses handled.

msgspec writes the same compact UTF-8 JSON as ``json.dumps(..., separators=(",", ":"),
ensure_ascii=False)``, at C speed, and keeps big integers exact. It refuses strings
holding a lone surrogate, which only a review decoded by ``json.loads`` can carry
(``"\\ud800"`` in the body); those answers are written with ``\\uXXXX`` escapes instead,
so such input gets an answer, never a 5xx.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder()


def encode(content: Any) -> bytes:
    """Compact JSON bytes of ``content`` (dicts, lists, strings, numbers, booleans, None, structs)."""
    try:
        return _ENCODER.encode(content)
    except UnicodeEncodeError:  # a lone surrogate: escape it rather than fail the answer
        plain = msgspec.to_builtins(content)  # a struct as the dict msgspec would write
        return json.dumps(plain, separators=(",", ":"), ensure_ascii=True).encode()
