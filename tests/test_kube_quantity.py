"""Quantities as the API server reads them (``webhook/kube/quantity.py``), held to apimachinery's own tests.

The Pods made from a JobSet get the value apimachinery's ``resource.ParseQuantity`` gives,
not ours, so the tables below restate, as facts, the cases of
k8s.io/apimachinery ``pkg/api/resource/quantity_test.go`` (commit 02f7088a48902f112f0986b220fa7e557b71a628):
TestQuantityParse (its table, run as written, with a ``-`` and with a ``+`` before it; its
invalid list), TestParseQuantityString, TestQuantityString, TestQuantityParseEmit,
TestParseQuantity, TestJSONWhitespace, TestQuantityParseZero, TestQuantityParseNonNumericPanic,
TestQuantityCmp, TestQuantityDeepCopy, TestQuantityRoundUp, TestStringQuantityAsApproximateFloat64
and TestQuantityValueSet. ``HUGE`` adds what ``quantity.go`` (same commit) does where those
tests do not look: exponents read by ``strconv.ParseInt`` and kept as an ``int32``, digits
without end, suffixes alone. Each case is (input, the value Go gives), ``None`` where Go
refuses the input.

Where Go's value is 10^31 or more, ours is held at 10^31 (``BOUND``) by design; everywhere
else the two agree exactly (``test_agreement_with_apimachinery``).
"""

from __future__ import annotations

import json
import time
from decimal import Decimal, localcontext
from typing import Final

import pytest

from webhook.kube import quantity
from webhook.kube.quantity import BOUND, MAX_ALLOWED, NANO, QuantityError, parse_quantity, parse_quantity_string

# fmt: off
# TestQuantityParse: its table, each also run with a "-" and a "+" before it (``_signed``)
PARSE: Final = [
    ("0", "0"), ("0n", "0"), ("0u", "0"), ("0m", "0"), ("0Ki", "0"), ("0k", "0"), ("0Mi", "0"), ("0M", "0"),
    ("0Gi", "0"), ("0G", "0"), ("0Ti", "0"), ("0T", "0"), ("1", "1"), ("1Ki", "1024"), ("8Ki", "8192"),
    ("7Mi", "7340032"), ("6Gi", "6442450944"), ("5Ti", "5497558138880"), ("4Pi", "4503599627370496"),
    ("3Ei", "3458764513820540928"), ("10Ti", "10995116277760"), ("100Ti", "109951162777600"), ("5n", "0.000000005"),
    ("4u", "0.000004"), ("3m", "0.003"), ("9", "9"), ("8k", "8000"), ("50k", "50000"), ("7M", "7000000"),
    ("6G", "6000000000"), ("5T", "5000000000000"), ("40T", "40000000000000"), ("300T", "300000000000000"),
    ("2P", "2000000000000000"), ("1E", "1000000000000000000"), ("1E-3", "0.001"), ("1e3", "1000"),
    ("1E6", "1000000"), ("1e9", "1000000000"), ("1E12", "1000000000000"), ("1e15", "1000000000000000"),
    ("1E18", "1000000000000000000"), ("1e14", "100000000000000"), ("1e13", "10000000000000"), ("1e3", "1000"),
    ("100.035k", "100035"), ("0.001", "0.001"), ("0.0005k", "0.5"), ("0.005", "0.005"), ("0.05", "0.05"),
    ("0.5", "0.5"), ("0.00050k", "0.5"), ("0.00500", "0.005"), ("0.05000", "0.05"), ("0.50000", "0.5"),
    ("0.5e0", "0.5"), ("0.5e-1", "0.05"), ("0.5e-2", "0.005"), ("0.5e0", "0.5"), ("10.035M", "10035000"),
    ("1.2e3", "1200"), ("1.3E+6", "1300000"), ("1.40e9", "1400000000"), ("1.53E12", "1530000000000"),
    ("1.6e15", "1600000000000000"), ("1.7E18", "1700000000000000000"), ("9.01", "9.01"), ("8.1k", "8100"),
    ("7.123456M", "7123456"), ("6.987654321G", "6987654321"), ("5.444T", "5444000000000"),
    ("40.1T", "40100000000000"), ("300.2T", "300200000000000"), ("2.5P", "2500000000000000"),
    ("1.01E", "1010000000000000000"), ("3.001n", "0.000000004"), ("1.1E-9", "0.000000002"),
    ("0.0000000001", "0.000000001"), ("0.0000000005", "0.000000001"), ("0.00000000050", "0.000000001"),
    ("0.5e-9", "0.000000001"), ("0.9n", "0.000000001"), ("0.00000012345", "0.000000124"),
    ("0.00000012354", "0.000000124"), ("9Ei", "9223372036854775807"),
    ("9223372036854775807Ki", "9223372036854775807"), ("12E", "12000000000000000000"), ("100.035Ki", "102435.84"),
    ("0.5Mi", "524288"), ("0.05Gi", "53687091.2"), ("0.025Ti", "27487790694.4"), ("0.000000000001Ki", "0.000000002"),
    (".001", "0.001"), (".0001k", "0.1"), ("1.", "1"), ("1.G", "1000000000"),
]

# TestQuantityParse: the empty string and its invalid list; TestQuantityParseNonNumericPanic;
# TestQuantityValueSet ("invalid")
INVALID: Final = ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]
INVALID += ["Non-Numeric", "invalid"]
# TestQuantityString: each canonical form, then each alternate, parsed
STRING: Final = [
    ("1Gi", "1073741824"), ("300Mi", "314572800"), ("6Ki", "6144"), ("1001Gi", "1074815565824"),
    ("1Ti", "1099511627776"), ("5", "5"), ("500m", "0.5"), ("1G", "1000000000"), ("1G", "1000000000"),
    ("1G", "1000000000"), ("1G", "1000000000"), ("1m", "0.001"), ("80m", "0.08"), ("1080m", "1.08"),
    ("1080m", "1.08"), ("1080m", "1.08"), ("300M", "300000000"), ("1T", "1000000000000"),
    ("1234567M", "1234567000000"), ("1234567m", "1234.567"), ("3k", "3000"), ("1025", "1025"), ("0", "0"),
    ("0", "0"), ("1e9", "1000000000"), ("1e-3", "0.001"), ("1e-9", "0.000000001"), ("80e-3", "0.08"),
    ("300e6", "300000000"), ("1e12", "1000000000000"), ("1e3", "1000"), ("3e3", "3000"), ("3k", "3000"), ("0", "0"),
    ("1n", "0.000000001"), ("80n", "0.00000008"), ("1080n", "0.00000108"), ("1080n", "0.00000108"),
    ("1080n", "0.00000108"), ("1u", "0.000001"), ("80u", "0.00008"), ("1080u", "0.00108"), ("1024Mi", "1073741824"),
    ("307200Ki", "314572800"), ("1025024Mi", "1074815565824"), ("1024Gi", "1099511627776"), ("5000m", "5"),
    ("0.5", "0.5"), ("1000M", "1000000000"), ("0.001T", "1000000000"), ("1000u", "0.001"), ("1.08", "1.08"),
    ("1080000000n", "1.08"), (".001e12", "1000000000"), ("0.001e0", "0.001"), ("1000e-12", "0.000000001"),
    ("00", "0"),
]

# TestParseQuantityString: what the scanner splits out; its value follows from the parts
SCAN: Final = [
    ("0.025Ti", "27487790694.4"), ("1.025Ti", "1126999418470.4"), ("-1.025Ti", "-1126999418470.4"), (".", "0"),
    ("-.", "0"), ("1E-3", "0.001"),
]
# TestQuantityParseEmit: each input, as written and with a "-", is its canonical output
# (1Ki 1024, 1Mi 2^20, 1Gi 2^30, 1G 10^9, 1024m 1.024, 1024u 0.001024, 1024n 0.000001024, 2n)
EMIT: Final = [
    ("1Ki", "1024"), ("1Mi", "1048576"), ("1Gi", "1073741824"), ("1024Mi", "1073741824"), ("1000M", "1000000000"),
    (".001Ki", "1.024"), (".000001Ki", "0.001024"), (".000000001Ki", "0.000001024"), (".000000000001Ki", "0.000000002"),
]
# TestParseQuantity: input, wantAsDec
PARSE_QUANTITY: Final = [
    ("-999999999999999999", "-999999999999999999"), ("999999999999999999", "999999999999999999"),
    ("-999999999999999999.0", "-999999999999999999"), ("999999999999999999.0", "999999999999999999"),
    ("-999999999999999999.1", "-999999999999999999.1"), ("999999999999999999.1", "999999999999999999.1"),
    ("-9999999999999999999", "-9999999999999999999"), ("9999999999999999999", "9999999999999999999"),
    ("-1E", "-1000000000000000000"), ("1E", "1000000000000000000"), ("-1000000000000000000", "-1000000000000000000"),
    ("1000000000000000000", "1000000000000000000"), ("-9999999999999999999.0", "-9999999999999999999"),
    ("9999999999999999999.0", "9999999999999999999"), ("-1.0E", "-1000000000000000000"),
    ("1.0E", "1000000000000000000"), ("-1000000000000000000.0", "-1000000000000000000"),
    ("1000000000000000000.0", "1000000000000000000"), ("-9999999999999999999000m", "-9999999999999999999"),
    ("9999999999999999999000m", "9999999999999999999"), ("-9999999999999999999.1", "-9999999999999999999.1"),
    ("9999999999999999999.1", "9999999999999999999.1"), ("-1.0000000000000000001E", "-1000000000000000000.1"),
    ("1.0000000000000000001E", "1000000000000000000.1"), ("-1000000000000000000.1", "-1000000000000000000.1"),
    ("1000000000000000000.1", "1000000000000000000.1"), ("-1.000000000000000001E", "-1000000000000000001"),
    ("1.000000000000000001E", "1000000000000000001"), ("-1000000000000000001", "-1000000000000000001"),
    ("1000000000000000001", "1000000000000000001"), ("-10E", "-10000000000000000000"),
    ("10E", "10000000000000000000"), ("-10000000000000000000", "-10000000000000000000"),
    ("10000000000000000000", "10000000000000000000"), ("-10.0E", "-10000000000000000000"),
    ("10.0E", "10000000000000000000"), ("-10000000000000000000.0", "-10000000000000000000"),
    ("10000000000000000000.0", "10000000000000000000"), ("-10000000000000000000000m", "-10000000000000000000"),
    ("10000000000000000000000m", "10000000000000000000"), ("-10.0000000000000000001E", "-10000000000000000000.1"),
    ("10.0000000000000000001E", "10000000000000000000.1"), ("-10000000000000000000.1", "-10000000000000000000.1"),
    ("10000000000000000000.1", "10000000000000000000.1"), ("-10.000000000000000001E", "-10000000000000000001"),
    ("10.000000000000000001E", "10000000000000000001"), ("-10000000000000000001", "-10000000000000000001"),
    ("10000000000000000001", "10000000000000000001"), ("-9223372036854775809", "-9223372036854775809"),
    ("9223372036854775806", "9223372036854775806"), ("-9223372036854775809.0", "-9223372036854775809"),
    ("9223372036854775806.0", "9223372036854775806"), ("-9223372036854775809000m", "-9223372036854775809"),
    ("9223372036854775806000m", "9223372036854775806"), ("-9223372036854775809.1", "-9223372036854775809.1"),
    ("9223372036854775806.1", "9223372036854775806.1"), ("-9223372036854775808", "-9223372036854775808"),
    ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808.0", "-9223372036854775808"),
    ("9223372036854775807.0", "9223372036854775807"), ("-9223372036854775808000m", "-9223372036854775808"),
    ("9223372036854775807000m", "9223372036854775807"), ("-9223372036854775808.1", "-9223372036854775808.1"),
    ("9223372036854775807.1", "9223372036854775807.1"), ("-9223372036854775807", "-9223372036854775807"),
    ("9223372036854775808", "9223372036854775808"), ("-9223372036854775807.0", "-9223372036854775807"),
    ("9223372036854775808.0", "9223372036854775808"), ("-9223372036854775807000m", "-9223372036854775807"),
    ("9223372036854775808000m", "9223372036854775808"), ("-9223372036854775807.1", "-9223372036854775807.1"),
    ("9223372036854775808.1", "9223372036854775808.1"),
]

# TestQuantityParseZero, TestQuantityCmp and TestQuantityDeepCopy (their inputs), TestQuantityRoundUp
# (its two inputs), TestStringQuantityAsApproximateFloat64 (its outputs are exact here), TestQuantityValueSet
OTHERS: Final = [
    ("0", "0"), ("100m", "0.1"), ("50m", "0.05"), ("10000T", "10000000000000000"), ("100Gi", "107374182400"),
    ("9.01", "9.01"), ("-9.01", "-9.01"), ("2Ki", "2048"), ("1.1Ki", "1126.4"), ("1Mi", "1048576"),
    ("2Gi", "2147483648"),
]
#: TestQuantityCmp's string pairs: x, y and the sign of x - y
CMP: Final = [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)]
#: TestJSONWhitespace: the JSON a value arrives as, and the quantity it is
JSON_TEXT: Final = [
    ('" 1"', "1"), ('"1 "', "1"), ("1", "1"), (" 1", "1"), ("1 ", "1"), ("10", "10"), ("-1", "-1"), (" -1", "-1"),
]
# fmt: on


#: What quantity.go's ParseQuantity does where its tests do not look (read from the code):
#: the exponent is ``strconv.ParseInt(s, 10, 64)`` (an error past int64) converted to ``int32``
#: (it wraps), the fast path's scale is ``int32`` arithmetic too, the slow path reads the digits
#: with inf.Dec (an error without any) and rounds a non-zero magnitude up to 1n, a binary
#: suffix caps at 2^63-1, and a decimal one is never capped.
HUGE: Final = [
    ("1e400", "1e400"),  # the fast path keeps int64Amount{1, 400}: exact
    ("1e+400", "1e400"),
    ("-1E400", "-1e400"),
    ("1e999999", "1e999999"),
    ("1e1000000", "1e1000000"),
    ("1" + "0" * 1000, "1e1000"),  # the JobSet CRD's pattern accepts it; the slow path keeps it exact
    ("9" * 100_000, "9" * 100_000),
    ("1e2147483647", "1e2147483647"),
    ("1e2147483648", "1e2147483648"),  # int32 wraps to -2^31; the slow path's scale wraps back to 10^(2^31)
    ("1e-2147483648", "1e2147483648"),  # the same int32
    ("1e-2147483647", "0.000000001"),  # 10^-2147483647, rounded up to 1n
    ("1.5e-2147483648", "15e2147483647"),  # the fast path's scale -2^31 - 1 wraps to 2^31 - 1
    ("1.5e2147483647", "15e2147483646"),
    ("1" + "0" * 18 + "e2147483647", "1e2147483665"),  # 19 digits: the slow path, no wrap
    ("1e4294967296", "1"),  # int32(2^32) is 0
    ("1e4294967299", "1000"),
    ("1e9223372036854775807", "0.1"),  # int32(2^63 - 1) is -1
    ("1e-9223372036854775808", "1"),  # int32(-2^63) is 0
    ("1e9223372036854775808", None),  # past int64: ParseInt's range error
    ("1e-9223372036854775809", None),
    ("1e99999999999999999999", None),
    ("1e" + "0" * 5000 + "3", "1000"),  # ParseInt takes leading zeros
    ("0e2147483647", "0"),
    ("0." + "0" * 1000 + "1", "0.000000001"),
    ("1e-10", "0.000000001"),
    ("4.0000000000000000000000000001", "4.000000001"),  # not 4: 29 digits, rounded up to 1n
    ("10000000000000000000000000001", "10000000000000000000000000001"),  # 29 digits, exact
    ("1Pi", "1125899906842624"),  # binary: the slow path, no cap below 2^63
    ("7Ei", "8070450532247928832"),
    ("8Ei", "9223372036854775807"),  # 2^63: capped
    ("-9Ei", "-9223372036854775807"),
    ("1.0000000001Ki", "1024.000000103"),
    ("+", "0"),  # the scanner returns at the end: num "0"
    ("-", "0"),
    ("+.", "0"),
    ("Ki", "0"),  # a suffix alone: num "0", the fast path
    ("Ti", "0"),
    (".Ki", "0"),
    ("e5", "0"),
    ("Pi", None),  # 2^50 needs the slow path, which finds no digits
    ("Ei", None),
    ("e-10", None),  # scale -10: the slow path
    (".e-10", None),
    ("+e-10", None),
    ("1e", None),  # a suffix of one "e" is no exponent
    ("1e+", None),
    ("1ee3", None),
    ("1K", None),
    ("1Ki3", None),
    ("1e1.5", None),  # the CRD's pattern accepts it; the scanner does not
    ("0x10", None),
    ("1_000", None),  # Python's Decimal would take it
    ("\u0661", None),  # an Arabic-Indic one: ASCII digits only
]


def _signed(pairs: list[tuple[str, str]]) -> list[tuple[str, str | None]]:
    """TestQuantityParse's three runs: each input as written, with a "-" (its value negated) and with a "+"."""
    out: list[tuple[str, str | None]] = []
    for text, value in pairs:
        negated = str(-Decimal(value)) if Decimal(value) else "0"
        out += [(text, value), ("-" + text, negated), ("+" + text, value)]
    return out


def _negated(pairs: list[tuple[str, str]]) -> list[tuple[str, str | None]]:
    return [(text, value) for text, value in pairs] + [("-" + text, str(-Decimal(value))) for text, value in pairs]


#: every case: (where it comes from, input, Go's value or None)
CASES: Final[list[tuple[str, str, str | None]]] = [
    *(("TestQuantityParse", text, value) for text, value in _signed(PARSE)),
    *(("invalid", text, None) for text in INVALID),
    *(("TestQuantityString", text, value) for text, value in STRING),
    *(("TestParseQuantityString", text, value) for text, value in SCAN),
    *(("TestQuantityParseEmit", text, value) for text, value in _negated(EMIT)),
    *(("TestParseQuantity", text, value) for text, value in PARSE_QUANTITY),
    *(("other tests", text, value) for text, value in OTHERS),
    *(("quantity.go", text, value) for text, value in HUGE),
]


def _ours(text: str) -> Decimal | None:
    try:
        return parse_quantity_string(text)
    except QuantityError:
        return None


def _held(value: Decimal) -> Decimal:
    """Go's value as ours holds it: within BOUND."""
    return max(-BOUND, min(BOUND, value))


def _id(case: tuple[str, str, str | None]) -> str:
    return f"{case[0]}: {case[1][:40]!r}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_apimachinerys_cases(case: tuple[str, str, str | None]) -> None:
    _, text, go = case
    ours = _ours(text)
    if go is None:
        assert ours is None, f"{text!r} is no quantity to the API server"
    else:
        assert ours is not None, f"{text!r} is a quantity to the API server"
        assert ours == _held(Decimal(go))


def test_agreement_with_apimachinery() -> None:
    """Exactly the values Go gives, but where they are 10^31 or more: held at 10^31 (and refused by node capacity)."""
    differing = [text for _, text, go in CASES if _ours(text) != (None if go is None else Decimal(go))]
    beyond = [text for _, text, go in CASES if go is not None and Decimal(go).copy_abs() > BOUND]
    assert differing == beyond
    assert (len(CASES) - len(differing), len(CASES)) == (AGREED, len(CASES))
    assert len(CASES) == TOTAL


#: the counts the report gives: cases, and those where ours is Go's exact value
TOTAL: Final = 519
AGREED: Final = 506


@pytest.mark.parametrize(("x", "y", "sign"), CMP)
def test_quantities_compare_as_in_go(x: str, y: str, sign: int) -> None:
    difference = parse_quantity(x) - parse_quantity(y)
    assert (difference > 0) - (difference < 0) == sign


@pytest.mark.parametrize(("text", "value"), JSON_TEXT)
def test_a_json_value_is_trimmed_as_unmarshal_json_trims_it(text: str, value: str) -> None:
    assert parse_quantity(json.loads(text)) == Decimal(value)


# ---------------------------------------------------------------- the values the objects hold


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4", 4),
        (4, 4),
        ("500m", Decimal("0.5")),
        ("20Gi", 20 * 2**30),
        ("1e3", 1000),
        ("1.5k", 1500),
        ("100000Gi", 100000 * 2**30),
        (2.5, Decimal("2.5")),
        (1e-10, NANO),  # a JSON number is read as its text: 1e-10, rounded up to 1n
        (1e300, BOUND),
        (float("inf"), BOUND),  # a JSON 1e400: Python's json reads infinity, Go the number
        (float("-inf"), -BOUND),
        (10**40, BOUND),
        (-(10**40), -BOUND),
        (2**63, Decimal(2**63)),
        ("\u3000 4\t", 4),  # Go's TrimSpace: Unicode spaces
    ],
)
def test_quantities(value: object, expected: object) -> None:
    assert parse_quantity(value) == Decimal(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value", ["", "four", "4 Gi", "4GiB", True, None, [4], "4\n4", float("nan"), "NaN", "Infinity", "\x1c4", "4\x1f"]
)
def test_not_quantities(value: object) -> None:
    """``NaN`` (a JSON number Python's json reads) is none, nor is what only Python's ``strip`` trims."""
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_a_long_quantity_is_parsed() -> None:
    """Any number of digits is a quantity."""
    assert parse_quantity("0" * 300 + "4") == Decimal(4)
    assert parse_quantity("0" * 255 + "4") == Decimal(4)


def test_every_value_is_exact_and_ordered_whatever_the_callers_context() -> None:
    """The parser works in its own context: a caller's 5 digits (or 28) round nothing, and
    no value is NaN or infinite, so every comparison on one is safe."""
    texts = [text for _, text, go in CASES if go is not None]
    with localcontext(prec=5):
        values = [parse_quantity_string(text) for text in texts]
    assert values == [parse_quantity_string(text) for text in texts]
    assert all(value.is_finite() and -BOUND <= value <= BOUND for value in values)
    assert sorted(values)[0] == -BOUND and sorted(values)[-1] == BOUND  # an ordering comparison never raises
    assert parse_quantity("10000000000000000000000000001") > Decimal("1e28")  # the default context said equal
    assert parse_quantity("9223372036854775807Ki") == MAX_ALLOWED


SLOW: Final = [
    "1" + "0" * 3_000_000,
    "9" * 3_000_000 + "e-2999990",
    "0." + "0" * 3_000_000 + "1",
    "1." + "7" * 3_000_000 + "Ki",
    "0." + "0" * 3_000_000 + "1Ei",
    "1" * 3_000_000 + "e2147483647",
    "1" * 3_000_000 + "e-2147483648",
    "1e" + "0" * 3_000_000 + "1",
]
SLOW_INVALID: Final = ["1" + "." * 3_000_000, "1" + "k" * 3_000_000, "1e" + "9" * 3_000_000]


@pytest.mark.parametrize("text", SLOW + SLOW_INVALID, ids=lambda text: f"{text[:12]}...{text[-12:]}")
def test_a_parse_takes_under_a_second(text: str) -> None:
    """Whatever an object of the API server's largest size holds (3 MB of one quantity), a
    parse is done within a second: no exponent is ever expanded into digits."""
    started = time.perf_counter()
    assert (_ours(text) is None) is (text in SLOW_INVALID)
    assert time.perf_counter() - started < 1.0


def test_strings_read_again_are_kept_within_bounds() -> None:
    """A value read again is a lookup; no stream of odd values grows what is kept past its bound."""
    assert quantity.parse_quantity(" 20Gi") == quantity.parse_quantity(" 20Gi") == Decimal(20 * 2**30)
    for i in range(quantity._KEPT_COUNT + 10):
        quantity.parse_quantity(f"{i}m")
    assert len(quantity._KEPT) <= quantity._KEPT_COUNT
    long = "0" * quantity._KEPT_LENGTH + "20Gi"
    assert quantity.parse_quantity(long) == Decimal(20 * 2**30) and long not in quantity._KEPT
    with pytest.raises(quantity.QuantityError):  # a refused one is refused again, never kept
        quantity.parse_quantity("x20")
    assert "x20" not in quantity._KEPT


@pytest.mark.parametrize(
    ("text", "kept", "expected"),
    [
        ("0.5", 0.5, "0.5"),
        ("1e3", 1000.0, "1000"),
        ("0.1", 0.1, "0.1"),
        ("0e5", 0.0, "0"),
        # more digits than a float64 holds: the text, rounded up at the nano as the API server does
        ("1.0000000000000000001", Decimal("1.0000000000000000001"), "1.000000001"),
        ("123456789.123456789", Decimal("123456789.123456789"), "123456789.123456789"),
        # beyond a float64's range: the text again (held at BOUND), and under a nano: one nano
        ("1e400", Decimal("1e400"), str(BOUND)),
        ("-1e400", Decimal("-1e400"), str(-BOUND)),
        ("1e-400", Decimal("1e-400"), str(NANO)),
    ],
)
def test_a_json_number_is_read_as_the_text_it_was(text: str, kept: object, expected: str) -> None:
    value = quantity.json_number(text)
    assert value == kept and type(value) is type(kept)
    assert parse_quantity(value) == Decimal(expected)


def test_a_json_number_is_read_as_its_text_by_the_servers_reader() -> None:
    from webhook.objects.jsontext import plain_json

    data = plain_json(b'{"cpu": 1.0000000000000000001, "mem": 0.5, "big": 1e400}')
    assert data == {"cpu": Decimal("1.0000000000000000001"), "mem": 0.5, "big": Decimal("1e400")}


def test_a_message_shows_a_clipped_value() -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity([["x" * 1000] * 1000] * 1000)
    assert len(str(caught.value)) < 200
    with pytest.raises(QuantityError) as caught:
        parse_quantity("4" * 100_000 + "zz")
    assert len(str(caught.value)) < 200


def test_a_json_number_is_read_as_its_text_by_the_reviews_general_path() -> None:
    from webhook.wire.reviews import parse_review_general

    body = (
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", '
        b'"operation": "CREATE", "object": {"cpu": 1.0000000000000000001, "mem": 0.5}}}'
    )
    assert parse_review_general(body).object == {"cpu": Decimal("1.0000000000000000001"), "mem": 0.5}
