"""Amounts as the messages print them: the one formatter of quota and resource numbers.

Two notations, one function (``format_amount``):

- **with a resource**, as people write a quantity of it: memory and ephemeral storage
  in the largest binary unit that says it exactly (``4000Gi``, not ``3.9Ti``), else the
  largest that fits, rounded to a tenth; a fraction in milli-units (``500m``); a whole
  number as it is (``64`` chips).
- **without**, the exact decimal: the quota sums in a bound's explanation (``nominal
  12 + 36 the rest of cohort …``) and the amounts compared with them, as Kueue's own
  messages print a quota (``0.5``, not ``500m``).

``canonical`` writes a quantity as Kubernetes' ``resource.Quantity`` does when Kueue builds
one for a resource (memory, ephemeral storage and huge pages in binary units, the rest in
decimal ones): the form Kueue's flavor assigner puts in its messages (``10Mi``, ``1500``,
``2k``, ``500m``).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal, localcontext

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


_BINARY_SUFFIXES = ((6, "Ei"), (5, "Pi"), (4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki"))
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def _binary(resource: str) -> bool:
    return resource in _BINARY or resource.startswith("hugepages-")


def canonical(value: Decimal | int, resource: str) -> str:
    """``value`` of ``resource`` in Kubernetes' canonical quantity form.

    Binary units when the resource is a size and the value a whole number of at least
    1024, by the largest power of 1024 that divides it; otherwise decimal units, by the
    largest power of 1000 (from nano to exa) that leaves a whole number, the value first
    rounded up to a whole number of nano-units, as Kubernetes rounds it.
    """
    value = Decimal(value)
    if abs(value) >= BOUND:
        return format_amount(value, resource)
    with localcontext(CONTEXT):
        if _binary(resource) and abs(value) >= 1024 and value == value.to_integral_value():
            whole = int(value)
            for power, suffix in _BINARY_SUFFIXES:
                if whole % 1024**power == 0:
                    return f"{whole // 1024**power}{suffix}"
            return str(whole)
        nanos = int((value * 10**9).to_integral_value(rounding=ROUND_CEILING))
        if nanos == 0:
            return "0"
        exponent = -9
        while exponent < 18 and nanos % 1000 == 0:
            nanos //= 1000
            exponent += 3
        return f"{nanos}{_DECIMAL_SUFFIXES[exponent]}"
