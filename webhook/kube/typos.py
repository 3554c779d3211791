""" "Did you mean …?": the known word a likely typo was meant to be.

A word is a likely typo of a known one when the two differ only in case (``Jobset``,
``jobset``) or, ignoring case, by one edit: a character added, dropped, changed, or two
neighbours swapped (``kubemakr``, ``Deploymnet``). The work is linear in the word's
length per known word, and only done for a word that is not known already.
"""

from __future__ import annotations

from collections.abc import Iterable


def one_edit_apart(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (already lower-cased) differ by exactly one edit."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    start = 0
    while start < len(a) and a[start] == b[start]:
        start += 1
    if len(a) < len(b):  # one character inserted in ``a`` gives ``b``
        return a[start:] == b[start + 1 :]
    if a[start + 1 :] == b[start + 1 :]:  # one character changed
        return True
    # two neighbours swapped
    return (
        start + 1 < len(a)
        and a[start] == b[start + 1]
        and a[start + 1] == b[start]
        and a[start + 2 :] == b[start + 2 :]
    )


def did_you_mean(word: str, known: Iterable[str]) -> str | None:
    """The first of ``known`` that ``word`` is a likely typo of, or ``None`` (also when ``word`` is known)."""
    candidates = list(known)
    if len(word) < 3 or word in candidates:
        return None
    lowered = word.lower()
    for candidate in candidates:
        other = candidate.lower()
        if lowered == other or one_edit_apart(lowered, other):
            return candidate
    return None
