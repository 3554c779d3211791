"""Choices of flavors for several podSets together: could any choice ever hold them all?

Kueue assigns podSets in order, each to the first flavor of its resource group that fits
*now*, so which flavor an earlier podSet takes depends on usage: with the default
``whenCanPreempt: TryNextFlavor`` a podSet that would need preemption on one flavor moves
on to the next (kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner``,
``shouldTryNextFlavor``), and later podSets are judged against what it took there. With
the right usage elsewhere in the cluster, any choice of eligible flavors whose sums fit the
queue's potential quota can be the one Kueue makes. So the gate asks whether *some* choice
could ever hold the podSets together: per flavor and resource, the sum over the podSets
that chose it within the bound.

A *slot* is one podSet's resource group; its options are the flavors of the group the
podSet could take, in the group's order. The search is depth first in Kueue's order
(podSets in order, flavors in group order), so the first choice it finds is Kueue's own at
zero usage whenever that one fits; a partial choice already past an upper bound is cut
(sums only grow). It tries at most ``LIMIT`` options; past that the answer is unknown,
never a guess, and each request's cost stays bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from webhook.kueue.potential import Bound

ZERO = Decimal(0)
#: options tried per question, at most (a few podSets of a few flavors need a few dozen)
LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Option:
    """A flavor a slot could take, and what the podSet takes of it."""

    flavor: str
    #: (resource, amount), sorted by resource
    wanted: tuple[tuple[str, Decimal], ...]
    #: why the flavor might not be eligible; empty when it is
    doubt: str = ""


@dataclass(frozen=True, slots=True)
class Doubt:
    """Why a choice might not hold: a flavor whose eligibility is unknown (``text``), or a sum past
    what the bound certainly holds (``resource``, ``amount``, ``bound``)."""

    slot: int
    flavor: str
    resource: str = ""
    amount: Decimal = ZERO
    bound: Bound | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Choice:
    """The answer: ``fit`` (a choice holds for certain), ``unknown``, or ``nofit`` (no choice ever could)."""

    status: str
    #: per slot, the option taken: the certain choice (``fit``), the first possible one (``unknown``), else empty
    picks: tuple[int, ...] = ()
    #: for ``unknown``: what makes the choice found uncertain (``None``: the search stopped at ``LIMIT``)
    doubt: Doubt | None = None
    #: the search stopped at ``LIMIT``
    capped: bool = False


#: ``bounds(flavor, resource)``: what the queue could ever hold of it (its quota, a further cap), all at once
Bounds = Callable[[str, str], tuple[Bound, ...]]


def most(bounds: tuple[Bound, ...]) -> Bound | None:
    """Of ``bounds``, the one with the smallest upper bound (``None``: none has one)."""
    capped = [b for b in bounds if b.value is not None]
    return min(capped, key=lambda b: b.value or ZERO) if capped else None


def holds(bounds: tuple[Bound, ...], amount: Decimal) -> tuple[bool | None, Bound | None]:
    """Whether all of ``bounds`` could ever hold ``amount`` (``None``: unknown), and the first that is not sure."""
    unsure = None
    for bound in bounds:
        held = bound.holds(amount)
        if held is False:
            return False, bound
        if held is None and unsure is None:
            unsure = bound
    return (None, unsure) if unsure is not None else (True, None)


def choose(slots: Sequence[Sequence[Option]], bound: Bounds, limit: int = LIMIT) -> Choice:
    """A choice of one option per slot that holds, certainly if there is one; see the module docstring."""
    count = len(slots)
    if count == 0:
        return Choice("fit")
    if any(not options for options in slots) or _over_all(slots, bound):
        return Choice("nofit")
    picks = [-1] * count
    applied = [False] * count
    #: per slot, the doubt its pick brought in (``None``: none)
    doubts: list[Doubt | None] = [None] * count
    doubtful = 0  # slots whose pick brought a doubt
    sums: dict[tuple[str, str], Decimal] = {}
    possible: tuple[tuple[int, ...], Doubt] | None = None
    tried = 0
    level = 0
    while level >= 0:
        options = slots[level]
        if applied[level]:
            _take(sums, options[picks[level]], -1)
            applied[level] = False
            if doubts[level] is not None:
                doubtful -= 1
                doubts[level] = None
        if possible is not None and doubtful:
            picks[level] = -1  # every choice below is uncertain too, and one such is known already
            level -= 1
            continue
        picks[level] += 1
        if picks[level] == len(options):
            picks[level] = -1
            level -= 1
            continue
        tried += 1
        if tried > limit:
            return Choice("unknown", possible[0], possible[1], True) if possible else Choice("unknown", capped=True)
        option = options[picks[level]]
        held, doubt = _fits(sums, option, bound, level)
        if not held or (doubt is not None and possible is not None):
            continue
        _take(sums, option, +1)
        applied[level] = True
        if doubt is not None:
            doubts[level] = doubt
            doubtful += 1
        if level + 1 < count:
            level += 1
            continue
        if not doubtful:
            return Choice("fit", tuple(picks))
        first = next(d for d in doubts if d is not None)
        possible = (tuple(picks), first)
    if possible is not None:
        return Choice("unknown", possible[0], possible[1])
    return Choice("nofit")


def _over_all(slots: Sequence[Sequence[Option]], bound: Bounds) -> bool:
    """Whether, for some resource, the slots together ask more than all the flavors they could take hold.

    A slot asks the same of whichever flavor it takes, so this cheap sum decides at once many a
    case the search would take long to exhaust (identical podSets over identical flavors).
    """
    asked: dict[str, Decimal] = {}
    flavors: dict[str, set[str]] = {}
    for options in slots:
        for resource, amount in options[0].wanted:
            asked[resource] = asked.get(resource, ZERO) + amount
            flavors.setdefault(resource, set()).update(option.flavor for option in options)
    for resource, total in asked.items():
        capacity = ZERO
        for flavor in flavors[resource]:
            smallest = most(bound(flavor, resource))
            if smallest is None or smallest.value is None:
                break
            capacity += smallest.value
        else:
            if total > capacity:
                return True
    return False


def _fits(sums: dict[tuple[str, str], Decimal], option: Option, bound: Bounds, slot: int) -> tuple[bool, Doubt | None]:
    """Whether ``option`` could go with what is taken (``False``: past an upper bound), and its first doubt."""
    doubt = Doubt(slot, option.flavor, text=option.doubt) if option.doubt else None
    for resource, amount in option.wanted:
        total = sums.get((option.flavor, resource), ZERO) + amount
        held, limits = holds(bound(option.flavor, resource), total)
        if held is False:
            return False, None
        if held is None and doubt is None:
            doubt = Doubt(slot, option.flavor, resource, total, limits)
    return True, doubt


def _take(sums: dict[tuple[str, str], Decimal], option: Option, sign: int) -> None:
    for resource, amount in option.wanted:
        key = (option.flavor, resource)
        sums[key] = sums.get(key, ZERO) + sign * amount
