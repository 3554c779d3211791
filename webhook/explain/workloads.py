"""Which Workloads belong to a job, and which job a Workload belongs to.

A JobSet's or a Job's Workload carries the label ``kueue.x-k8s.io/job-uid`` = the job's
uid (Kueue's job framework sets it, RFC-0033 4.3.2 says to look it up that way, never by
the generated name). Only the job's namespace is searched: a Workload elsewhere with
that label is not the job's.

A Deployment has no Workload of its own: Kueue's pod integration makes one per Pod,
labelled with the *Pod's* uid and owned by the Pod. Pods are not part of the state, so
a Deployment's Workloads are those ``webhook.cluster.own.OwnedWorkloads`` counts as its
own (a Pod owner named as the Deployment controller names its Pods), plus any labelled
with the Deployment's uid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from webhook.cluster.own import OwnedWorkloads
from webhook.explain.inputs import Document, WorkloadIndex, metadata, text_field
from webhook.objects.kinds import DEPLOYMENT

WORKLOAD = "Workload"


def name_of(document: Document) -> str:
    """``namespace/name`` of a namespaced document."""
    meta = metadata(document)
    return f"{text_field(meta, 'namespace')}/{text_field(meta, 'name')}"


def job_workloads(kind: str, job: Document, index: WorkloadIndex) -> list[Document]:
    """The Workloads of ``job`` (a JobSet, Job or Deployment), sorted by name."""
    meta = metadata(job)
    namespace, name, uid = text_field(meta, "namespace"), text_field(meta, "name"), text_field(meta, "uid")
    found: dict[str, Document] = {}
    if uid:
        for workload in index.by_job_uid(uid):
            if text_field(metadata(workload), "namespace") == namespace:
                found[name_of(workload)] = workload
    if kind == DEPLOYMENT:
        owned = OwnedWorkloads()
        documents = {text_field(metadata(w), "name"): w for w in index.in_namespace(namespace)}
        for workload in documents.values():
            owned.add(workload)
        for _, workload_name in owned.of(DEPLOYMENT, namespace, name, uid):
            found[f"{namespace}/{workload_name}"] = documents[workload_name]
    return [found[key] for key in sorted(found)]


def owner_job(workload: Document) -> str | None:
    """The job a Workload is for, ``Kind/namespace/name`` (its controller owner reference)."""
    meta = metadata(workload)
    references = meta.get("ownerReferences")
    candidates: Sequence[object] = references if isinstance(references, list) else ()
    owners = [r for r in candidates if isinstance(r, Mapping) and text_field(r, "kind") and text_field(r, "name")]
    controller = [r for r in owners if r.get("controller") is True]
    chosen = (controller or owners)[:1]
    if not chosen:
        return None
    reference = chosen[0]
    return f"{text_field(reference, 'kind')}/{text_field(meta, 'namespace')}/{text_field(reference, 'name')}"
