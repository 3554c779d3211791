"""Kubernetes resource quantities (``"4"``, ``20Gi``, ``500m``, ``1e3``) as the API server reads them.

Our own parser instead of ``kubernetes.utils.parse_quantity``: importing that module
pulls in the whole generated client (slow at CLI start), and the
request path must not pay for it. Its reading is apimachinery's, not Python's: the Pods
made from a JobSet get the value ``resource.ParseQuantity`` gives
(k8s.io/apimachinery ``pkg/api/resource/quantity.go``), and ``tests/test_kube_quantity.py``
restates that package's own tests. So:

- the grammar is its scanner's: a sign, digits, a point and digits, then suffix letters,
  a sign and digits, each part optional. ``"."``, ``"+"``, ``"-"`` (and even ``"Ki"``)
  alone are 0, ``"1."`` is 1; where its slow path has to read the digits (``"Pi"``,
  ``"e-10"``) there are none, and it is no quantity;
- the exponent of ``1e3`` is read as ``strconv.ParseInt`` reads it (64 bits: a longer one
  is no quantity) and kept as an ``int32``, which wraps (``1e4294967296`` is 1);
- a non-zero magnitude is rounded up to a whole nano (``0.1n`` is ``1n``: asking for a
  resource gets some), and a binary-suffix value is capped at 2^63-1 (``9Ei``);
- a JSON or YAML value is trimmed of Go's whitespace first, as ``Quantity.UnmarshalJSON``
  does (``" 1"`` is 1), and a JSON number is read as the text it was: the JSON readers
  decode a number with a fraction or an exponent through ``json_number``, which keeps a
  text a float cannot hold (``1.0000000000000000001``, ``1e400``) as its exact
  ``Decimal``, so the quantity is read from the digits that were written. A YAML float
  stays a float: kubectl turns YAML into JSON through a float64 (``sigs.k8s.io/yaml``),
  so the API server receives the float's digits, not the YAML's.

One bound is ours. Go keeps ``1e400`` exactly; here a magnitude from 10^31 up is held at
10^31 (``BOUND``), far beyond any node or quota (the API server's int64 range ends below
10^19). Every value is then exact in 40 digits (``CONTEXT``), however it was written (a
thousand zeros, an exponent of two billion, a JSON ``1e400`` that Python reads as
infinity), no parse takes long, and nothing summed, multiplied or compared from it can
overflow or raise: a quantity beyond any node is still a number, refused by the rule it
breaks. ``NaN`` is no quantity.
"""

from __future__ import annotations

import math
import re
import reprlib
from decimal import ROUND_HALF_EVEN, ROUND_UP, Context, Decimal, DivisionByZero, InvalidOperation, Overflow
from typing import Final

#: The arithmetic of quantities: exact for every value ``parse_quantity`` gives (at most
#: 40 digits, nano resolution below ``BOUND``) and for what the rules make of them (a sum,
#: a product with a pod count, a quotient) up to 64 digits. Overflow and invalid operations
#: raise instead of giving Infinity or NaN. The parser uses it, and so do the engine's
#: cluster rules, the pod-requests sum and the amount formatter.
CONTEXT: Final = Context(
    prec=64, rounding=ROUND_HALF_EVEN, Emin=-999999, Emax=999999, traps=[InvalidOperation, DivisionByZero, Overflow]
)
#: the API server's resolution: every non-zero quantity is rounded up to a multiple of it
NANO: Final = Decimal("1e-9")
#: magnitudes from here up are held here (a positive or a negative ``BOUND``)
BOUND_DIGITS: Final = 31
BOUND: Final = Decimal(f"1e{BOUND_DIGITS}")
#: apimachinery's ``maxAllowed``: a binary-suffix quantity is capped at it
_MAX_ALLOWED_INT: Final = 2**63 - 1
MAX_ALLOWED: Final = Decimal(_MAX_ALLOWED_INT)
ZERO: Final = Decimal(0)
# the same, negative: written out, since unary minus rounds to the caller's context
_MINUS_BOUND: Final = BOUND.copy_negate()
_MINUS_MAX_ALLOWED: Final = MAX_ALLOWED.copy_negate()
_MINUS_NANO: Final = NANO.copy_negate()

_DECIMAL_SI: Final = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
#: ``parseQuantityString``: sign, digits, ``.`` digits, suffix letters, sign, digits, as
#: its loops consume them (possessive: no other split is ever tried)
_SCAN: Final = re.compile(r"([+-]?+)([0-9]*+)(?:\.([0-9]*+))?+([eEinumkKMGTP]*+[+-]?+[0-9]*+)")
#: what ``strconv.ParseInt(s, 10, 64)`` accepts
_EXPONENT: Final = re.compile(r"[+-]?[0-9]+")
#: Go's ``unicode.IsSpace``, which ``strings.TrimSpace`` trims (Python's ``str.strip`` trims
#: more: U+001C..U+001F)
_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"  # noqa: E501
#: Go's int64 and int32
_INT64: Final = 2**63
_INT32: Final = 2**32


class QuantityError(ValueError):
    pass


#: how much of a value a message shows: a value can be as big as the input (a megabyte
#: string, a list an alias made of a thousand lists), a message cannot
_SHOWN: Final = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 40
_SHOWN.maxlevel = 2
_SHOWN.maxlist = _SHOWN.maxdict = _SHOWN.maxtuple = 3
_SHOWN_LENGTH: Final = 80


def shown(value: object) -> str:
    """``repr(value)``, clipped to a few dozen characters whatever the value holds."""
    text = _SHOWN.repr(value)
    return text if len(text) <= _SHOWN_LENGTH else text[: _SHOWN_LENGTH - 3] + "..."


def json_number(text: str) -> float | Decimal:
    """A JSON number with a fraction or an exponent, as the JSON readers keep it.

    The float, when the float holds what the text says (``0.5``, ``1e3``: the usual case,
    and what every other reader of the object expects); otherwise the text's exact
    ``Decimal`` (more digits than a float64 holds, or beyond its range), which
    ``parse_quantity`` reads as the text it was, as the API server does.
    """
    value = float(text)
    if math.isfinite(value) and Decimal(repr(value)) == Decimal(text):
        return value
    return Decimal(text)


#: strings read already (the few a cluster's pods write: "4", "20Gi", "500m"), each at most
#: ``_KEPT_LENGTH`` characters and at most ``_KEPT_COUNT`` of them, so no stream of odd
#: values can grow it; a value read again is a lookup
_KEPT: dict[str, Decimal] = {}
_KEPT_LENGTH: Final = 32
_KEPT_COUNT: Final = 4096


def parse_quantity(value: object) -> Decimal:
    """A resource value (a JSON or YAML string or number) as the API server reads it; ``QuantityError`` otherwise."""
    if isinstance(value, str):
        kept = _KEPT.get(value)
        if kept is not None:
            return kept
        parsed = parse_quantity_string(value.strip(_GO_SPACE))
        if len(value) <= _KEPT_LENGTH:
            if len(_KEPT) >= _KEPT_COUNT:
                _KEPT.clear()
            _KEPT[value] = parsed
        return parsed
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, Decimal):  # a JSON number a float cannot hold (``json_number``): its digits
        if value.is_nan():
            raise QuantityError("NaN is not a quantity")
        return parse_quantity_string(str(value)) if value.is_finite() else BOUND if value > 0 else _MINUS_BOUND
    if isinstance(value, int):
        return _held(Decimal(value))
    if isinstance(value, float):
        if math.isnan(value):
            raise QuantityError("NaN is not a quantity")
        if math.isinf(value):
            # a JSON number too large for a float (1e400): Go reads its text, a number beyond any node
            return BOUND if value > 0 else _MINUS_BOUND
        return parse_quantity_string(repr(value))
    raise QuantityError(f"{shown(value)} is not a quantity")


def quantity_or_none(value: object) -> Decimal | None:
    """The quantity, or ``None`` when the value is not one (absent or malformed)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def parse_quantity_string(text: str) -> Decimal:
    """``text`` as apimachinery's ``resource.ParseQuantity`` reads it (no whitespace around it), within ``BOUND``."""
    if len(text) <= BOUND_DIGITS and text.isascii() and text.isdigit():
        return Decimal(text)  # the usual "4": a whole number below BOUND, as it is
    match = _SCAN.fullmatch(text) if text else None
    if match is None:
        raise QuantityError(f"{shown(text)} is not a quantity (e.g. 4, 500m, 20Gi)")
    sign, whole, fraction, suffix = match.groups()
    negative = sign == "-"
    fraction = fraction or ""
    base, exponent = _suffix(text, suffix)
    num = whole.lstrip("0") or "0"  # the scanner drops leading zeros, and an empty whole part is 0
    digits = num + fraction
    # ParseQuantity's fast path reads num and fraction as an int64 and needs no rounding;
    # its slow path reads the number's text with inf.Dec, which needs at least one digit.
    if base == 10:
        precision = 18 - len(digits)
        scale = _int32(exponent - len(fraction))
        fast = precision >= 0 and scale >= -9
    else:
        precision = 15 - len(num) - exponent * 3 // 10 - 1 if not fraction else -1
        fast = precision >= 0
    if not fast and not (whole or fraction):
        raise QuantityError(f"{shown(text)} is not a quantity: it has no digits")
    if base == 10:
        # the slow path's scale is the number's (its fraction digits) minus the exponent, an int32 too
        return _decimal(negative, digits, scale if fast else -_int32(len(fraction) - exponent))
    return _binary(negative, digits, len(fraction), exponent)


def _suffix(text: str, suffix: str) -> tuple[int, int]:
    """``quantitySuffixer.interpret``: (base, exponent)."""
    if suffix in _DECIMAL_SI:
        return 10, _DECIMAL_SI[suffix]
    if suffix in _BINARY_SI:
        return 2, _BINARY_SI[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix, 1):
        sign = "-" if suffix[1] == "-" else ""
        magnitude = suffix[1:].lstrip("+-").lstrip("0") or "0"
        if len(magnitude) <= 19:  # more digits are out of int64's range whatever they are
            parsed = int(sign + magnitude)
            if -_INT64 <= parsed < _INT64:
                return 10, _int32(parsed)
        raise QuantityError(f"{shown(text)} is not a quantity: its exponent is out of a 64-bit integer's range")
    raise QuantityError(f"{shown(text)} is not a quantity: unknown suffix {shown(suffix)} (e.g. m, Ki, Gi, e3)")


def _int32(value: int) -> int:
    """``value`` as Go's ``int32`` holds it: wrapped into [-2^31, 2^31)."""
    return (value + _INT32 // 2) % _INT32 - _INT32 // 2


def _decimal(negative: bool, digits: str, exponent: int) -> Decimal:
    """±``digits`` × 10^``exponent``, rounded up to a whole nano, held within ``BOUND``."""
    significant = digits.lstrip("0")
    if not significant:
        return ZERO
    top = len(significant) - 1 + exponent  # 10^top <= magnitude < 10^(top + 1)
    if top >= BOUND_DIGITS:
        return _MINUS_BOUND if negative else BOUND
    if top < -9:
        return _MINUS_NANO if negative else NANO  # 0 < magnitude < 1n: one nano
    value = Decimal(f"{'-' if negative else ''}{significant}E{exponent}")
    return value.quantize(NANO, ROUND_UP, CONTEXT) if exponent < -9 else value


def _binary(negative: bool, digits: str, fraction_digits: int, exponent: int) -> Decimal:
    """±``digits`` × 10^-``fraction_digits`` × 2^``exponent``, rounded up to a whole nano, capped at 2^63-1."""
    significant = digits.lstrip("0")
    if not significant:
        return ZERO
    top = len(significant) - 1 - fraction_digits  # 10^top <= magnitude before the suffix
    if top >= 19:  # at least 10^19 × 2^10: over the cap
        return _capped(negative)
    if top < -28:  # under 10^-27 × 2^60 < 1n
        return _MINUS_NANO if negative else NANO
    sign = "-" if negative else ""
    if not fraction_digits:  # "20Gi": at most 19 digits times 2^60, exact as an integer
        whole = int(significant) << exponent
        return Decimal(-whole if negative else whole) if whole <= _MAX_ALLOWED_INT else _capped(negative)
    # fraction_digits may be long (1 followed by a million digits), but top bounds the result
    number = Decimal(f"{sign}{significant}E-{fraction_digits}")
    # the product has at most 19 digits more than the number, its nano rounding 9 more again
    exact = Context(prec=len(significant) + 28, Emin=CONTEXT.Emin, Emax=CONTEXT.Emax, traps=CONTEXT.traps)
    value = exact.multiply(number, Decimal(2**exponent))
    if fraction_digits > 9:  # the product's exponent is the number's: finer than a nano, round it up
        value = value.quantize(NANO, ROUND_UP, exact)
    return _capped(negative) if value.copy_abs() > MAX_ALLOWED else value


def _capped(negative: bool) -> Decimal:
    return _MINUS_MAX_ALLOWED if negative else MAX_ALLOWED


def _held(value: Decimal) -> Decimal:
    """A JSON integer held within ``BOUND`` (an integer needs no rounding)."""
    if value.adjusted() >= BOUND_DIGITS:
        return BOUND if value > 0 else _MINUS_BOUND
    return value
