"""Amounts as the messages print them: the one formatter of quota and resource numbers.

Two notations, one function (``format_amount``):

- **with a resource**, as people write a quantity of it: memory and ephemeral storage
  in the largest binary unit that says it exactly (``4000Gi``, not ``3.9Ti``), else the
  largest that fits, rounded to a tenth; a fraction in milli-units (``500m``); a whole
  number as it is (``64`` chips).
- **without**, the exact decimal: the quota sums in a bound's explanation (``nominal
  12 + 36 the rest of cohort …``) and the amounts compared with them, as Kueue's own
  messages print a quota (``0.5``, not ``500m``).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, localcontext

from webhook.kube.quantity import BOUND, BOUND_DIGITS, CONTEXT

_BINARY = frozenset({"memory", "ephemeral-storage"})
_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_amount(value: Decimal | int, resource: str | None = None) -> str:
    """``value`` as text: in ``resource``'s notation when one is named, else the exact decimal.

    A quantity from ``BOUND`` up is held there by the parser (``webhook.kube.quantity``),
    so what is that large, or a sum or product of such, is "1e31 or more"; the rest is
    worked out in the quantities' context, exactly, whatever the caller's.
    """
    value = Decimal(value)
    if value >= BOUND:
        return f"1e{BOUND_DIGITS} or more"
    if value <= -BOUND:
        return f"-1e{BOUND_DIGITS} or less"
    with localcontext(CONTEXT):
        return _format(value, resource)


def _format(value: Decimal, resource: str | None) -> str:
    if resource is None:
        return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)
    if resource in _BINARY:
        for unit, size in _UNITS:
            if value >= size and value % size == 0:
                return f"{(value / size).normalize():f}{unit}"
        for unit, size in _UNITS:
            if value >= size:
                return f"{(value / size).quantize(Decimal('0.1')).normalize():f}{unit}"
    if value != value.to_integral_value():
        return f"{(value * 1000).to_integral_value():f}m"
    return f"{value.normalize():f}"


def format_amounts(values: Mapping[str, Decimal]) -> str:
    """Several resources' amounts, sorted by resource: ``cpu 4, memory 16Gi``."""
    return ", ".join(f"{resource} {format_amount(value, resource)}" for resource, value in sorted(values.items()))
