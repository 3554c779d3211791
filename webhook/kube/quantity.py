"""Kubernetes resource quantities (``"4"``, ``20Gi``, ``500m``, ``1e3``) as exact decimals.

Our own ~30 lines instead of ``kubernetes.utils.parse_quantity``: importing that module
pulls in the whole generated client (hundreds of milliseconds at CLI start), and the
request path must not pay for it.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

_SUFFIX: Final = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY: Final = re.compile(
    r"^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> Decimal:
    """Parse a quantity as the API server would accept it; ``QuantityError`` otherwise."""
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    raise QuantityError(f"{value!r} is not a quantity")


def _parse_text(value: str) -> Decimal:
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity (e.g. 4, 500m, 20Gi)")
    number, exponent, suffix = match.groups()
    try:
        if exponent:
            return Decimal(number + exponent)
        return Decimal(number) * _SUFFIX[suffix or ""]
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"{value!r} is not a quantity") from exc


def quantity_or_none(value: object) -> Decimal | None:
    """The quantity, or ``None`` when the value is not one (absent or malformed)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return None
