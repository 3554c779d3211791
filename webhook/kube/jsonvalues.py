"""Stepping into an object that may not have the shape it should: the stored objects' readers' one helper."""

from __future__ import annotations

from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping of fields (a JSON object), else an empty one: a field that is
    missing, null or of another type reads as having nothing in it."""
    return value if isinstance(value, dict) else {}
