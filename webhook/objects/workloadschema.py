"""The limits of Kueue's Workload schema that a job maps into, read by the rule that denies a job
beyond them at submit and by the simulator that answers ``never`` for a Workload beyond them.

Kueue's Workload CRD (``kueue.x-k8s.io/v1beta2``, the version the Kueue of RFC-0033 runs):
a JobSet's replicatedJob is one podSet, named as it is, of replicas × pods per Job. The API
server refuses a Workload beyond these limits, so Kueue cannot create it and the job stays
suspended for good. The product cannot read the CRD when it runs; a test holds these equal
to its schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

WORKLOAD_MAX_PODSETS: Final = 18  # spec.podSets maxItems
PODSET_NAME_MAX_LENGTH: Final = 63  # spec.podSets[].name maxLength
PODSET_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # spec.podSets[].name pattern
PODSET_COUNT_MAX: Final = 2**31 - 1  # spec.podSets[].count format int32
_PODSET_NAME: Final = re.compile(PODSET_NAME_PATTERN)

#: which limit is passed (the rule's message keys)
PODSETS: Final = "podsets"
NAME: Final = "name"
COUNT: Final = "count"


@dataclass(frozen=True, slots=True)
class Exceeded:
    """One limit passed: ``which`` (``PODSETS``, ``NAME``, ``COUNT``), the podSet's index (``None``
    for ``PODSETS``), and the value beside the limit."""

    which: str
    index: int | None
    value: int | str
    limit: int
    #: the podSet's name (empty for ``PODSETS``)
    name: str = ""

    def words(self) -> str:
        """The limit in a sentence, as the Workload's field names it."""
        if self.which == PODSETS:
            return f"{self.value} podSets, but a Kueue Workload holds at most {self.limit} (spec.podSets maxItems)"
        if self.which == NAME:
            return (
                f"podSet name {self.value!r} is not a valid Workload podSet name (at most {self.limit} lower-case "
                "letters, digits and '-', starting and ending with a letter or digit)"
            )
        return f"podSet {self.name!r} counts {self.value} pods, more than a Workload's int32 count ({self.limit})"


def exceeded(podsets: Sequence[tuple[str, int]]) -> Iterator[Exceeded]:
    """The limits ``podsets`` (each podSet's name and pod count, in order) pass, in the schema's order."""
    if len(podsets) > WORKLOAD_MAX_PODSETS:
        yield Exceeded(PODSETS, None, len(podsets), WORKLOAD_MAX_PODSETS)
    for index, (name, count) in enumerate(podsets):
        if len(name) > PODSET_NAME_MAX_LENGTH or not _PODSET_NAME.match(name):
            yield Exceeded(NAME, index, name, PODSET_NAME_MAX_LENGTH, name)
        if count > PODSET_COUNT_MAX:
            yield Exceeded(COUNT, index, count, PODSET_COUNT_MAX, name)
