"""``tpu-admission snapshot``: write a ``--cluster-state`` file from a live cluster.

Lists every kind the watch cache reads (``webhook.cluster.kinds.WATCHED``: what the
cluster-aware job rules read, and what the admin guard reads besides, Kueue's ConfigMap
and controller by name only), paged, with the official ``kubernetes`` client, and writes
one typed list per kind (``kind: CohortList``, as the API server answers a list call) in
one multi-document YAML, for ``check --cluster-state`` and ``lint-queues --cluster-state``.
A typed list says "this kind was read" even when it is empty, so ``check
--cluster-state`` can tell "there are no Cohorts" (implicit cohorts only) from "Cohorts
were not captured" (unknown): unknown is not zero. A kind that cannot be listed (403,
CRD absent) is left out, named on stderr, and the exit code is 1. An API server that
cannot be reached (or refuses the credentials) is exit 2 with nothing written: the file
is written whole, through a temporary file renamed at the end, or not at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import yaml

from webhook.cluster import kinds as k
from webhook.cluster.client import ClusterConfigError, list_call, list_pages, load_configuration
from webhook.cluster.watch import describe_error
from webhook.policy.config import Policy

PAGE_SIZE = 500


def list_kind(
    api_client: Any, kind: k.Kind, timeout: float = 60.0, named: tuple[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """Every object of ``kind`` across namespaces (``named``: the one object), as plain JSON, page by page."""
    for page in list_pages(list_call(api_client, kind, named), kind, PAGE_SIZE, timeout):
        yield from page


class ClusterUnreachable(Exception):
    """The API server cannot be reached, or refuses the credentials: no kind can be listed."""


def _unreachable(exc: BaseException) -> bool:
    status = getattr(exc, "status", None)
    return not (isinstance(status, int) and status) or status == 401


def collect_snapshot(api_client: Any, errors: TextIO, policy: Policy | None = None) -> tuple[str, int]:
    """The snapshot's text and its exit code: 0, or 1 when a kind could not be listed (named on
    ``errors``). ``ClusterUnreachable`` when the API server cannot be reached at all. The
    policy names Kueue's ConfigMap and controller (its ``kueue:`` section)."""
    policy = policy or Policy()
    documents = []
    missing = []
    for kind in k.WATCHED:
        try:
            items = list(list_kind(api_client, kind, named=k.named(kind, policy)))
        except Exception as exc:  # a kind we cannot list is named, not a crash
            if _unreachable(exc):
                raise ClusterUnreachable(describe_error(exc)) from exc
            missing.append(kind.name)
            print(f"tpu-admission snapshot: {kind.name}: {describe_error(exc)}; left out (unknown)", file=errors)
            continue
        documents.append({"apiVersion": kind.api_version, "kind": f"{kind.kind}List", "items": items})
    head = f"# tpu-admission snapshot: {', '.join(k.name for k in k.WATCHED if k.name not in missing)}\n"
    return head + yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False), 1 if missing else 0


def write_atomically(path: Path, text: str) -> None:
    """``text`` in ``path``, or ``path`` untouched: written to a temporary file beside it, then renamed."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def run_snapshot(
    kubeconfig: str | None, output: str | None, policy: Policy | None = None, context: str | None = None
) -> int:
    """The subcommand: 0 all kinds written, 1 some kinds missing (the others written), 2 no
    cluster configuration, an unreachable API server, or an output that cannot be written
    (nothing written)."""
    from kubernetes import client

    try:
        configuration = load_configuration(kubeconfig, context)
    except ClusterConfigError as exc:
        print(f"tpu-admission snapshot: {exc}", file=sys.stderr)
        return 2
    api_client = client.ApiClient(configuration)
    try:
        text, code = collect_snapshot(api_client, sys.stderr, policy)
    except ClusterUnreachable as exc:
        print(
            f"tpu-admission snapshot: the API server at {configuration.host}: {exc}; nothing written", file=sys.stderr
        )
        return 2
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    if output in (None, "-"):
        sys.stdout.write(text)
        return code
    try:
        write_atomically(Path(output), text)
    except OSError as exc:
        problem = exc.strerror or exc
        print(f"tpu-admission snapshot: --output-file {output}: cannot write it: {problem}", file=sys.stderr)
        return 2
    return code
