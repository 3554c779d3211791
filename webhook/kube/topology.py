"""TPU topologies (``AxBxC``) and the two whitelists of RFC-0033.

Parsing is separate from judging: ``parse_topology`` only reads the grammar;
``super_slice_problems`` lists every way a value breaks the super-slice whitelist,
so the deny message can say all of them at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol

#: the node label of a static node pool, the topology level of one static slice (RFC-0033: one slice
#: is one node pool)
NODEPOOL_LABEL: Final = "cloud.google.com/gke-nodepool"

_GRAMMAR: Final = re.compile(r"^([0-9]{1,6})x([0-9]{1,6})x([0-9]{1,6})$")


class TopologyError(ValueError):
    """The text is not of the form ``AxBxC`` with positive integers."""


@dataclass(frozen=True, slots=True)
class Topology:
    dims: tuple[int, int, int]

    @property
    def chips(self) -> int:
        a, b, c = self.dims
        return a * b * c

    def __str__(self) -> str:
        return "x".join(str(d) for d in self.dims)


@lru_cache(maxsize=256)  # a handful of distinct values; rules ask for the same ones
def parse_topology(text: str) -> Topology:
    match = _GRAMMAR.fullmatch(text)
    if match is None:
        raise TopologyError(f"{text!r} is not of the form AxBxC (three positive integers, e.g. 4x4x4)")
    a, b, c = (int(part) for part in match.groups())
    if 0 in (a, b, c):
        raise TopologyError(f"{text!r} has a zero dimension; each dimension must be positive")
    return Topology((a, b, c))


class SuperSliceLimits(Protocol):
    """The super-slice whitelist's numbers (the policy's ``tpu.superSlice`` is one)."""

    @property
    def dimension_multiple(self) -> int: ...
    @property
    def min_topology(self) -> str: ...
    @property
    def max_chips(self) -> int: ...
    @property
    def sub_block_chips(self) -> int: ...
    @property
    def max_sub_blocks(self) -> int: ...


@lru_cache(maxsize=256)  # asked by two rules per podSet, for a handful of distinct values
def super_slice_problems(topology: Topology, limits: SuperSliceLimits) -> tuple[str, ...]:
    """Every reason ``topology`` is not an allowed super-slice (empty when it is)."""
    a, b, c = topology.dims
    problems = []
    if not a <= b <= c:
        problems.append("dimensions must be non-decreasing (A ≤ B ≤ C)")
    off = [d for d in topology.dims if d % limits.dimension_multiple]
    if off:
        problems.append(f"each dimension must be a multiple of {limits.dimension_multiple}")
    minimum = parse_topology(limits.min_topology)
    if any(d < m for d, m in zip(sorted(topology.dims), minimum.dims, strict=True)):
        problems.append(f"the smallest super-slice is {minimum}")
    if topology.chips > limits.max_chips:
        problems.append(f"{topology.chips} chips exceeds the maximum of {limits.max_chips}")
    sub_blocks, remainder = divmod(topology.chips, limits.sub_block_chips)
    if remainder == 0 and sub_blocks > limits.max_sub_blocks:
        problems.append(
            f"{sub_blocks} sub-blocks of {limits.sub_block_chips} chips exceeds the maximum of {limits.max_sub_blocks}"
        )
    return tuple(problems)
