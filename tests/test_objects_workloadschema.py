"""The Workload schema's limits as one list of what a Workload's podSets pass, in the schema's order."""

from __future__ import annotations

from webhook.objects.workloadschema import COUNT, NAME, PODSETS, Exceeded, exceeded


def test_every_limit_passed_is_named_in_the_schemas_order() -> None:
    podsets = [(f"p{i}", 1) for i in range(17)] + [("-bad", 1), ("ok", 2**31)]
    assert list(exceeded(podsets)) == [
        Exceeded(PODSETS, None, 19, 18),
        Exceeded(NAME, 17, "-bad", 63, "-bad"),
        Exceeded(COUNT, 18, 2**31, 2**31 - 1, "ok"),
    ]


def test_at_the_limits_nothing_is_passed() -> None:
    podsets = [("a" * 63, 2**31 - 1)] + [(f"p{i}", 1) for i in range(17)]
    assert list(exceeded(podsets)) == []
