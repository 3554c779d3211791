"""The advisor's HTTP API: an aggregated Kubernetes API the kube-apiserver proxies to.

Paths (group ``advisor.tpu-admission.antgroup.com``, version ``v1alpha1``):

- ``GET /apis``, ``/apis/<group>``, ``/apis/<group>/<version>``: discovery, so the API
  server, ``kubectl get --raw`` and typed clients find the resources below;
- ``GET .../namespaces/<ns>/explanations/<kind>.<name>``: SPEC §13's answer for one job
  or Workload (``jobset.llm-pretrain``), verb ``get`` on ``explanations``;
- ``POST .../namespaces/<ns>/simulations``: SPEC §12's answer for the object in the body,
  verb ``create`` on ``simulations``; the object is taken as one of that namespace;
- ``GET .../quotas``: the cohort tree's quota picture (``tpu-admission quota -o json``),
  cluster-scoped, verb ``list`` on ``quotas``: a permission of its own;
- ``GET /healthz``, ``/readyz``: the kubelet's probes, the only paths without a caller.

Every other request needs a caller the front proxy names (``webhook.advisor.frontproxy``),
else ``401``. The API server has checked RBAC for the request before proxying it; names of
other namespaces in an answer are checked again here (``webhook.advisor.access``).

Bounds: a simulation's body is read up to ``server.maxBodyBytes`` and refused (413) the
moment it passes it; the work waits in a bounded queue (``429`` with ``Retry-After`` when
full), has a deadline (``504``), and is dropped when its client leaves before it starts
(``webhook.advisor.workqueue``). Refusals of the API itself are Kubernetes ``Status``
objects; explanations and simulations keep their SPEC bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from starlette.types import ASGIApp, Receive, Scope, Send

from webhook.advisor import explaining, simulating
from webhook.advisor.access import GROUP, VERSION, Authorizer, other_queues, redact
from webhook.advisor.frontproxy import Caller, FrontProxy, Unauthenticated
from webhook.advisor.quotatree import quota_document
from webhook.advisor.workqueue import Busy, TimedOut, WorkQueue
from webhook.cluster import kinds as k
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.view import ClusterState
from webhook.explain.result import document
from webhook.policy.config import Policy
from webhook.serving.bodies import BodyTooLarge, ClientGone, body_headers, is_json, read_body
from webhook.wire.jsonwire import encode

log = logging.getLogger("tpu_admission.advisor")
T = TypeVar("T")

GROUP_VERSION: Final = f"{GROUP}/{VERSION}"
_PREFIX: Final = f"/apis/{GROUP}/{VERSION}/"
#: a 503 (the watch has not synced): worth asking again soon
_RETRY: Final = ((b"retry-after", b"5"),)

#: the APIResourceList: what the API server's discovery and RBAC know the resources by
RESOURCES: Final = (
    {
        "name": "explanations",
        "singularName": "explanation",
        "namespaced": True,
        "kind": "Explanation",
        "verbs": ["get"],
    },
    {
        "name": "simulations",
        "singularName": "simulation",
        "namespaced": True,
        "kind": "Simulation",
        "verbs": ["create"],
    },
    {"name": "quotas", "singularName": "quota", "namespaced": False, "kind": "Quota", "verbs": ["list"]},
)


@dataclass
class Advisor:
    """What the app answers from and with."""

    policy: Policy
    cluster: ClusterState | None
    front_proxy: FrontProxy
    authorizer: Authorizer
    work: WorkQueue
    #: the DER client certificate of a request's connection, if it presented one
    peer_certificate: Callable[[Scope], bytes | None]
    #: whether the server is ready (``ServerState.ready``, which SIGTERM turns off)
    ready: Callable[[], bool]


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A Kubernetes ``Status``: how an API server says no (kubectl prints its message)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


async def _send(send: Send, code: int, body: Any, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    data = encode(body)
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data)), *headers]
    await send({"type": "http.response.start", "status": code, "headers": head})
    await send({"type": "http.response.body", "body": data})


async def _until_gone(receive: Receive) -> None:
    """Returns once the client has disconnected (the request's body already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def create_app(advisor: Advisor) -> ASGIApp:
    policy = advisor.policy
    limit = policy.server.max_body_bytes

    def snapshot() -> Snapshot | None:
        current = advisor.cluster.snapshot() if advisor.cluster is not None else None
        return current if isinstance(current, Snapshot) else None

    async def worked(receive: Receive, send: Send, work: Callable[[], tuple[int, Any]]) -> None:
        """``work`` through the queue, answered unless its client has gone first."""
        running = asyncio.ensure_future(advisor.work.run(work))
        gone = asyncio.ensure_future(_until_gone(receive))
        try:
            await asyncio.wait({running, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not running.done():
                running.cancel()
        if not running.done() or running.cancelled():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await running  # Busy, TimedOut or a fault: nobody is left to tell
            return  # the client has gone: nobody to answer
        try:
            code, body = running.result()
        except Busy as exc:
            retry = str(exc.retry_after).encode()
            message = f"the advisor is answering other requests; retry in {exc.retry_after} s"
            return await _send(send, 429, status(429, "TooManyRequests", message), ((b"retry-after", retry),))
        except TimedOut:
            message = f"no answer within the deadline of {advisor.work.deadline_seconds:g} s"
            return await _send(send, 504, status(504, "Timeout", message))
        except Exception:
            log.exception("internal error in the advisor")
            return await _send(send, 500, status(500, "InternalError", "the advisor failed; see its logs"))
        await _send(send, code, body, _RETRY if code == 503 else ())

    def explanation(caller: Caller, namespace: str, target: str) -> tuple[int, Any]:
        kind, dot, name = target.partition(".")
        if not dot:
            reason = f"{target[:100]!r}: name an explanation KIND.NAME, as jobset.llm-pretrain or workload.NAME"
            return 400, document([], [reason])
        code, body = explaining.answer(advisor.cluster, namespace, kind, name)
        return code, redact(body, namespace, caller, advisor.authorizer, other_queues(body))

    def simulation(caller: Caller, namespace: str, body: bytes) -> tuple[int, Any]:
        code, answer = simulating.answer(body, policy, advisor.cluster, namespace)
        return code, redact(answer, namespace, caller, advisor.authorizer, other_queues(answer))

    def quotas() -> tuple[int, Any]:
        current = snapshot()
        if current is None:
            return 503, status(503, "ServiceUnavailable", "the advisor watches no cluster")
        reason = current.unread.get(k.CLUSTER_QUEUES.name)
        if reason is not None:
            return 503, status(503, "ServiceUnavailable", f"ClusterQueues cannot be read: {reason}")
        return 200, {"apiVersion": GROUP_VERSION, "kind": "Quota", **quota_document(current.quota_picture())}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path in ("/healthz", "/readyz") and method == "GET":
            ok = path == "/healthz" or advisor.ready()
            return await _send(send, 200 if ok else 503, {"status": "ok" if ok else "not ready"})
        try:
            caller = advisor.front_proxy.caller(advisor.peer_certificate(scope), scope["headers"])
        except Unauthenticated as exc:
            log.info("refused a request to %s: %s", path[:200], exc)
            return await _send(send, 401, status(401, "Unauthorized", "Unauthorized"))
        if method == "GET" and path == "/apis":
            return await _send(send, 200, _group_list())
        if method == "GET" and path == f"/apis/{GROUP}":
            return await _send(send, 200, _group())
        if method == "GET" and path == f"/apis/{GROUP}/{VERSION}":
            return await _send(send, 200, {"kind": "APIResourceList", "apiVersion": "v1",
                                           "groupVersion": GROUP_VERSION, "resources": list(RESOURCES)})  # fmt: skip
        parts = path[len(_PREFIX) :].split("/") if path.startswith(_PREFIX) else []
        if parts == ["quotas"] and method == "GET":
            return await worked(receive, send, quotas)
        if len(parts) == 4 and parts[0] == "namespaces" and parts[2] == "explanations" and method == "GET":
            namespace, target = parts[1], parts[3]
            return await worked(receive, send, lambda: explanation(caller, namespace, target))
        if len(parts) == 3 and parts[0] == "namespaces" and parts[2] == "simulations" and method == "POST":
            media, declared = body_headers(scope)
            # No type is JSON, as the API server itself takes it: its aggregation layer forwards
            # a client's streamed body without the client's Content-Type.
            if media is not None and not is_json(media):
                return await _send(send, 415, {"error": "content-type must be application/json"})
            try:
                body = await read_body(receive, declared, limit)
            except BodyTooLarge as exc:
                return await _send(send, 413, {"error": str(exc)})
            except ClientGone:
                return None
            namespace = parts[1]
            return await worked(receive, send, lambda: simulation(caller, namespace, body))
        shown = path if len(path) <= 200 else path[:200] + "..."
        return await _send(send, 404, status(404, "NotFound", f"{method} {shown}: not served by the advisor"))

    return app


def _group() -> dict[str, Any]:
    version = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [version], "preferredVersion": version}


def _group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}
