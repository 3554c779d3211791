"""Amounts as the messages print them.

``format_amount`` prints the exact decimal: the quota sums in a bound's explanation
(``nominal 12 + 36 the rest of cohort …``) and the amounts compared with them, as Kueue's
own messages print a quota (``0.5``, not ``500m``).
"""

from __future__ import annotations

from decimal import Decimal


def format_amount(value: Decimal) -> str:
    """``value`` as the exact decimal, without exponent or trailing zeros when it is whole."""
    return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)
