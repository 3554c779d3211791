"""What a Preempted Workload's conditions say about its preemptor, and why, in plain words.

Kueue writes one message on the victim's ``Evicted`` and ``Preempted`` conditions
(``preemptionMessage`` in ``pkg/scheduler/preemption/preemption.go``)::

    Preempted to accommodate a workload (UID: <uid>, JobUID: <job uid>) due to <why>;
    preemptor path: /<cohort>/.../<ClusterQueue>; preemptee path: /<cohort>/.../<ClusterQueue>

Unknown parts are written ``UNKNOWN``. Releases before the paths were added end the
message after ``due to <why>``, and older ones wrote no ``JobUID``; each part is read
when present, so a message of any of these shapes still names what it can. The path's
last segment is the ClusterQueue's name, which is how a preemptor that is gone still
has a team.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from webhook.explain import conditions as c

_UNKNOWN: Final = "UNKNOWN"
_UIDS: Final = re.compile(r"\(UID: (?P<uid>[^,)\s]+)(?:, JobUID: (?P<job>[^)\s]+))?\)")
_PATH: Final = re.compile(r"(?P<side>preemptor|preemptee) path: (?P<path>[^;\s]+)")

#: Kueue's reason on the Preempted condition -> what it means for the job's owner
PLAIN_WORDS: Final[dict[str, str]] = {
    c.IN_CLUSTER_QUEUE: "a higher-priority job of the same team needed the quota",
    c.IN_COHORT_RECLAMATION: "the lending team took its quota back (the job ran on borrowed quota)",
    c.IN_COHORT_FAIR_SHARING: "the cohort's fair share: the team used more than its share of the cohort",
    c.IN_COHORT_RECLAIM_WHILE_BORROWING: (
        "a higher-priority job of another team, itself borrowing, reclaimed quota in the cohort"
    ),
}


@dataclass(frozen=True, slots=True)
class PreemptionNote:
    """The parts of a preemption message: ``None`` for each part the message does not give."""

    workload_uid: str | None = None
    job_uid: str | None = None
    preemptor_path: str | None = None
    preemptee_path: str | None = None

    @property
    def preemptor_cluster_queue(self) -> str | None:
        """The preemptor's ClusterQueue: the last segment of its path."""
        return _last_segment(self.preemptor_path)

    @property
    def preemptee_path_queue(self) -> str | None:
        """The victim's own ClusterQueue, from its path (its admission is gone once evicted)."""
        return _last_segment(self.preemptee_path)


def _last_segment(path: str | None) -> str | None:
    return path.rstrip("/").rpartition("/")[2] or None if path else None


def _known(value: str | None) -> str | None:
    return None if value in (None, "", _UNKNOWN) else value


def parse_preemption_message(message: str) -> PreemptionNote:
    """Read the UIDs and paths out of Kueue's preemption message (see the module)."""
    uids = _UIDS.search(message)
    paths = {match["side"]: match["path"] for match in _PATH.finditer(message)}
    return PreemptionNote(
        _known(uids["uid"]) if uids else None,
        _known(uids["job"]) if uids else None,
        _known(paths.get("preemptor")),
        _known(paths.get("preemptee")),
    )


def why(reason: str | None) -> str:
    """Kueue's Preempted reason in the owner's words; an unknown reason is named as it is."""
    if reason and reason in PLAIN_WORDS:
        return PLAIN_WORDS[reason]
    if reason:
        return f"Kueue's reason {reason}"
    return "Kueue gave no reason"
