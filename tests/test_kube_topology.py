"""The topology grammar and the super-slice whitelist, by example and by property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.kube.topology import Topology, TopologyError, parse_topology, super_slice_problems
from webhook.policy.config import SuperSlicePolicy

LIMITS = SuperSlicePolicy()
dims = st.integers(min_value=1, max_value=64)


@given(dims, dims, dims)
def test_grammar_round_trips(a: int, b: int, c: int) -> None:
    topology = parse_topology(f"{a}x{b}x{c}")
    assert topology == Topology((a, b, c)) and str(topology) == f"{a}x{b}x{c}"
    assert topology.chips == a * b * c


@given(st.text(max_size=20))
def test_anything_else_is_a_topology_error_never_a_crash(text: str) -> None:
    try:
        topology = parse_topology(text)
    except TopologyError as exc:
        assert repr(text) in str(exc)
    else:
        assert str(topology) == text


@pytest.mark.parametrize(
    "text", ["", "4x4", "4x4x4x4", "4X4X4", " 4x4x4", "4x4x4\n", "0x4x4", "-4x4x4", "4.0x4x4", "٤x4x4"]
)
def test_malformed_topologies(text: str) -> None:
    with pytest.raises(TopologyError):
        parse_topology(text)


@given(dims, dims, dims)
def test_whitelist_matches_its_definition(a: int, b: int, c: int) -> None:
    """Allowed ⇔ non-decreasing, multiples of 4, ≥ 4x4x4, ≤ 9216 chips, ≤ 32 sub-blocks of 64."""
    chips = a * b * c
    allowed = a <= b <= c and a % 4 == b % 4 == c % 4 == 0 and a >= 4 and chips <= 9216 and chips // 64 <= 32
    assert (super_slice_problems(Topology((a, b, c)), LIMITS) == ()) == allowed


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("8x4x4", "non-decreasing"),
        ("4x4x6", "multiple of 4"),
        ("16x16x16", "64 sub-blocks"),
        ("16x24x24", "144 sub-blocks"),
        ("24x24x24", "13824 chips exceeds the maximum of 9216"),
    ],
)
def test_every_reason_is_named(text: str, fragment: str) -> None:
    assert any(fragment in problem for problem in super_slice_problems(parse_topology(text), LIMITS))


def test_all_reasons_at_once() -> None:
    problems = super_slice_problems(parse_topology("6x2x1"), LIMITS)
    assert len(problems) == 3  # order, multiple, minimum
