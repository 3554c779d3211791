"""Cluster state from files, for ``check --cluster-state``.

Reads what ``kubectl get … -o yaml`` prints (a ``List``, multi-document YAML, or a
directory of such files) through the same reader as the manifests, and the typed lists
``tpu-admission snapshot`` writes and a list call answers (``kind: CohortList``), which
the reader expands into their items after a head that names the kind. No line is needed
from a state, so it is read without node trees, by the fastest reader that fits (JSON by
msgspec, YAML by libyaml). A kind that appears in none of
the files is unknown, not empty: its rules are skipped with a warning that names the
missing kind, exactly as the server does for a kind it cannot watch. A typed list says
the kind was read, so an empty ``CohortList`` means "no Cohorts", not "unknown".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Final

from webhook.cluster import kinds as k
from webhook.cluster.store import ClusterStore
from webhook.objects.sources import load_documents
from webhook.policy.config import Policy

#: the kinds read from files: the cluster rules' kinds, and what the simulator reads of the admin
#: guard's (Kueue's Configuration, WorkloadPriorityClasses' values)
_READ: dict[str, k.Kind] = {**k.BY_KIND, **{kind.kind: kind for kind in (k.KUEUE_CONFIG, k.WORKLOAD_PRIORITY_CLASSES)}}


def state_from_objects(objects: Iterable[Any], policy: Policy) -> ClusterStore:
    """A store holding ``objects``; kinds without any object are marked unknown."""
    store = ClusterStore(policy)
    by_kind: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        name = str(obj.get("kind", ""))
        group = str(obj.get("apiVersion", "")).partition("/")[0] if "/" in str(obj.get("apiVersion")) else ""
        kind = _READ.get(name)
        if kind is not None and group == kind.group:
            by_kind[kind.name].append(obj)
            continue
        listed = _READ.get(name.removesuffix("List")) if name.endswith("List") else None
        if listed is not None and group == listed.group and isinstance(obj.get("items"), list):
            by_kind[listed.name].extend(item for item in obj["items"] if isinstance(item, dict))
    for kind in k.KINDS:
        if kind.name in by_kind:
            store.replace(kind, by_kind[kind.name])
            store.availability.mark_synced(kind.name)
        else:
            store.availability.mark_absent(kind.name, absent_reason(kind))
    for kind in k.ADMIN_KINDS:  # the admin guard's webhook reads them from the watch; `lint-queues` reads files itself
        named = k.named(kind, policy)
        objects_read = [
            obj
            for obj in by_kind.get(kind.name, ())
            if named is None
            or (
                (obj.get("metadata") or {}).get("namespace", "default") == named[0]
                and (obj.get("metadata") or {}).get("name") == named[1]
            )
        ]
        if objects_read:  # kept for the simulator: Kueue's Configuration, priority classes' values
            store.replace(kind, objects_read)
        store.availability.mark_absent(kind.name, "read from the cluster's watch only, not from --cluster-state")
    return store


#: why a kind missing from ``--cluster-state`` is unknown, as each skipped rule's warning says it;
#: what would decide it is said once per run (``state_note``)
ABSENT: Final = "no objects of this kind in the --cluster-state input"


def absent_reason(kind: k.Kind) -> str:
    """Why a kind missing from the input is unknown: short, as every rule that reads it repeats it."""
    return ABSENT


def absent_kinds(store: ClusterStore) -> list[k.Kind]:
    """The cluster rules' kinds the files held nothing of (unknown, not empty)."""
    return [kind for kind in k.KINDS if store.availability.status[kind.name].absent == ABSENT]


def state_note(kinds: list[k.Kind]) -> str:
    """What would decide the kinds ``--cluster-state`` lacks, said once per run.

    A ``kubectl get … -o yaml`` List with no items says nothing of its kind, so "none" can
    only be said by a typed list, as ``tpu-admission snapshot`` writes for every kind.
    """
    names = ", ".join(kind.name for kind in kinds)
    lists = ", ".join(f"`kind: {kind.kind}List` (apiVersion {kind.api_version})" for kind in kinds)
    return (
        f"note: the --cluster-state input holds no {names}: the rules that read them are skipped. To decide "
        "them, write the input with `tpu-admission snapshot` (every kind, empty ones included), or add the "
        f"kinds' objects, or, where there are none, {lists} with `items: []` (a kubectl List cannot say a kind "
        "has none)"
    )


def load_state_files(paths: list[str], policy: Policy) -> ClusterStore:
    """Read the files; ``SourceError`` when one cannot be read or parsed."""
    return state_from_objects((document.data for document in load_documents(paths, lines=False, heads=True)), policy)
