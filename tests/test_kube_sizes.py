"""What byte-bounded caches count (``webhook.kube.sizes``)."""

from __future__ import annotations

from dataclasses import dataclass

from webhook.cluster.memo import MEMO_ENTRY_BYTES
from webhook.kube.sizes import weight


@dataclass
class Answer:
    name: str
    parts: tuple[str, ...]


def test_strings_a_request_carries_are_counted_in_full_wherever_near_the_top() -> None:
    big = "x" * 3_000_000
    assert weight(big) >= 3_000_000
    assert weight(("shape", ("ns", big))) >= 3_000_000
    assert weight(Answer("ok", ("a", big))) >= 3_000_000
    assert weight({"key": [big]}) >= 3_000_000


def test_a_structure_built_from_the_whole_cluster_is_weighed_in_bounded_steps() -> None:
    """A simulator or a queue's index (100,000 entries) is bounded by the cluster, not by requests:
    weighing it looks at ``VISITS`` parts at most, and it is never counted as too large to keep
    on a snapshot."""
    cluster = {i: {j: (str(j), list(range(40))) for j in range(10)} for i in range(100_000)}
    assert weight(cluster) < MEMO_ENTRY_BYTES
