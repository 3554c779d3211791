"""Reaching the API server: the client configuration and the list call per kind.

One home for both, shared by the watch cache (``watch.py``) and ``tpu-admission
snapshot`` (``export.py``), so the two read the cluster the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.cluster import kinds as k


class ClusterConfigError(Exception):
    """The cluster configuration (kubeconfig or in-cluster) could not be loaded."""


def load_configuration(kubeconfig: str | None) -> Any:
    """A ``kubernetes.client.Configuration`` from ``kubeconfig``, or the in-cluster config without one.

    ``retries`` is 0: callers back off themselves, and urllib3's retries would hide the reason.
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except Exception as exc:  # the loaders raise several unrelated types; the reason is what matters
        raise ClusterConfigError(f"cluster configuration could not be loaded: {str(exc)[:200]}") from exc
    configuration.retries = 0
    return configuration


def list_call(api_client: Any, kind: k.Kind) -> Callable[..., Any]:
    """The client method that lists (or, with ``watch=True``, watches) ``kind`` across namespaces."""
    from kubernetes import client

    if kind.group == "":
        core = client.CoreV1Api(api_client)
        return core.list_namespace if kind is k.NAMESPACES else core.list_node
    custom = client.CustomObjectsApi(api_client)

    def call(**kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(kind.group, kind.version, kind.plural, **kwargs)

    return call
