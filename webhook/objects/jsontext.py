"""An object's JSON text as plain JSON (dicts, lists, strings, numbers), as ``json.loads`` reads it.

msgspec decodes it, and keeps big integers exact as ``json.loads`` does. A number with a
fraction or an exponent is read through ``json_number``: a float where a float holds it,
else the exact ``Decimal`` of its text (``1.0000000000000000001``, ``1e400``), which the
quantity parser reads as the API server reads the text. What msgspec refuses is read by
``json.loads`` with the same reading of numbers, so a reader sees the object the review's
general path (``json.loads`` of the whole body) would give it.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from webhook.kube.quantity import json_number

_PLAIN = msgspec.json.Decoder(float_hook=json_number)


def plain_json(text: bytes) -> Any:
    """``text`` decoded: it must be JSON in UTF-8 (``json.loads``' errors otherwise, and
    ``UnicodeDecodeError`` for text in another encoding: ``json.loads`` of bytes would take
    UTF-16 or UTF-32 too, which the API server and the CLI's file reader do not)."""
    try:
        return _PLAIN.decode(text)
    except msgspec.DecodeError:
        return json.loads(text.decode("utf-8"), parse_float=json_number)
