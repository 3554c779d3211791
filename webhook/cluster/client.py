"""Reaching the API server: the client configuration and the list call per kind.

One home for both, shared by the watch cache (``watch.py``), ``tpu-admission snapshot``
(``export.py``) and ``tpu-admission audit`` (``listing.py``), so all read the cluster the
same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any, Final

from webhook.cluster import kinds as k


class ClusterConfigError(Exception):
    """The cluster configuration (kubeconfig or in-cluster) could not be loaded."""


def kubeconfig_files(kubeconfig: str | None) -> str | None:
    """The kubeconfig to read, found as kubectl finds it, or ``None`` for none.

    ``kubeconfig`` (``--kubeconfig``) when given; else ``$KUBECONFIG`` when set (a list
    of files, as kubectl reads it, the missing ones skipped; when set, ``~/.kube/config``
    is not looked at); else ``~/.kube/config`` when it exists.
    """
    if kubeconfig:
        return kubeconfig
    listed = os.environ.get("KUBECONFIG")
    if listed:
        paths = [os.path.expanduser(path) for path in listed.split(os.pathsep) if path]
        return listed if any(os.path.exists(path) for path in paths) else None
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.exists(home) else None


def first_current_context(files: str) -> str | None:
    """The ``current-context`` of a list of kubeconfig files as kubectl reads it: the first file's that
    sets one (the Kubernetes client would take the last file's)."""
    import yaml

    for path in files.split(os.pathsep):
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as handle:
                data = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError):
            continue  # a missing file is skipped, as kubectl does; a broken one is the loader's to report
        if isinstance(data, dict) and data.get("current-context"):
            return str(data["current-context"])
    return None


def load_configuration(kubeconfig: str | None, context: str | None = None) -> Any:
    """A ``kubernetes.client.Configuration``: ``--kubeconfig`` when given; in a pod
    (``KUBERNETES_SERVICE_HOST``) the pod's own in-cluster config, whatever else the image
    carries; else a kubeconfig found as kubectl finds it (``kubeconfig_files``).
    ``context`` (``--context``): that kubeconfig context instead of its current one; it
    makes a kubeconfig be read in a pod too, as kubectl does.

    ``retries`` is 0: callers back off themselves, and urllib3's retries would hide the reason.
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    in_pod = not kubeconfig and not context and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    files = None if in_pod else kubeconfig_files(kubeconfig)
    try:
        if in_pod:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        elif files is not None:
            context = context or first_current_context(files)
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=files, context=context, client_configuration=configuration
            )
        else:
            listed = os.environ.get("KUBECONFIG")
            where = (
                f"$KUBECONFIG ({listed}) names no file that exists"
                if listed
                else ("no --kubeconfig, $KUBECONFIG is not set, ~/.kube/config does not exist")
            )
            raise ClusterConfigError(
                f"no cluster configuration: {where}, and this is not a pod (KUBERNETES_SERVICE_HOST is not set); "
                "give --kubeconfig FILE"
            )
    except ClusterConfigError:
        raise
    except Exception as exc:  # the loaders raise several unrelated types; the reason is what matters
        where = f" from {files}" if files is not None else " (in-cluster)"
        raise ClusterConfigError(f"cluster configuration could not be loaded{where}: {str(exc)[:200]}") from exc
    configuration.retries = 0
    return configuration


def list_call(api_client: Any, kind: k.Kind, named: tuple[str, str] | None = None) -> Callable[..., Any]:
    """The client method that lists (or, with ``watch=True``, watches) ``kind`` across namespaces.

    ``named`` (``kinds.named``): the one object ``(namespace, name)`` of a kind read by
    name, listed in its namespace with a ``metadata.name`` field selector, which is also
    what lets RBAC grant it by ``resourceNames``.
    """
    from kubernetes import client

    if named is not None:
        namespace, name = named
        method = (
            client.CoreV1Api(api_client).list_namespaced_config_map
            if kind.group == ""
            else client.AppsV1Api(api_client).list_namespaced_deployment
        )

        def one(**kwargs: Any) -> Any:
            return method(namespace, field_selector=f"metadata.name={name}", **kwargs)

        return one
    if kind.group == "":
        core = client.CoreV1Api(api_client)
        return core.list_namespace if kind is k.NAMESPACES else core.list_node
    custom = client.CustomObjectsApi(api_client)

    def call(**kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(kind.group, kind.version, kind.plural, **kwargs)

    return call


#: server-side bookkeeping nobody needs in a state file or a judgement (managedFields is most of a Node)
DROPPED_METADATA: Final = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")


def list_pages(
    call: Callable[..., Any], kind: k.Kind, page_size: int, timeout: float, dropped: tuple[str, ...] = DROPPED_METADATA
) -> Iterator[list[dict[str, Any]]]:
    """Each page of a paged list, as plain JSON, with ``apiVersion`` and ``kind`` set (list
    items carry neither) and the ``dropped`` metadata removed; pages one at a time, so a
    caller that streams never holds the whole kind."""
    token: str | None = None
    while True:
        options: dict[str, Any] = {"limit": page_size}
        if token:
            options["_continue"] = token
        response = call(**options, _preload_content=False, _request_timeout=(10.0, timeout))
        try:
            body = json.loads(response.data)
        finally:
            response.release_conn()
        items = [item for item in body.get("items") or () if isinstance(item, dict)]
        token = (body.get("metadata") or {}).get("continue") or None
        del body
        for item in items:
            k.typed(kind, item)
            metadata = item.get("metadata")
            if isinstance(metadata, dict):
                for key in dropped:
                    metadata.pop(key, None)
        yield items
        if not token:
            return
