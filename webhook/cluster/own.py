"""An object's own Workloads, and the cluster state without them (``tpu-admission audit``).

``audit`` judges objects that already run: Kueue made a Workload for each (a Deployment:
one per pod), and that Workload already holds quota or waits for it. Judged against the
whole state, a guaranteed job would be measured against a balance it is itself part of,
and refused for the chips it holds. So each object is judged against the state *less its
own Workloads*, which is what ``check`` says of the object as its user wrote it before
it was created.

Which Workloads are an object's own (``OwnedWorkloads``), from their owner references:

- a JobSet's or a Job's: the Workloads whose owner reference names it (kind and name;
  the uid too when both sides carry one). Kueue's job framework sets that reference on
  the Workload it creates for the job;
- a Deployment's: Kueue's pod integration makes a Workload per pod, owned by the Pod.
  Pods are not read, so a Pod owner counts as the Deployment's when its name is one the
  Deployment controller gives (``<deployment>-<pod-template-hash>-<suffix>``, both parts
  from Kubernetes' safe alphabet). A Deployment named like another's prefix cannot take
  its pods: the name must be followed by exactly those two parts.

``WithoutWorkloads`` is a ``ClusterState`` over a ``ClusterStore`` that answers as if the
given Workloads were absent. It never changes the store: its snapshot is the store's with
their share taken out of a copy of the ledger (``Snapshot.without``), by the same
``ChipsLedger`` the store keeps, so what "holds" and "waits" mean cannot drift between the
two. The queues and nodes, and the answers memoized on them, are the store's snapshot's.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Final

from webhook.cluster.snapshot import Snapshot
from webhook.cluster.store import ClusterStore
from webhook.kube.jsonvalues import as_dict
from webhook.objects.kinds import DEPLOYMENT

WorkloadKey = tuple[str, str]
#: Kubernetes' ``rand.String`` alphabet (no vowels, no 0/1/3): pod-template-hash and pod name suffixes
_SAFE: Final = "bcdfghjklmnpqrstvwxz2456789"
_DEPLOYMENT_POD: Final = re.compile(rf"^(?P<deployment>.+)-[{_SAFE}]{{1,10}}-[{_SAFE}]{{5}}$")


class JobSetJobs:
    """Which stored Jobs are a JobSet's own, so ``audit`` judges them with their JobSet.

    A Job's owner reference is what the Job says of itself: anyone can write one. A Job
    counts as a JobSet's only when that JobSet is among the objects audited (same
    namespace and name, and the same uid when both carry one) and the Job has a name the
    JobSet controller gives its Jobs, ``<jobset>-<replicatedJob>-<index>`` for one of the
    JobSet's replicatedJobs. Any other Job is judged on its own.
    """

    def __init__(self) -> None:
        #: (namespace, JobSet name) -> (uid, the names of its replicatedJobs)
        self._jobsets: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}

    def add(self, jobset: Mapping[str, Any]) -> None:
        metadata = as_dict(jobset.get("metadata"))
        replicated = as_dict(jobset.get("spec")).get("replicatedJobs")
        names = frozenset(
            str(r["name"])
            for r in (replicated if isinstance(replicated, list) else [])
            if isinstance(r, dict) and r.get("name")
        )
        key = (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))
        self._jobsets[key] = (str(metadata.get("uid") or ""), names)

    def owns(self, job: Mapping[str, Any]) -> bool:
        """Whether ``job`` is the Job of an audited JobSet's replicatedJob (see the class)."""
        metadata = as_dict(job.get("metadata"))
        namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")
        for reference in metadata.get("ownerReferences") or ():
            reference = as_dict(reference)
            if (
                reference.get("kind") != "JobSet"
                or not str(reference.get("apiVersion", "")).startswith("jobset.x-k8s.io/")
                or reference.get("controller") is not True
            ):
                continue
            owner = str(reference.get("name") or "")
            found = self._jobsets.get((namespace, owner))
            if found is None:
                continue
            uid, replicated = found
            owner_uid = str(reference.get("uid") or "")
            if uid and owner_uid and uid != owner_uid:
                continue
            match = re.fullmatch(rf"{re.escape(owner)}-(?P<rest>.+)-\d+", name)
            if match is not None and match["rest"] in replicated:
                return True
        return False


class OwnedWorkloads:
    """Workload keys (namespace, name) by the object that owns them."""

    def __init__(self) -> None:
        #: (namespace, owner kind, owner name) -> {workload name: owner uid ("" when not given)}
        self._owned: defaultdict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)

    def add(self, workload: Mapping[str, Any]) -> None:
        """Index one Workload object by its owner references (a Workload without any is nobody's)."""
        metadata = as_dict(workload.get("metadata"))
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        if not name:
            return
        for reference in metadata.get("ownerReferences") or ():
            reference = as_dict(reference)
            kind, owner = str(reference.get("kind") or ""), str(reference.get("name") or "")
            if not kind or not owner:
                continue
            uid = str(reference.get("uid") or "")
            self._owned[(sys.intern(namespace), kind, owner)][name] = uid
            if kind == "Pod":
                match = _DEPLOYMENT_POD.match(owner)
                if match is not None:
                    self._owned[(namespace, f"{DEPLOYMENT}/pod", match["deployment"])][name] = ""

    def of(self, kind: str, namespace: str, name: str, uid: str = "") -> tuple[WorkloadKey, ...]:
        """The Workloads of the object ``kind`` ``namespace``/``name`` (with ``uid`` when known), sorted."""
        keys = {
            workload
            for workload, owner_uid in self._owned.get((namespace, kind, name), {}).items()
            if not uid or not owner_uid or uid == owner_uid  # a namesake from before a re-create is not it
        }
        if kind == DEPLOYMENT:
            keys.update(self._owned.get((namespace, f"{DEPLOYMENT}/pod", name), {}))
        return tuple(sorted((namespace, workload) for workload in keys))


class WithoutWorkloads:
    """``store`` as if the Workloads ``keys`` were not there (a ``ClusterState``): each snapshot
    is the store's less their share (``Snapshot.without``), counted by the same ledger."""

    def __init__(self, store: ClusterStore, keys: Iterable[WorkloadKey]) -> None:
        self.store = store
        self.keys = tuple(keys)

    def snapshot(self) -> Snapshot:
        return self.store.snapshot().without(self.keys)
