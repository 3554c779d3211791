"""Who preempted a job: the preemptor's Workload and job, resolved from the message's UIDs.

Kueue's condition message names the preemptor by its Workload UID and its job's UID
(``webhook.explain.preemption``). The Workload UID is looked up first; when that
Workload is gone but another carries the same job UID (Kueue re-created the job's
Workload), that one is the preemptor's job today and is named, said as such. When
neither is in the cluster any more (the preemptor finished and was deleted), the UIDs
and the ClusterQueue from the preemptor path are all there is, and the answer says so
rather than leaving the question open (RFC-0033 4.3.4: the evidence is short-lived).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.explain.inputs import Document, WorkloadIndex, metadata
from webhook.explain.preemption import PreemptionNote
from webhook.explain.workloads import name_of, owner_job


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The preemptor as far as the state knows it; ``gone`` when no Workload matched its UIDs."""

    workload: str | None
    job: str | None
    cluster_queue: str | None
    priority: int | None
    workload_uid: str | None
    job_uid: str | None
    gone: bool
    #: found by its job's UID, not its own (its Workload was re-created)
    by_job_uid: bool = False

    def words(self) -> str:
        """The preemptor in one phrase, for the message and the text output."""
        team = f" of ClusterQueue {self.cluster_queue}" if self.cluster_queue else ""
        if self.gone:
            uids = ", ".join(
                part
                for part in (
                    f"Workload UID {self.workload_uid}" if self.workload_uid else "",
                    f"JobUID {self.job_uid}" if self.job_uid else "",
                )
                if part
            )
            return f"a Workload{team} no longer in the cluster ({uids or 'no UID in the message'})"
        job = f" (job {self.job})" if self.job else ""
        priority = f", priority {self.priority}" if self.priority is not None else ""
        again = ", its Workload since re-created" if self.by_job_uid else ""
        return f"Workload {self.workload}{job}{team}{priority}{again}"


def _priority(workload: Document) -> int | None:
    value = _map(workload.get("spec")).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def admitted_cluster_queue(workload: Document) -> str | None:
    """The ClusterQueue a Workload holds quota in (``status.admission.clusterQueue``)."""
    value = _map(_map(workload.get("status")).get("admission")).get("clusterQueue")
    return value if isinstance(value, str) and value else None


def resolve_preemptor(note: PreemptionNote, index: WorkloadIndex) -> Preemptor | None:
    """The preemptor named by ``note``; ``None`` when the message names none at all."""
    if note.workload_uid is None and note.job_uid is None:
        return None
    found = index.by_uid(note.workload_uid) if note.workload_uid else None
    by_job = False
    if found is None and note.job_uid:
        candidates = sorted(index.by_job_uid(note.job_uid), key=name_of)
        found = candidates[0] if candidates else None
        by_job = found is not None
    if found is None:
        return Preemptor(None, None, note.preemptor_cluster_queue, None, note.workload_uid, note.job_uid, gone=True)
    uid = metadata(found).get("uid")
    return Preemptor(
        name_of(found),
        owner_job(found),
        admitted_cluster_queue(found) or note.preemptor_cluster_queue,
        _priority(found),
        uid if isinstance(uid, str) else note.workload_uid,
        note.job_uid,
        gone=False,
        by_job_uid=by_job,
    )
