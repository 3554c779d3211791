"""A live cluster for ``tpu-admission audit``: its state, then the objects to judge, paged and streamed.

One list per kind (with ``--namespace``, one per kind and namespace for the judged
kinds), paged with ``limit``/``continue``, through the same client configuration and
list calls as the watch cache and ``snapshot`` (``webhook.cluster.client``). Nothing is
held twice: each page is decoded, handed on and dropped.

- The state kinds (``webhook.cluster.kinds.KINDS``) go into a ``ClusterStore`` object by
  object as their pages arrive (the store keeps its projection, not the object), and
  each Workload's owner references into ``OwnedWorkloads``. A kind that cannot be
  listed (403, CRD absent) is unknown, as in the server: its rules are skipped with a
  warning that names it.
- The judged kinds (JobSets, Jobs, Deployments) are yielded one object at a time, for
  the caller to judge and drop. A kind the API server does not serve (404: the JobSet
  CRD is not installed) has nothing to judge; any other error ends the audit
  (``ListError``), since an audit that silently skipped a kind would report a clean bill.
- A continue token that expires between pages (410) restarts that kind's list, and the
  objects already handed on are skipped by namespace and name, so none is judged twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from webhook.cluster import kinds as k
from webhook.cluster.client import list_call, list_pages
from webhook.cluster.own import OwnedWorkloads
from webhook.cluster.store import ClusterStore
from webhook.cluster.watch import describe_error
from webhook.objects.kinds import JUDGED, ORDER
from webhook.policy.config import Policy

#: objects per list page, as ``snapshot`` pages; read at each call
PAGE_SIZE = 500
#: the judged kinds as list calls name them ("JobSets", "Jobs", "Deployments")
JUDGED_KINDS: Final[tuple[k.Kind, ...]] = tuple(
    k.Kind(f"{kind}s", kind, JUDGED[kind].group, JUDGED[kind].version, JUDGED[kind].resource, True) for kind in ORDER
)
#: metadata no rule and no report reads; managedFields is most of a stored object
_DROPPED_METADATA: Final = ("managedFields",)


class ListError(Exception):
    """A kind could not be listed; the message names it and why."""

    def __init__(self, kind: str, reason: str, status: int | None) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason
        self.status = status


def describe(exc: BaseException) -> str:
    if getattr(exc, "status", None) == 403:
        return "forbidden (403): this service account may not list it; check the audit's RBAC"
    return describe_error(exc)


def judged_call(api_client: Any, kind: k.Kind, namespace: str | None) -> Callable[..., Any]:
    """The list call of a judged kind across namespaces (``namespace`` None) or in one namespace."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    if namespace is None:
        return lambda **options: custom.list_cluster_custom_object(kind.group, kind.version, kind.plural, **options)
    return lambda **options: custom.list_namespaced_custom_object(
        kind.group, kind.version, namespace, kind.plural, **options
    )


def job_call(api_client: Any, kind: k.Kind, namespace: str, name: str) -> Callable[..., Any]:
    """The list call that reads one job by name (``explain``): its namespace's list with a
    ``metadata.name`` field selector, which RBAC can grant by ``resourceNames``."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    return lambda **options: custom.list_namespaced_custom_object(
        kind.group, kind.version, namespace, kind.plural, field_selector=f"metadata.name={name}", **options
    )


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def list_objects(
    call: Callable[..., Any], kind: k.Kind, page_size: int | None = None, timeout: float = 60.0
) -> Iterator[dict[str, Any]]:
    """Every object of one list call, page by page, each once.

    A 410 on a continued page (the continue token expired) restarts the list; what was
    already yielded is skipped (by namespace and name), so a consumer never sees an
    object twice. A 410 on the first page is an error like any other.
    """
    seen: set[tuple[str, str]] = set()
    while True:
        paged = False
        try:
            for page in list_pages(call, kind, page_size or PAGE_SIZE, timeout, _DROPPED_METADATA):
                paged = True
                for obj in page:
                    key = _key(obj)
                    if key not in seen:
                        seen.add(key)
                        yield obj
                page.clear()
            return
        except Exception as exc:
            if getattr(exc, "status", None) != 410 or not paged:
                raise


def load_state(
    api_client: Any, policy: Policy, page_size: int | None = None, kinds: Iterable[k.Kind] = k.KINDS
) -> tuple[ClusterStore, OwnedWorkloads]:
    """The state kinds, listed into a store (and the Workloads' owners); a kind that cannot
    be listed is marked unknown with the reason. ``ListError`` when the API server cannot be
    reached at all (no answer, or credentials refused): then nothing can be audited."""
    store = ClusterStore(policy)
    owners = OwnedWorkloads()
    for kind in kinds:
        call = list_call(api_client, kind, k.named(kind, policy))
        try:
            for obj in list_objects(call, kind, page_size):
                store.apply(kind, "ADDED", obj)
                if kind is k.WORKLOADS:
                    owners.add(obj)
        except Exception as exc:
            status = getattr(exc, "status", None)
            if not isinstance(status, int) or not status or status == 401:
                raise ListError(kind.name, describe(exc), status if isinstance(status, int) else None) from exc
            store.availability.mark_absent(kind.name, f"could not be listed: {describe(exc)}")
            continue
        store.availability.mark_synced(kind.name)
    return store, owners


def judged_objects(
    api_client: Any,
    namespaces: Iterable[str] = (),
    page_size: int | None = None,
    kinds: Iterable[k.Kind] = JUDGED_KINDS,
) -> Iterator[dict[str, Any]]:
    """Every JobSet, Job and Deployment (of ``namespaces``, else of every namespace), one at a time.

    ``ListError`` for a kind that cannot be listed, except one the API server does not
    serve at all (404 on the collection: its CRD is not installed), which has nothing to judge.
    """
    scopes: list[str | None] = list(dict.fromkeys(namespaces)) or [None]
    for kind in kinds:
        for namespace in scopes:
            try:
                yield from list_objects(judged_call(api_client, kind, namespace), kind, page_size)
            except Exception as exc:
                status = getattr(exc, "status", None)
                if status == 404:
                    break  # not served: no objects of this kind in any namespace
                raise ListError(kind.name, describe(exc), status if isinstance(status, int) else None) from exc
