"""A watch cache's store holding Kueue's objects, as the admin guard's webhook reads it.

``cache_of`` puts objects into a ``ClusterStore`` the way the watch does (a named kind only
for the one object its field selector names) and marks known exactly the kinds
``lint-queues`` would know from the same objects: those with an object, and the typed lists
given. So the webhook's answer on one object can be compared with ``lint-queues``' on the
same set. ``kueue_review`` wraps one of Kueue's objects as the API server sends it;
``rfc_api_server`` serves RFC-0033's objects from the test API server.
"""

from __future__ import annotations

import copy
import uuid
from collections import defaultdict
from typing import Any

from admin_fixtures import cluster_state, rfc_objects
from cluster_apiserver import FakeApiServer

from webhook.cluster import kinds as k
from webhook.cluster.store import ClusterStore
from webhook.policy.config import Policy

_BY_GROUP_KIND = {(kind.group, kind.kind): kind for kind in k.WATCHED}


def cluster_kind(obj: dict[str, Any]) -> k.Kind | None:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return _BY_GROUP_KIND.get((group, str(obj.get("kind", ""))))


def cache_of(objects: list[dict[str, Any]], policy: Policy) -> ClusterStore:
    """A store holding ``objects`` (typed lists expanded); every other kind unknown."""
    return fill(ClusterStore(policy), objects, policy)


def fill(store: ClusterStore, objects: list[dict[str, Any]], policy: Policy) -> ClusterStore:
    """``store`` made to hold exactly ``objects``, as a relist of every kind would; the rest unknown."""
    by_kind: defaultdict[k.Kind, list[dict[str, Any]]] = defaultdict(list)
    for obj in objects:
        listed = str(obj.get("kind", ""))
        if listed.endswith("List") and isinstance(obj.get("items"), list):
            kind = cluster_kind({**obj, "kind": listed.removesuffix("List")})
            if kind is not None:
                by_kind[kind].extend(obj["items"])
            continue
        kind = cluster_kind(obj)
        if kind is None:
            continue
        named = k.named(kind, policy)
        metadata = obj.get("metadata") or {}
        if named is not None and (metadata.get("namespace"), metadata.get("name")) != named:
            continue  # the watch's field selector never returns it
        by_kind[kind].append(obj)
    for kind in k.WATCHED:
        store.replace(kind, by_kind.get(kind, []))
        if kind in by_kind:
            store.availability.mark_synced(kind.name)
        else:
            store.availability.mark_absent(kind.name, "not in the test's cluster")
    return store


def kueue_review(
    obj: Any, operation: str = "CREATE", old: Any = None, username: str = "system:serviceaccount:quota:pipeline"
) -> dict[str, Any]:
    """An AdmissionReview for one of Kueue's objects, shaped as the API server sends it."""
    data = obj if isinstance(obj, dict) else {}
    metadata = data.get("metadata") or {}
    api_version = str(data.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    kind = str(data.get("kind", ""))
    resource = {"group": group, "version": version, "resource": f"{kind.lower()}s"}
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": resource,
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": resource,
        "name": metadata.get("name", ""),
        "operation": operation,
        "userInfo": {"username": username, "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def rfc_api_server(mode: str = "dynamic") -> FakeApiServer:
    """The test API server (not started) holding RFC-0033's configuration and the cluster it was written for."""
    api = FakeApiServer()
    for obj in [*rfc_objects(mode), *cluster_state(mode)]:
        listed = obj["kind"].endswith("List")
        for item in obj["items"] if listed else [obj]:
            kind = cluster_kind({**item, "apiVersion": obj["apiVersion"]} if listed else item)
            assert kind is not None, item["kind"]
            api.load(kind, [copy.deepcopy(item)])
    return api
