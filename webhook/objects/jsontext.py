"""An object's JSON text as plain JSON (dicts, lists, strings, numbers), as ``json.loads`` reads it.

msgspec decodes it, and keeps big integers exact as ``json.loads`` does. The one thing
msgspec refuses that ``json.loads`` reads in UTF-8 JSON, a number beyond float range
(``1e400``, read as ``inf``), is read by ``json.loads``, so a reader sees the object the
review's general path (``json.loads`` of the whole body) would give it.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_PLAIN = msgspec.json.Decoder()


def plain_json(text: bytes) -> Any:
    """``text`` decoded: it must be JSON in UTF-8 (``json.loads``' errors otherwise)."""
    try:
        return _PLAIN.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)
