"""``tpu-admission snapshot``: write a ``--cluster-state`` file from a live cluster.

Lists every kind the cluster-aware rules read (``webhook.cluster.kinds.KINDS``), paged,
with the official ``kubernetes`` client, and writes one typed list per kind
(``kind: CohortList``, as the API server answers a list call) in one multi-document YAML.
A typed list says "this kind was read" even when it is empty, so ``check
--cluster-state`` can tell "there are no Cohorts" (implicit cohorts only) from "Cohorts
were not captured" (unknown): unknown is not zero. A kind that cannot be listed (403,
CRD absent) is left out, named on stderr, and the exit code is 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import yaml

from webhook.cluster import kinds as k
from webhook.cluster.client import ClusterConfigError, list_call, load_configuration
from webhook.cluster.watch import describe_error

PAGE_SIZE = 500
#: server-side bookkeeping nobody needs in a state file (managedFields is most of a Node)
_DROPPED_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")


def list_kind(api_client: Any, kind: k.Kind, timeout: float = 60.0) -> Iterator[dict[str, Any]]:
    """Every object of ``kind`` across namespaces, as plain JSON, page by page."""
    call = list_call(api_client, kind)
    token: str | None = None
    while True:
        options: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            options["_continue"] = token
        response = call(**options, _preload_content=False, _request_timeout=(10.0, timeout))
        try:
            body = json.loads(response.data)
        finally:
            response.release_conn()
        for item in body.get("items") or ():
            item.setdefault("apiVersion", kind.api_version)
            item.setdefault("kind", kind.kind)
            metadata = item.get("metadata")
            if isinstance(metadata, dict):
                for key in _DROPPED_METADATA:
                    metadata.pop(key, None)
            yield item
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return


def write_snapshot(api_client: Any, out: TextIO, errors: TextIO) -> int:
    """Write one typed list per kind to ``out``; return 0, or 1 when a kind could not be listed."""
    documents = []
    missing = []
    for kind in k.KINDS:
        try:
            items = list(list_kind(api_client, kind))
        except Exception as exc:  # a kind we cannot list is named, not a crash
            missing.append(kind.name)
            print(f"tpu-admission snapshot: {kind.name}: {describe_error(exc)}; left out (unknown)", file=errors)
            continue
        documents.append({"apiVersion": kind.api_version, "kind": f"{kind.kind}List", "items": items})
    out.write(f"# tpu-admission snapshot: {', '.join(k.name for k in k.KINDS if k.name not in missing)}\n")
    yaml.safe_dump_all(documents, out, sort_keys=False, default_flow_style=False)
    return 1 if missing else 0


def run_snapshot(kubeconfig: str | None, output: str | None) -> int:
    """The subcommand: 0 all kinds written, 1 some kinds missing, 2 no cluster configuration."""
    from kubernetes import client

    try:
        configuration = load_configuration(kubeconfig)
    except ClusterConfigError as exc:
        print(f"tpu-admission snapshot: {exc}", file=sys.stderr)
        return 2
    api_client = client.ApiClient(configuration)
    try:
        if output in (None, "-"):
            return write_snapshot(api_client, sys.stdout, sys.stderr)
        with open(output, "w", encoding="utf-8") as out:
            return write_snapshot(api_client, out, sys.stderr)
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
