"""What is worked out from an immutable object, kept on it, bounded in entries and in bytes.

A snapshot, its parts and the Workload index's sets each carry one (``webhook.cluster.snapshot``,
``webhook.cluster.workloadindex``): an answer goes when the object it was worked out from goes,
and nothing memoized is ever changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from webhook.kube.sizes import weight

#: answers memoized on one part, at most: past it an answer is worked out and not kept, so no
#: stream of distinct jobs can grow a snapshot's memory
MEMO_LIMIT: Final = 4096
#: bytes of answers and their keys memoized on one part, at most (``webhook.kube.sizes.weight``):
#: a job's shape key holds its spec's text, and a stream of jobs with multi-MB values must not
#: fill ``MEMO_LIMIT`` entries with them. A snapshot, its previous one and their queue and node
#: parts hold a few memos between them.
MEMO_BYTES: Final = 8 * 1024 * 1024
#: one answer over this many bytes (with its key) is worked out and not kept
MEMO_ENTRY_BYTES: Final = MEMO_BYTES // 16
#: what an answer worked out from the cluster alone is counted at (``Memo``)
DERIVED_BYTES: Final = 1024


class Memo:
    """Answers worked out from one immutable object, kept on it: they go when it goes. Bounded in
    entries (``MEMO_LIMIT``, or the ``limit`` given) and in bytes (``MEMO_BYTES``,
    ``MEMO_ENTRY_BYTES``): past either an answer is worked out and not kept.

    What a request can grow (a key holding a job's text, an answer naming its podSets) is
    weighed (``webhook.kube.sizes.weight``). An answer worked out from the cluster alone under
    a key of the code's own (``derived``: a queue's index, the simulator's state) is bounded by
    the cluster, not by requests, and weighing it would count only its first parts anyway: it
    is counted at ``DERIVED_BYTES`` without being weighed.

    A snapshot's memo links to the memo of the snapshot the store published just before
    (``previous``, one link: the store cuts the one before), and an answer kept there can be
    taken over (``take_previous``) by a caller that checks it still holds: the one way anything
    is carried from an older snapshot."""

    __slots__ = ("answers", "bytes", "costs", "limit", "previous")

    def __init__(self, limit: int = 0) -> None:
        self.answers: dict[Any, Any] = {}
        #: the kept answers' and keys' bytes, as counted when each was kept
        self.bytes = 0
        #: key -> what it was counted at
        self.costs: dict[Any, int] = {}
        #: entries at most; 0: ``MEMO_LIMIT``
        self.limit = limit
        self.previous: Memo | None = None

    def get(self, key: Any) -> Any:
        """The answer kept under ``key``; ``None`` when there is none."""
        return self.answers.get(key)

    def remember(self, key: Any, make: Callable[[], Any], *, derived: bool = False) -> Any:
        """The answer kept under ``key``, worked out by ``make`` the first time (and kept if it fits)."""
        held = self.answers.get(key)
        if held is None:
            held = make()
            self.keep(key, held, derived=derived)
        return held

    def keep(self, key: Any, value: Any, *, derived: bool = False) -> None:
        if len(self.answers) >= (self.limit or MEMO_LIMIT) or key in self.answers:
            return
        cost = DERIVED_BYTES if derived else weight(key) + weight(value)
        if cost > MEMO_ENTRY_BYTES or self.bytes + cost > MEMO_BYTES:
            return
        self.answers[key] = value
        self.costs[key] = cost
        self.bytes += cost

    def take_previous(self, key: Any) -> Any:
        """The answer the previous snapshot's memo keeps under ``key``, taken out of it (one
        successor takes it at most, and the previous snapshot works it out again if asked);
        ``None`` when there is none."""
        previous = self.previous
        if previous is None:
            return None
        held = previous.answers.pop(key, None)
        if held is not None:
            previous.bytes -= previous.costs.pop(key, 0)
        return held


#: answers one index part keeps, at most: a few per consumer, not one per job
PART_LIMIT: Final = 8
