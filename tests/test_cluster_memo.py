"""A memo (``webhook.cluster.memo``): bounded in entries and bytes; an answer from the cluster alone
is counted, not weighed."""

from __future__ import annotations

from webhook.cluster.memo import DERIVED_BYTES, MEMO_BYTES, MEMO_ENTRY_BYTES, Memo


def test_a_memo_keeps_answers_within_its_byte_bound() -> None:
    memo = Memo()
    small = "a" * 1000
    for i in range(10):
        memo.keep(("small", i), small)
    assert len(memo.answers) == 10 and 10 * 1000 < memo.bytes < 10 * 1300
    memo.keep("too big", "x" * MEMO_ENTRY_BYTES)  # one entry over its share: worked out, not kept
    assert memo.get("too big") is None
    while memo.bytes + MEMO_ENTRY_BYTES // 2 <= MEMO_BYTES:
        memo.keep(("half", memo.bytes), "y" * (MEMO_ENTRY_BYTES // 2 - 200))
    kept = len(memo.answers)
    memo.keep("one more", "z" * (MEMO_ENTRY_BYTES // 2))
    assert len(memo.answers) == kept and memo.bytes <= MEMO_BYTES


def test_an_answer_from_the_cluster_alone_is_counted_without_being_weighed() -> None:
    """Under a key of the code's own, an answer bounded by the cluster costs a fixed count: a
    request's answer of the same size is weighed, and refused past its share."""
    memo = Memo()
    large = "x" * MEMO_ENTRY_BYTES
    memo.keep("from the cluster", large, derived=True)
    memo.keep("from a request", large)
    assert (memo.get("from the cluster") is large, memo.get("from a request"), memo.bytes) == (
        True,
        None,
        DERIVED_BYTES,
    )
