"""Each queue's candidates in Kueue's order, read lazily: the policies as prefixes of that order."""

from __future__ import annotations

from datetime import timedelta

from tests.simulate_builders import NOW, admitted, from_document
from webhook.kueue.preemption.candidates import Peekable, build_index, eligible, may_have, merged
from webhook.kueue.workload import AdmittedWorkload

NEED = frozenset({("f", "cpu")})


def _w(
    name: str, priority: int, minute: int = 0, evicted: bool = False, created: int = 0, flavor: str = "f"
) -> AdmittedWorkload:
    doc = admitted(
        name,
        "q",
        {"cpu": "1"},
        flavor=flavor,
        priority=priority,
        at=NOW + timedelta(minutes=minute),
        created=NOW + timedelta(minutes=created),
        evicted=evicted,
    )
    workload = from_document(doc)
    assert isinstance(workload, AdmittedWorkload)
    return workload


INDEX = build_index(
    [
        _w("p1-old", 1, 0),
        _w("p1-new", 1, 5),
        _w("p0", 0),
        _w("p2", 2),
        _w("ev", 3, evicted=True),
        _w("other", 0, flavor="g"),
    ],
    NOW,
)


def _names(policy: str, priority: int, evicted: bool = False, created: int = 0) -> list[str]:
    found = eligible(INDEX, policy, priority, NOW + timedelta(minutes=created), NEED, evicted)
    return [w.key.rpartition("/")[2] for w in found]


def test_policies_are_prefixes_of_the_candidate_order() -> None:
    assert _names("LowerPriority", 2) == ["p0", "p1-new", "p1-old"]  # newest admitted first within a priority
    assert _names("LowerPriority", 0) == []
    assert _names("Any", 0) == ["p0", "p1-new", "p1-old", "p2"]  # "other" uses no needed flavor
    assert _names("Never", 9) == []
    assert _names("Any", 0, evicted=True) == ["ev"]


def test_lower_or_newer_equal_priority_takes_equal_priority_only_when_created_later() -> None:
    assert _names("LowerOrNewerEqualPriority", 1, created=-1) == ["p0", "p1-new", "p1-old"]
    assert _names("LowerOrNewerEqualPriority", 1, created=0) == ["p0"]


def test_may_have_answers_from_the_lowest_priority() -> None:
    assert may_have(INDEX, "LowerPriority", 1) and not may_have(INDEX, "LowerPriority", 0)
    assert may_have(INDEX, "LowerOrNewerEqualPriority", 0) and may_have(INDEX, "Any", -9)
    assert not may_have(None, "Any", 0) and not may_have(INDEX, "Never", 9)


def test_merged_queues_and_peekable() -> None:
    other = build_index([_w("x", 1, 3)], NOW)
    sources = [
        eligible(INDEX, "LowerPriority", 2, NOW, NEED, False),
        eligible(other, "LowerPriority", 2, NOW, NEED, False),
    ]
    assert [w.uid for w in merged(sources, NOW)] == ["p0", "p1-new", "x", "p1-old"]
    lazily = Peekable(iter([1, 2]))
    assert (bool(lazily), lazily.peek(), lazily.pop(), lazily.pop(), bool(lazily)) == (True, 1, 1, 2, False)
