"""A small Kubernetes API server for tests and benchmarks, speaking real HTTP.

Same idea as kmock's ``KubernetesEmulator`` (objects in memory, served over HTTP to the
real ``kubernetes`` client), with what the watch cache needs and kmock lacks: a global
resourceVersion, paged lists (``limit``/``continue``), watches that resume from a
resourceVersion and answer ``410 Gone`` once their history is compacted, bookmarks on
watches that ask for them, bearer-token auth, and fault injection: per-kind errors
(403, 404), dropped watch connections, watches that end at once, continue tokens that
expire, and a hung server (``hang``: like SIGSTOP, connections stay open and nothing
is sent). Objects are changed through Python (``put``/``delete``), as kmock's
``objects[...]`` are; clients read them, and may write only through server-side apply
(``PATCH`` with ``application/apply-patch+yaml``) and ``DELETE``. SubjectAccessReviews
(``POST``) are answered from ``grants``, a test's set of who may do what where.

It serves the watched kinds (``webhook.cluster.kinds.WATCHED``) and whatever ``kinds`` a
test adds (``audit`` lists JobSets, Jobs and Deployments and writes PolicyReports), at
the cluster-wide collection path and at ``.../namespaces/NS/PLURAL``; lists understand
a ``labelSelector`` of ``key=value`` terms, and lists and watches a ``fieldSelector`` of
``metadata.name=NAME`` (how one named object is read).

Where the product reads an answer, it is the real API server's answer, in shape and
order: ``tests/e2e/test_e2e_fake_parity.py`` sends every request the product sends to
both, and ``tests/test_cluster_apiserver.py`` keeps what that comparison corrected.
"""

from __future__ import annotations

import copy
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from webhook.cluster.kinds import WATCHED, Kind

TOKEN = "test-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: the API groups whose list responses the API server encodes from typed objects: without
#: each item's apiVersion and kind (custom resources' lists keep them)
BUILT_IN_GROUPS = frozenset({"", "apps", "batch"})


#: the empty typed object a built-in kind's bookmark carries besides its kind and metadata, for
#: the kinds a watch was compared on (a custom resource's bookmark has nothing more)
EMPTY_BUILT_IN: dict[str, dict[str, Any]] = {
    "Node": {
        "spec": {},
        "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": dict.fromkeys(
                (
                    "machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
                    "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture",
                ),
                "",
            ),
        },
    },
}  # fmt: skip


def _as_listed(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a list response carries it: a built-in kind's item without apiVersion and kind."""
    if kind.group not in BUILT_IN_GROUPS:
        return obj
    return {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}


def _assign(kind: Kind, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The metadata the API server assigns, as it assigns it: ``uid`` and ``creationTimestamp``
    on create, kept on every update; ``generation`` (not on core kinds) 1 on create, one more
    on each change outside metadata and status. What the test gave is kept."""
    meta = obj["metadata"]
    before = (old or {}).get("metadata") or {}
    meta.setdefault("uid", before.get("uid") or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind.path}/{_key(kind, obj)}")))
    meta.setdefault(
        "creationTimestamp", before.get("creationTimestamp") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    )
    if kind.group and "generation" not in meta:
        changed = old is not None and _content(old) != _content(obj)
        meta["generation"] = int(before.get("generation") or 0) + 1 if old is None or changed else before["generation"]


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


def _details(kind: Kind, name: str | None = None) -> dict[str, str]:
    """A ``Status``'s ``details``: the object's name, if any, its group (not for the core group) and resource."""
    details = {"name": name} if name else {}
    if kind.group:
        details["group"] = kind.group
    return {**details, "kind": kind.plural}


def write_kubeconfig(path: Path, port: int, token: str = TOKEN) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "tester", "user": {"token": token}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
                "current-context": "fake",
            }
        )
    )
    return path


_PATHS = frozenset(kind.path for kind in WATCHED)


def _named(obj: dict[str, Any], namespace: str | None, query: dict[str, list[str]]) -> bool:
    """Whether ``obj`` is in ``namespace`` (``None``: any) and has the ``fieldSelector``'s name, if one is given."""
    meta = obj.get("metadata") or {}
    if namespace is not None and meta.get("namespace", "") != namespace:
        return False
    selector = query.get("fieldSelector", [""])[0]
    if not selector:
        return True
    field, _, name = selector.partition("=")
    if field != "metadata.name" or "," in selector:
        raise NotImplementedError(f"fieldSelector {selector!r}: only metadata.name=NAME is served")
    return bool(meta.get("name") == name)


def client_for(api: FakeApiServer, tmp_path: Path) -> Any:
    """The real ``kubernetes`` client, configured as the commands configure it, talking to ``api``."""
    from kubernetes import client

    from webhook.cluster.client import load_configuration

    return client.ApiClient(load_configuration(str(write_kubeconfig(tmp_path / "kubeconfig", api.port))))


def _key(kind: Kind, obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace", "")) if kind.namespaced else "", str(meta["name"]))


class FakeApiServer:
    def __init__(self, port: int = 0, kinds: Iterable[Kind] = ()) -> None:
        self.cond = threading.Condition()
        self.version = 0
        #: every kind served: the watched ones and the test's own
        self.kinds: tuple[Kind, ...] = (*WATCHED, *(kind for kind in kinds if kind.path not in _PATHS))
        #: every name a collection goes by: a test's kind may share a watched one's path (Deployments)
        self.names: dict[str, set[str]] = {}
        for kind in (*self.kinds, *kinds):
            self.names.setdefault(kind.path, set()).add(kind.name)
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {k.path: {} for k in self.kinds}
        self.history: dict[str, list[tuple[int, str, dict[str, Any]]]] = {k.path: [] for k in self.kinds}
        #: a watch from a resourceVersion older than this gets 410 Gone
        self.oldest: dict[str, int] = {k.path: 0 for k in self.kinds}
        #: per collection, its keys in etcd's order while none came or went (``ordered``)
        self._ordered: dict[str, list[tuple[str, str]]] = {}
        self.expired = 0  # bumped by expire_watches(): open watches end with 410
        self.errors: dict[str, int] = {}  # kind name -> HTTP status to answer
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        #: every request's URL path as sent (``requests`` names a namespaced list by its collection)
        self.paths: list[str] = []
        #: writes by clients: (collection path, method, namespace, name)
        self.writes: list[tuple[str, str, str, str]] = []
        self.stopping = False
        #: seconds between bookmarks on a watch with allowWatchBookmarks (the real one: ~60)
        self.bookmark_interval = 0.2
        self.dropped = 0  # bumped by drop_watches(): open watches end without a word
        self.short_watches = False  # watches end at once, empty
        self.expire_continue = 0  # this many continued list pages answer 410 Expired
        self.hung = threading.Event()
        #: what SubjectAccessReviews allow: (user or group, verb, resource, namespace) ("" namespace: any)
        self.grants: set[tuple[str, str, str, str]] = set()
        #: every SubjectAccessReview's spec, as asked
        self.reviews: list[dict[str, Any]] = []
        self.httpd = _QuietServer(("127.0.0.1", port), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> FakeApiServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        # a handler that failed for another reason than a hang-up is a bug in this server
        assert not self.httpd.handler_errors, self.httpd.handler_errors

    # ---------------------------------------------------------------- changes

    def put(self, kind: Kind, obj: dict[str, Any]) -> int:
        """Create or replace an object; watchers get ADDED or MODIFIED."""
        obj = copy.deepcopy(obj)
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        with self.cond:
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            store = self.objects[kind.path]
            old = store.get(_key(kind, obj))
            _assign(kind, obj, old)
            event = "MODIFIED" if old is not None else "ADDED"
            if old is None:
                self._ordered.pop(kind.path, None)
            store[_key(kind, obj)] = obj
            self.history[kind.path].append((self.version, event, obj))
            self.cond.notify_all()
            return self.version

    def load(self, kind: Kind, objects: Iterable[dict[str, Any]]) -> None:
        """Bulk-create without watch history (benchmarks: the state before anyone watches)."""
        with self.cond:
            store = self.objects[kind.path]
            for obj in objects:
                self.version += 1
                obj.setdefault("apiVersion", kind.api_version)
                obj.setdefault("kind", kind.kind)
                obj["metadata"]["resourceVersion"] = str(self.version)
                _assign(kind, obj, store.get(_key(kind, obj)))
                store[_key(kind, obj)] = obj
            self._ordered.pop(kind.path, None)
            self.oldest[kind.path] = self.version

    def ordered(self, kind: Kind) -> list[tuple[str, str]]:
        """The keys of ``kind``'s objects in etcd's order (``namespace/name``), kept until a key comes or goes
        (a list of many objects is read in many pages). Called with ``cond`` held."""
        keys = self._ordered.get(kind.path)
        if keys is None or len(keys) != len(self.objects[kind.path]):
            keys = self._ordered[kind.path] = sorted(self.objects[kind.path], key="/".join)
        return keys

    def delete(self, kind: Kind, name: str, namespace: str = "") -> None:
        with self.cond:
            obj = self.objects[kind.path].pop((namespace if kind.namespaced else "", name))
            self._ordered.pop(kind.path, None)
            self.version += 1
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}
            self.history[kind.path].append((self.version, "DELETED", obj))
            self.cond.notify_all()

    def expire_watches(self) -> None:
        """Compact all history: open watches end with 410 Gone, as do resumes from old versions."""
        with self.cond:
            self.expired += 1
            for path in self.history:
                self.history[path] = []
                self.oldest[path] = self.version
            self.cond.notify_all()

    def drop_watches(self) -> None:
        """Cut every open watch connection mid-stream (a proxy restart, a network blip)."""
        with self.cond:
            self.dropped += 1
            self.cond.notify_all()

    def hang(self) -> None:
        """Stop answering anything, keeping connections open (SIGSTOP on the API server)."""
        self.hung.set()

    def resume(self) -> None:
        self.hung.clear()
        with self.cond:
            self.cond.notify_all()

    def applied(self, kind: Kind) -> list[tuple[str, str]]:
        """The (namespace, name) of every object clients wrote of ``kind`` (server-side apply), in order."""
        return [(ns, name) for path, method, ns, name in list(self.writes) if path == kind.path and method == "PATCH"]

    def watch_queries(self, kind: Kind) -> list[dict[str, list[str]]]:
        return [query for path, query in list(self.requests) if path == kind.path and query.get("watch")]

    def list_queries(self, kind: Kind) -> list[dict[str, list[str]]]:
        return [query for path, query in list(self.requests) if path == kind.path and not query.get("watch")]

    def watch_requests(self, kind: Kind) -> int:
        return sum(1 for path, query in self.requests if path == kind.path and query.get("watch"))

    def list_requests(self, kind: Kind) -> int:
        return sum(1 for path, query in self.requests if path == kind.path and not query.get("watch"))


class _QuietServer(ThreadingHTTPServer):
    """Keeps handler errors instead of printing their tracebacks from the handler thread.

    A client that hangs up mid-request (the watch cache stopping, a dropped watch) is
    normal here. Printing its traceback from a handler thread is also dangerous on
    CPython 3.11: traceback carets call ``ast.parse``, whose recursion bookkeeping is
    shared between threads, so a main thread parsing at the same moment (pytest
    rewriting a late import) fails with "SystemError: AST constructor recursion depth
    mismatch" (python/cpython#106905).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: unexpected handler errors, for a test to look at (hang-ups are not kept)
        self.handler_errors: list[BaseException] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, ConnectionError):
            self.handler_errors.append(error)


def _selected(obj: dict[str, Any], selector: str) -> bool:
    """Whether ``obj``'s labels match a ``labelSelector`` of ``key=value`` terms (the only form served)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, sep, value = term.partition("=")
        if not sep:
            raise NotImplementedError(f"labelSelector {selector!r}: only key=value terms are served")
        if labels.get(key) != value:
            return False
    return True


def _handler(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    by_path = {kind.path: kind for kind in api.kinds}
    #: the group versions served, as path prefixes ("/apis/kueue.x-k8s.io/v1beta2/")
    versions = {kind.path.rsplit("/", 1)[0] + "/" for kind in api.kinds}

    def route(path: str) -> tuple[Kind | None, str | None, str | None]:
        """(kind, namespace, name) of a collection or object path; namespace None: every namespace."""
        kind = by_path.get(path)
        if kind is not None:
            return kind, None, None
        parts = [unquote(part) for part in path.split("/")]
        # /apis/G/V/namespaces/NS/PLURAL[/NAME] or /api/v1/namespaces/NS/PLURAL[/NAME]
        prefix = 4 if path.startswith("/apis/") else 3
        if len(parts) in (prefix + 3, prefix + 4) and parts[prefix] == "namespaces":
            kind = by_path.get("/".join(parts[:prefix]) + "/" + parts[prefix + 2])
            if kind is not None and kind.namespaced:
                return kind, parts[prefix + 1], parts[prefix + 3] if len(parts) == prefix + 4 else None
        # a cluster-scoped object: /apis/G/V/PLURAL/NAME
        kind = by_path.get("/".join(parts[:-1])) if len(parts) == prefix + 2 else None
        if kind is not None and not kind.namespaced:
            return kind, None, parts[-1]
        return None, None, None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _text(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str, details: dict[str, str] | None = None) -> None:
            """A failure as the API server words it: a ``Status`` with empty ``metadata`` and
            ``details`` naming the resource (empty for a path it does not serve)."""
            self._json(
                code,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "details": details or {},
                    "code": code,
                },
            )

        def _wait_while_hung(self) -> None:
            while api.hung.is_set() and not api.stopping:
                time.sleep(0.05)

        def _route(self) -> tuple[Kind, str | None, str | None, dict[str, list[str]]] | None:
            """The request's kind, namespace, name and query, or None after answering an error."""
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            kind, namespace, name = route(url.path)
            api.paths.append(url.path)
            # the collection path, as the counters (list_requests, ...) name it
            api.requests.append((kind.path if kind is not None else url.path, query))
            self._wait_while_hung()
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._status(401, "Unauthorized", "Unauthorized")
                return None
            if kind is None:
                if not any(url.path.startswith(prefix) for prefix in versions):
                    # a group the server does not serve at all: its mux's plain-text answer, no Status
                    self._text(404, "404 page not found\n")
                    return None
                self._status(404, "NotFound", "the server could not find the requested resource")
                return None
            status = next((api.errors[name] for name in sorted(api.names[kind.path]) if name in api.errors), None)
            if status == 403:
                resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
                message = f"{resource} is forbidden: User cannot list resource"
                # RBAC reads a metadata.name field selector as the one object asked for, and names it
                field, _, selected = query.get("fieldSelector", [""])[0].partition("=")
                self._status(
                    403, "Forbidden", message, _details(kind, name or (selected if field == "metadata.name" else None))
                )
                return None
            if status is not None:
                self._status(status, "NotFound", "the server could not find the requested resource")
                return None
            return kind, namespace, name, query

        def do_GET(self) -> None:
            routed = self._route()
            if routed is None:
                return None
            kind, namespace, name, query = routed
            if name is not None:
                obj = api.objects[kind.path].get((namespace or "", name))
                if obj is None:
                    return self._status(404, "NotFound", f'{kind.plural} "{name}" not found', _details(kind, name))
                return self._json(200, obj)
            if query.get("watch", [""])[0] in ("true", "1"):
                return self._watch(kind, query, namespace)
            return self._list(kind, query, namespace)

        def do_POST(self) -> None:
            """SubjectAccessReviews only, answered from ``grants`` (no RBAC objects are read)."""
            url = urlsplit(self.path)
            api.paths.append(url.path)
            body = self._body()
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._status(401, "Unauthorized", "Unauthorized")
            if url.path != "/apis/authorization.k8s.io/v1/subjectaccessreviews" or not isinstance(body, dict):
                return self._status(404, "NotFound", f"the server could not find the requested resource {url.path}")
            spec = body.get("spec") or {}
            api.reviews.append(spec)
            attributes = spec.get("resourceAttributes") or {}
            who = {spec.get("user", ""), *(spec.get("groups") or ())}
            allowed = any(
                (subject, attributes.get("verb"), attributes.get("resource"), namespace) in api.grants
                for subject in who
                for namespace in (attributes.get("namespace", ""), "")
            )
            # decoded and encoded again: empty fields are left out, and metadata is there
            spec = {key: value for key, value in spec.items() if value not in ({}, [], "", None)}
            return self._json(201, {**body, "metadata": {}, "spec": spec, "status": {"allowed": allowed}})

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            return yaml.safe_load(self.rfile.read(length)) if length else None

        def do_PATCH(self) -> None:
            """Server-side apply only: the object as sent becomes the stored one (no field ownership)."""
            routed = self._route()
            body = self._body()
            if routed is None:
                return None
            kind, namespace, name, query = routed
            if self.headers.get("Content-Type") != "application/apply-patch+yaml":
                return self._status(415, "UnsupportedMediaType", "only server-side apply is served")
            if name is None or not isinstance(body, dict) or not query.get("fieldManager"):
                return self._status(400, "BadRequest", "apply needs an object path, a body and a fieldManager")
            metadata = body.setdefault("metadata", {})
            if metadata.get("name") != name or (kind.namespaced and metadata.get("namespace", namespace) != namespace):
                return self._status(400, "BadRequest", "the body's name or namespace is not the path's")
            if kind.namespaced:
                metadata["namespace"] = namespace
            api.writes.append((kind.path, "PATCH", namespace or "", name))
            api.put(kind, body)
            self._json(200, api.objects[kind.path][(namespace or "", name)])

        def do_DELETE(self) -> None:
            routed = self._route()
            self._body()
            if routed is None:
                return None
            kind, namespace, name, _ = routed
            if name is None or (namespace or "", name) not in api.objects[kind.path]:
                return self._status(404, "NotFound", f'{kind.plural} "{name}" not found')
            api.writes.append((kind.path, "DELETE", namespace or "", name))
            api.delete(kind, name, namespace or "")
            self._json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200})

        def _list(self, kind: Kind, query: dict[str, list[str]], namespace: str | None = None) -> None:
            selector = query.get("labelSelector", [""])[0]
            with api.cond:
                # in the order of the stored keys (etcd's): namespace, then name
                items = [
                    obj
                    for obj in (api.objects[kind.path][key] for key in api.ordered(kind))
                    if _named(obj, namespace, query) and (not selector or _selected(obj, selector))
                ]
                version = api.version
            limit = int(query.get("limit", ["0"])[0]) or len(items) or 1
            offset = int(query.get("continue", ["0"])[0])
            if offset and api.expire_continue > 0:
                api.expire_continue -= 1
                return self._status(410, "Expired", "The provided continue parameter is too old")
            page = [_as_listed(kind, obj) for obj in items[offset : offset + limit]]
            metadata: dict[str, Any] = {"resourceVersion": str(version)}
            if kind.group not in BUILT_IN_GROUPS:
                metadata["continue"] = ""  # a custom resource's list says it, empty on the last page
            if offset + limit < len(items):
                metadata["continue"] = str(offset + limit)
                if not selector and not query.get("fieldSelector", [""])[0]:
                    # counted only when no selector filters the rest
                    metadata["remainingItemCount"] = len(items) - offset - limit
            self._json(
                200, {"apiVersion": kind.api_version, "kind": f"{kind.kind}List", "metadata": metadata, "items": page}
            )

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _watch(self, kind: Kind, query: dict[str, list[str]], namespace: str | None = None) -> None:
            since = int(query.get("resourceVersion", ["0"])[0] or 0)
            deadline = time.monotonic() + int(query.get("timeoutSeconds", ["30"])[0])
            bookmarks = query.get("allowWatchBookmarks", [""])[0] in ("true", "1")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            expired, dropped = api.expired, api.dropped
            next_bookmark = time.monotonic() + api.bookmark_interval
            try:
                while time.monotonic() < deadline and not api.short_watches:
                    if api.hung.is_set():  # hung: the connection stays, nothing comes
                        self._wait_while_hung()
                        continue
                    with api.cond:
                        if dropped != api.dropped:
                            self.close_connection = True
                            return  # no terminating chunk: the client sees a broken stream
                        gone = since < api.oldest[kind.path] or expired != api.expired
                        events = (
                            [e for e in api.history[kind.path] if e[0] > since and _named(e[2], namespace, query)]
                            if not gone
                            else []
                        )
                        bookmark = bookmarks and not events and time.monotonic() >= next_bookmark
                        version = api.version
                        if not gone and not events and not bookmark and not api.stopping:
                            api.cond.wait(min(0.05, max(0.0, deadline - time.monotonic())))
                            continue
                    if api.stopping:
                        break
                    if gone:
                        error = {
                            "type": "ERROR",
                            "object": {
                                "kind": "Status",
                                "apiVersion": "v1",
                                "metadata": {},
                                "code": 410,
                                "reason": "Expired",
                                "message": f"too old resource version: {since}",
                                "status": "Failure",
                            },
                        }
                        self._chunk(json.dumps(error).encode() + b"\n")
                        break
                    if bookmark:
                        # Nothing of this kind up to the current version: the client may resume there.
                        mark: dict[str, Any] = {"kind": kind.kind, "apiVersion": kind.api_version}
                        mark["metadata"] = {"resourceVersion": str(version)}
                        # a built-in kind's bookmark is its typed empty object: its spec and status too
                        mark.update(copy.deepcopy(EMPTY_BUILT_IN.get(kind.kind, {})))
                        self._chunk(json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n")
                        since = max(since, version)
                        next_bookmark = time.monotonic() + api.bookmark_interval
                    for version, event, obj in events:
                        self._chunk(json.dumps({"type": event, "object": obj}).encode() + b"\n")
                        since = version
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def wait_until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> None:
    """Poll until ``predicate()`` is true; a liveness bound, not a timing assertion."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
