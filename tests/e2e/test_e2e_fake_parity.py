"""The unit tests' fake API server (``tests/cluster_apiserver.py``) against the real one.

The fast tests trust ``FakeApiServer`` to answer as kube-apiserver does; these tests check
that trust for every request form the product sends: each kind listed across namespaces
and by name (a ``metadata.name`` field selector), in pages (``limit``/``continue``); the
judged kinds across namespaces, in one namespace and by name (``audit``, ``explain``);
watches with bookmarks, from a list's resourceVersion and resumed from an event's; the
answers for a kind not served (404) and not permitted (403); a SubjectAccessReview; the
front-proxy ConfigMap; ``audit --apply``'s writes. Each request goes through the product's own call
(``list_call``, ``list_pages``, ``load_state``, ``collect_snapshot``, ...) to both servers
holding the same objects: the fake is loaded with a copy of what the real one stores.

Whole answers are compared. Only what a server assigns is normalised, never its shape:
the values of resourceVersion, uid, creationTimestamp and continue tokens, and
managedFields (written only by the real server's field manager). An error's message is
the server's prose (the real one names the user); its code, reason and other fields are
compared.
"""

from __future__ import annotations

import copy
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import policy_report
from cluster_apiserver import FakeApiServer, client_for
from controlplane import ControlPlane, shipped_policy

from webhook.advisor.access import SubjectAccessReviews
from webhook.advisor.frontproxy import Caller, read_configmap
from webhook.cluster import kinds as k
from webhook.cluster.client import list_call, load_configuration
from webhook.cluster.export import collect_snapshot
from webhook.cluster.listing import JUDGED_KINDS, job_call, judged_call, judged_objects, load_state
from webhook.policy.config import Policy, load_policy

pytestmark = pytest.mark.e2e

NAMESPACE = "parity"
CONFIG = "parity-config"
#: values a server assigns, compared for presence only
ASSIGNED = ("resourceVersion", "uid", "creationTimestamp")
#: Kueue's manager writes statuses while a copy is taken: a comparison is retried this often
ATTEMPTS = 3
#: a watch's server-side timeout: the real server sends a bookmark two seconds before it ends
WATCH_SECONDS = 5


def normalised(value: Any) -> Any:
    """``value`` with every server-assigned value replaced by a marker and managedFields dropped."""
    if isinstance(value, list | tuple):
        return [normalised(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: normalised(item) for key, item in value.items() if key != "managedFields"}
    for key in ASSIGNED:
        if key in out and out[key] not in (None, ""):
            out[key] = "<assigned>"
    if isinstance(out.get("continue"), str) and out["continue"]:
        out["continue"] = "<token>"
    return out


def differences(ours: Any, theirs: Any, where: str = "") -> list[str]:
    """Where two answers differ, each place with the fake's value and the real one's."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [
            line
            for key in sorted(set(ours) | set(theirs), key=str)
            for line in differences(ours.get(key, "<absent>"), theirs.get(key, "<absent>"), f"{where}.{key}")
        ]
    if isinstance(ours, list | tuple) and isinstance(theirs, list | tuple) and len(ours) == len(theirs):
        return [
            line
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            for line in differences(a, b, f"{where}[{i}]")
        ]
    return (
        []
        if ours == theirs
        else [f"{where}: fake {json.dumps(ours, default=str)[:300]} real {json.dumps(theirs, default=str)[:300]}"]
    )


def same(ours: Any, theirs: Any) -> None:
    """The fake's answer is the real one's; else every difference is named."""
    assert ours == theirs, "\n".join(differences(ours, theirs)[:40])


def raw_get(api_client: Any, path: str) -> dict[str, Any]:
    """One GET as JSON (test setup: the copy of what the real server stores)."""
    method, url, headers, body, post = api_client.param_serialize(
        "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
    )
    response = api_client.call_api(method, url, headers, body, post)
    response.read()
    listed: dict[str, Any] = json.loads(response.data)
    return listed


def answer(call: Callable[..., Any], *args: Any, **options: Any) -> tuple[int, Any]:
    """(HTTP status, body as JSON) of one product call, made with ``_preload_content=False``."""
    from kubernetes.client.exceptions import ApiException

    try:
        response = call(*args, **options, _preload_content=False)
    except ApiException as exc:
        try:
            body = json.loads(exc.body) if exc.body else None
        except ValueError:  # not every refusal is a Status: an unserved group's is plain text
            body = exc.body.decode() if isinstance(exc.body, bytes) else exc.body
        if isinstance(body, dict) and "message" in body:
            body["message"] = "<message>"
        return int(exc.status), body
    return int(response.status), json.loads(response.data)


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """The control plane with this module's namespace and its ConfigMap."""
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG, "namespace": NAMESPACE, "labels": {"app": "parity"}},
            "data": {"key": "one"},
        },
    ]
    control_plane.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    try:
        yield control_plane
    finally:
        control_plane.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


@pytest.fixture(scope="module")
def real(plane: ControlPlane) -> Iterator[Any]:
    from kubernetes import client

    api_client = client.ApiClient(load_configuration(str(plane.layout.kubeconfig)))
    yield api_client
    api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(shipped_policy())
    return load_policy(path)


def _collections(api: FakeApiServer) -> dict[str, k.Kind]:
    """Every collection the fake serves, once: Deployments are both Kueue's controller and a judged kind."""
    return {kind.path: kind for kind in api.kinds}


def copy_of(real: Any, tmp_path: Path) -> tuple[FakeApiServer, Any]:
    """A started fake holding what the real server stores of every kind the fake serves, and a
    client for it: the same objects in both, their server-assigned fields included."""
    api = FakeApiServer(kinds=JUDGED_KINDS).start()
    for path, kind in _collections(api).items():
        listed = raw_get(real, path)
        api.load(kind, [k.typed(kind, item) for item in listed["items"]])
    folder = tmp_path / f"fake-{api.port}"
    folder.mkdir()
    return api, client_for(api, folder)


def agree(real: Any, tmp_path: Path, read: Callable[[Any, FakeApiServer | None], Any]) -> None:
    """``read`` through the real server and through a fresh copy of it in the fake give the same
    answer; retried on a fresh copy, since Kueue's manager may write between the copy and the read."""
    for attempt in range(ATTEMPTS):
        api, fake = copy_of(real, tmp_path)
        try:
            ours = read(fake, api)
        finally:
            fake.close()
            api.stop()
        theirs = read(real, None)
        if ours == theirs or attempt == ATTEMPTS - 1:
            same(ours, theirs)
            return
        time.sleep(1.0)


def pages(call: Callable[..., Any], limit: int) -> list[Any]:
    """Every page of a paged list as the product asks for it, each a whole normalised answer."""
    out = []
    token = None
    while True:
        options: dict[str, Any] = {"limit": limit}
        if token:
            options["_continue"] = token
        status, body = answer(call, **options)
        out.append((status, normalised(body)))
        token = (body.get("metadata") or {}).get("continue") if status == 200 else None
        if not token:
            return out


def test_every_list_the_product_sends_is_answered_alike(real: Any, policy: Policy, tmp_path: Path) -> None:
    """Each watched kind (the named ones by field selector), each judged kind across namespaces,
    in one namespace and by name, in pages of two: the same envelopes, items and tokens."""

    def read(api_client: Any, api: FakeApiServer | None) -> dict[str, Any]:
        lists: dict[str, Any] = {}
        for kind in k.WATCHED:
            lists[kind.name] = pages(list_call(api_client, kind, k.named(kind, policy)), 2)
        for kind in JUDGED_KINDS:
            # audit: across namespaces, and per namespace with --namespace
            lists[f"{kind.name} everywhere"] = pages(judged_call(api_client, kind, None), 2)
            for namespace in (policy.kueue.namespace, NAMESPACE):
                lists[f"{kind.name} in {namespace}"] = pages(judged_call(api_client, kind, namespace), 2)
            # explain: the one job, by name in its namespace
            name = policy.kueue.controller_deployment
            lists[f"{kind.name} named"] = pages(job_call(api_client, kind, policy.kueue.namespace, name), 2)
        return lists

    agree(real, tmp_path, read)


def test_snapshot_and_load_state_read_the_same_cluster(real: Any, policy: Policy, tmp_path: Path) -> None:
    """The strongest check: ``snapshot``'s document and ``load_state``'s (what ``audit``,
    ``explain`` and ``simulate`` read) are the same from either server."""

    def read(api_client: Any, api: FakeApiServer | None) -> Any:
        errors = io.StringIO()
        text, code = collect_snapshot(api_client, errors, policy)
        store, owners = load_state(api_client, policy, page_size=3, kinds=k.SIMULATED)
        snapshot = store.snapshot()
        judged = sorted(
            (json.dumps(normalised(obj), sort_keys=True) for obj in judged_objects(api_client, page_size=2)),
        )
        return {
            "snapshot": list(yaml.safe_load_all(text)),
            "code": code,
            "errors": errors.getvalue(),
            "unread": snapshot.unread,
            "owners": {repr(key): value for key, value in sorted(owners._owned.items())},
            "judged": judged,
        }

    agree(real, tmp_path, read)


def _watch(api_client: Any, kind: k.Kind, named: tuple[str, str] | None, version: str) -> list[dict[str, Any]]:
    """One watch as the watch cache opens it, read to its end: its events, in order."""
    response = list_call(api_client, kind, named)(
        watch=True,
        resource_version=version,
        allow_watch_bookmarks=True,
        timeout_seconds=WATCH_SECONDS,
        _preload_content=False,
        _request_timeout=(5.0, WATCH_SECONDS + 10.0),
    )
    from kubernetes.watch.watch import iter_resp_lines

    try:
        return [json.loads(line) for line in iter_resp_lines(response) if line]  # type: ignore[no-untyped-call]
    finally:
        response.release_conn()


def _list_version(api_client: Any, kind: k.Kind, named: tuple[str, str] | None) -> str:
    response = list_call(api_client, kind, named)(limit=500, _preload_content=False)
    return str(json.loads(response.data)["metadata"]["resourceVersion"])


def _events(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a watch delivered, normalised: its changes in order and the shape of its bookmarks."""
    changes = [normalised(event) for event in events if event.get("type") != "BOOKMARK"]
    bookmarks = [normalised(event) for event in events if event.get("type") == "BOOKMARK"]
    return {"changes": changes, "bookmark": bookmarks[:1]}


#: a Node no kubelet acts on and nothing else writes: its events are the test's changes alone. It
#: carries the taint the API server's admission would add to a new Node.
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "parity-node", "labels": {"parity": "one"}},
    "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
}


#: a ResourceFlavor no ClusterQueue names (Kueue's manager may add its finalizer: the
#: fake is made the same changes as the real server stored them)
FLAVOR: dict[str, Any] = {
    "apiVersion": f"{k.KUEUE_GROUP}/{k.KUEUE_VERSION}",
    "kind": "ResourceFlavor",
    "metadata": {"name": "parity-flavor", "labels": {"parity": "one"}},
    "spec": {"nodeLabels": {"parity": "one"}},
}


def _changed(obj: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    if "data" in changed:
        changed["data"] = {"key": "two"}
    else:
        changed["metadata"]["labels"] = {"parity": "two"}
    return changed


#: what a copy of a stored object leaves for the fake to assign again
_STRIPPED = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields")


def _apply_real(plane: ControlPlane, action: str, obj: dict[str, Any]) -> None:
    plane.kubectl(action, "-f", "-", stdin=json.dumps(obj))


def _replay(api: FakeApiServer, kind: k.Kind, event: dict[str, Any]) -> None:
    """One of the real server's changes made to the fake: the object as the real one stored it,
    but for what a server assigns."""
    obj = copy.deepcopy(event["object"])
    for key in _STRIPPED:
        obj["metadata"].pop(key, None)
    if event["type"] == "DELETED":
        api.delete(kind, obj["metadata"]["name"], obj["metadata"].get("namespace", ""))
    else:
        api.put(kind, obj)


def _run_watches(
    api_client: Any,
    kind: k.Kind,
    named: tuple[str, str] | None,
    before: list[Callable[[], None]],
    after: list[Callable[[], None]],
) -> dict[str, list[dict[str, Any]]]:
    """A watch from a list's version while ``before`` is done, then one resumed from its last
    event's version while ``after`` is done: each watch's events, raw."""
    first = _watch_while(api_client, kind, named, _list_version(api_client, kind, named), before)
    changes = [e for e in first if e["type"] != "BOOKMARK"]
    assert changes, first
    last = changes[-1]["object"]["metadata"]["resourceVersion"]
    return {"first": first, "resumed": _watch_while(api_client, kind, named, last, after)}


def _watch_while(
    api_client: Any, kind: k.Kind, named: tuple[str, str] | None, version: str, steps: list[Callable[[], None]]
) -> list[dict[str, Any]]:
    """The events of a watch from ``version`` while ``steps`` are done, raw."""
    seen: list[dict[str, Any]] = []
    watcher = threading.Thread(target=lambda: seen.extend(_watch(api_client, kind, named, version)))
    watcher.start()
    time.sleep(0.5)
    for step in steps:
        step()
    watcher.join()
    return seen


@pytest.mark.parametrize("which", ["built-in", "custom resource", "by name"])
def test_watches_deliver_alike(plane: ControlPlane, real: Any, tmp_path: Path, which: str) -> None:
    """A watch from a list's resourceVersion sees a create and a change as the same events,
    with bookmarks of the same shape; one resumed from the last event's resourceVersion sees
    only the delete that came after. The fake is made the same changes with the objects as
    the real server stored them (its admission and defaults are not the fake's to mimic)."""
    if which == "by name":
        kind, named = k.KUEUE_CONFIG, (NAMESPACE, f"{CONFIG}-watched")
        obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": named[1], "namespace": NAMESPACE},
            "data": {"key": "one"},
        }
    elif which == "custom resource":
        kind, named, obj = k.RESOURCE_FLAVORS, None, copy.deepcopy(FLAVOR)
    else:
        kind, named, obj = k.NODES, None, copy.deepcopy(NODE)
    bodies = [("create", obj), ("replace", _changed(obj)), ("delete", _changed(obj))]
    steps = [(lambda action=action, body=body: _apply_real(plane, action, body)) for action, body in bodies]
    theirs = _run_watches(real, kind, named, steps[:2], steps[2:])
    changes = {key: [e for e in events if e["type"] != "BOOKMARK"] for key, events in theirs.items()}
    types = [e["type"] for events in changes.values() for e in events]
    assert (types[0], types[-1]) == ("ADDED", "DELETED"), changes
    api = FakeApiServer(kinds=JUDGED_KINDS).start()
    api.bookmark_interval = WATCH_SECONDS - 2  # as the real server: one bookmark, before the watch ends
    fake = client_for(api, tmp_path)
    try:
        before, after = (
            [(lambda event=event: _replay(api, kind, event)) for event in changes[key]] for key in ("first", "resumed")
        )
        ours = _run_watches(fake, kind, named, before, after)
    finally:
        fake.close()
        api.stop()
    same({key: _events(events) for key, events in ours.items()}, {key: _events(e) for key, e in theirs.items()})


UNSERVED = k.Kind("Widgets", "Widget", "parity.example.com", "v1", "widgets", False)


def test_a_kind_not_served_or_not_permitted_is_refused_alike(real: Any, policy: Policy, tmp_path: Path) -> None:
    """404 for a group the server does not serve; 403 for a user without RBAC, on a list and
    on a watch, across namespaces and by name: the same status and Status object, and the
    same unknown kinds in ``snapshot`` and ``load_state``."""
    from kubernetes import client

    def refused(api_client: Any, admin: Any) -> dict[str, Any]:
        # not served, asked by an admin (a user without RBAC is refused first: 403)
        out: dict[str, Any] = {"unserved list": answer(list_call(admin, UNSERVED))}
        out["unserved watch"] = answer(list_call(admin, UNSERVED), watch=True, allow_watch_bookmarks=True)
        for kind in (k.LOCAL_QUEUES, k.NAMESPACES, k.KUEUE_CONFIG, k.KUEUE_CONTROLLER):
            call = list_call(api_client, kind, k.named(kind, policy))
            out[f"{kind.name} list"] = answer(call, limit=2)
            out[f"{kind.name} watch"] = answer(call, watch=True, allow_watch_bookmarks=True, timeout_seconds=1)
        # what the commands make of it: every kind unknown, with the reason
        errors = io.StringIO()
        out["snapshot"] = collect_snapshot(api_client, errors, policy), errors.getvalue()
        out["unread"] = load_state(api_client, policy, kinds=k.SIMULATED)[0].snapshot().unread
        return out

    configuration = copy.copy(real.configuration)
    forbidden = client.ApiClient(configuration)
    forbidden.set_default_header("Impersonate-User", "parity-nobody")
    try:
        theirs = refused(forbidden, real)
    finally:
        forbidden.close()  # type: ignore[no-untyped-call]
    api = FakeApiServer(kinds=JUDGED_KINDS).start()
    for kind in k.WATCHED:
        api.errors[kind.name] = 403
    fake = client_for(api, tmp_path)
    try:
        ours = refused(fake, fake)
    finally:
        fake.close()
        api.stop()
    same(ours, theirs)


def test_subject_access_reviews_and_the_front_proxy_configmap_read_alike(real: Any, tmp_path: Path) -> None:
    """The advisor's two reads of its own: a SubjectAccessReview (a yes for the API server's
    privileged group, a no for a user without RBAC) and the front-proxy ConfigMap."""
    from kubernetes import client

    callers = [Caller("parity-admin", ("system:masters",)), Caller("parity-nobody", ("parity-team",))]

    def read(api_client: Any, api: FakeApiServer | None) -> Any:
        if api is not None:
            api.grants.add(("system:masters", "get", "explanations", ""))
            api.grants.add(("system:masters", "list", "quotas", ""))
        reviews = SubjectAccessReviews(api_client)
        decisions = [(reviews.may_read(c, NAMESPACE), reviews.may_see_quota(c)) for c in callers]
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "parity-nobody",
                "groups": ["parity-team"],
                "extra": {},
                "resourceAttributes": {"group": "g", "version": "v1", "resource": "r", "verb": "get"},
            },
        }
        review = answer(client.AuthorizationV1Api(api_client).create_subject_access_review, body)
        configmap = answer(
            client.CoreV1Api(api_client).read_namespaced_config_map, "extension-apiserver-authentication", "kube-system"
        )
        return {
            "decisions": decisions,
            "review": normalised(review),
            "configmap": normalised(configmap),
            "front proxy": read_configmap(api_client),
        }

    agree(real, tmp_path, read)


def test_a_watch_from_a_version_long_gone_is_told_to_list_again(real: Any, policy: Policy, tmp_path: Path) -> None:
    """A watch resumed from a resourceVersion older than the server keeps is answered 410
    Expired, which the watch cache relists on: the same way (an ERROR event, not an HTTP
    status) and the same Status. The first resourceVersion is older than what the real
    server keeps of a custom resource (its watch cache starts when its CRD is created); of
    the built-in kinds it keeps every event since it started, so they are not asked."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.watch.watch import iter_resp_lines

    def read(api_client: Any, api: FakeApiServer | None) -> Any:
        out = {}
        for kind in (k.LOCAL_QUEUES, k.WORKLOADS, k.WORKLOAD_PRIORITY_CLASSES):
            call = list_call(api_client, kind, k.named(kind, policy))
            try:
                response = call(
                    watch=True,
                    resource_version="1",
                    allow_watch_bookmarks=True,
                    timeout_seconds=WATCH_SECONDS,
                    _preload_content=False,
                )
            except ApiException as exc:
                out[kind.name] = {"status": exc.status}
                continue
            try:
                events = [json.loads(line) for line in iter_resp_lines(response) if line]  # type: ignore[no-untyped-call]
            finally:
                response.release_conn()
            for event in events:
                if isinstance(event.get("object"), dict) and "message" in event["object"]:
                    event["object"]["message"] = "<message>"
            out[kind.name] = {"status": response.status, "events": normalised(events)}
        return out

    agree(real, tmp_path, read)


def test_the_watch_cache_holds_the_same_objects_from_either_server(real: Any, policy: Policy, tmp_path: Path) -> None:
    """The server's own reader, list then watch per kind, synced on every kind from either
    server and holding the same objects (by kind and key) and the same unknown kinds."""
    from webhook.cluster.watch import WatchCache, WatchSettings

    def read(api_client: Any, api: FakeApiServer | None) -> Any:
        settings = WatchSettings(page_size=2, watch_seconds=WATCH_SECONDS, backoff_initial=0.2, backoff_max=1.0)
        cache = WatchCache(policy, api_client, settings).start()
        try:
            deadline = time.monotonic() + 30
            while not all(cache.availability.status[kind.name].synced for kind in k.WATCHED):
                assert time.monotonic() < deadline, {
                    kind.name: cache.availability.reason(kind.name) for kind in k.WATCHED
                }
                time.sleep(0.1)
            with cache.lock:
                held = {name: sorted(keys, key=repr) for name, keys in cache.keys.items()}
            return {"held": held, "unread": cache.snapshot().unread}
        finally:
            cache.stop()

    agree(real, tmp_path, read)


def _report_crd(kind: k.Kind) -> dict[str, Any]:
    """A CRD serving ``kind`` with any fields: the writes are compared, not the schema."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{kind.group}"},
        "spec": {
            "group": kind.group,
            "names": {"kind": kind.kind, "listKind": f"{kind.kind}List", "plural": kind.plural},
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def test_audit_apply_writes_and_removes_reports_alike(plane: ControlPlane, real: Any, tmp_path: Path) -> None:
    """``audit --apply``'s writes: server-side apply of a PolicyReport and a ClusterPolicyReport,
    the listing of this tool's earlier reports by label selector, the delete of a stale one;
    the same reports stored and the same one left of another tool."""
    from webhook.cluster.reports import CLUSTER_POLICY_REPORTS, POLICY_REPORTS, apply_reports

    selector = "app.kubernetes.io/managed-by=tpu-admission"
    kinds = (POLICY_REPORTS, CLUSTER_POLICY_REPORTS)
    crds = {"apiVersion": "v1", "kind": "List", "items": [_report_crd(kind) for kind in kinds]}
    plane.kubectl("create", "-f", "-", stdin=json.dumps(crds))
    existing = [policy_report("tpu-admission-2", NAMESPACE), policy_report("kyverno", NAMESPACE, {"owner": "kyverno"})]
    try:
        plane.kubectl(
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            *(f"crd/{kind.plural}.{kind.group}" for kind in kinds),
        )

        def run(api_client: Any) -> dict[str, Any]:
            applied = apply_reports(
                api_client, [policy_report("tpu-admission", NAMESPACE), policy_report("tpu-admission")], selector
            )
            again = apply_reports(
                api_client, [policy_report("tpu-admission", NAMESPACE), policy_report("tpu-admission")], selector
            )
            return {"first": (applied.written, applied.deleted), "again": (again.written, again.deleted)}

        plane.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": existing}))
        theirs = run(real)
        theirs["stored"] = {kind.name: normalised(raw_get(real, kind.path)["items"]) for kind in kinds}
        api = FakeApiServer(kinds=kinds).start()
        for obj in existing:
            api.put(POLICY_REPORTS, obj)
        fake = client_for(api, tmp_path)
        try:
            ours = run(fake)
            ours["stored"] = {kind.name: normalised(raw_get(fake, kind.path)["items"]) for kind in kinds}
        finally:
            fake.close()
            api.stop()
        same(ours, theirs)
    finally:
        plane.kubectl("delete", "-f", "-", "--wait=false", stdin=json.dumps(crds), check=False)
