"""The advisor over real HTTPS, as the kube-apiserver's aggregation layer calls it.

Certificates are made by our own code: a serving pair, the front-proxy (requestheader)
CA with the API server's proxy client certificate, and the cluster's client CA, which
the TLS layer also trusts (as Kubernetes' aggregated servers do) but which names no
front proxy. SubjectAccessReviews are answered by the fake API server from its grants.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster_apiserver import FakeApiServer, client_for, wait_until, write_kubeconfig
from cluster_fixtures import ALL, FAST, OBJECTS, load
from explain_builders import preempted_example_objects
from support import load_jobset

from webhook.advisor.access import GROUP, HIDDEN, Authorizer, SubjectAccessReviews
from webhook.advisor.frontproxy import Caller, FrontProxy
from webhook.advisor.server import build_advisor, trust_bundle
from webhook.advisor.workqueue import WorkQueue
from webhook.cluster import kinds as k
from webhook.cluster.watch import WatchCache, start_watch_cache
from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.app import ServerState
from webhook.serving.runner import bound_port, run_server
from webhook.serving.tls import TlsSettings

POLICY = Policy()
BASE = f"/apis/{GROUP}/v1alpha1"
EXPLAIN = f"{BASE}/namespaces/kubemaker/explanations/jobset.llm-pretrain-a3f8"
PROXY_NAME = "front-proxy-client"


@dataclass(frozen=True)
class Pki:
    directory: Path
    front_proxy_ca: bytes
    client_ca: bytes
    proxy: tuple[Path, Path]  # the API server's front-proxy client certificate
    stranger: tuple[Path, Path]  # the front-proxy CA's, with a name the advisor does not allow
    user: tuple[Path, Path]  # the cluster client CA's: a user's own certificate


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("advisor-pki")
    front_ca, front_key = certs.new_ca("front-proxy-ca")
    client_ca, client_key = certs.new_ca("kubernetes-client-ca")

    def issued(ca: bytes, key: bytes, name: str) -> tuple[Path, Path]:
        cert, private = certs.issue(ca, key, [name], client=True)
        (directory / f"{name}.crt").write_bytes(cert)
        (directory / f"{name}.key").write_bytes(private)
        return directory / f"{name}.crt", directory / f"{name}.key"

    return Pki(
        directory,
        front_ca,
        client_ca,
        issued(front_ca, front_key, PROXY_NAME),
        issued(front_ca, front_key, "someone-else"),
        issued(client_ca, client_key, "alice"),
    )


class RunningAdvisor:
    """``build_advisor``'s server in a thread of its own, on a free port."""

    def __init__(
        self, cluster: Any, tls: TlsSettings, front_proxy: FrontProxy, authorizer: Authorizer, work: WorkQueue
    ) -> None:
        self.state = ServerState(policy=POLICY, cluster=cluster)
        self.server, self.reloader, self.advisor = build_advisor(
            self.state, "127.0.0.1", 0, tls, front_proxy, authorizer, work, graceful_seconds=1
        )
        self.thread = threading.Thread(target=lambda: asyncio.run(run_server(self.server, self.reloader)), daemon=True)

    def __enter__(self) -> RunningAdvisor:
        self.thread.start()
        wait_until(lambda: self.server.started, timeout=10, what="the advisor to start")
        self.url = f"https://localhost:{bound_port(self.server)}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.advisor.work.close()


@dataclass
class Cluster:
    api: FakeApiServer
    cache: WatchCache
    authorizer: SubjectAccessReviews


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    api = FakeApiServer().start()
    for obj in preempted_example_objects():
        api.put(k.BY_KIND[obj["kind"]], obj)
    directory = tmp_path_factory.mktemp("advisor-kube")
    cache = start_watch_cache(str(write_kubeconfig(directory / "config", api.port)), POLICY, FAST)
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
    yield Cluster(api, cache, SubjectAccessReviews(client_for(api, directory)))
    cache.stop()
    api.stop()


def settings(cert_files: certs.CertificateFiles, pki: Pki) -> TlsSettings:
    bundle = trust_bundle(pki.directory, pki.front_proxy_ca, pki.client_ca)
    return TlsSettings(cert=cert_files.cert, key=cert_files.key, client_ca=bundle)


def front_proxy(pki: Pki) -> FrontProxy:
    return FrontProxy.from_pem(pki.front_proxy_ca, allowed_names=[PROXY_NAME])


@pytest.fixture(scope="module")
def advisor(cluster: Cluster, cert_files: certs.CertificateFiles, pki: Pki) -> Iterator[RunningAdvisor]:
    work = WorkQueue(max_waiting=4, deadline_seconds=30)
    with RunningAdvisor(
        cluster.cache, settings(cert_files, pki), front_proxy(pki), cluster.authorizer, work
    ) as running:
        yield running


def https(
    cert_files: certs.CertificateFiles, cert: tuple[Path, Path] | None, timeout: float | httpx.Timeout = 10
) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(cert_files.ca))
    if cert is not None:
        context.load_cert_chain(*cert)
    return httpx.Client(verify=context, timeout=timeout)


def as_user(user: str, *groups: str) -> dict[str, str]:
    headers = {"X-Remote-User": user}
    if groups:
        headers["X-Remote-Group"] = ",".join(groups)  # one header; a real proxy may repeat it
    return headers


UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


# ---------------------------------------------------------------- who is asking


def test_without_a_client_certificate_the_headers_are_not_believed(
    advisor: RunningAdvisor, cert_files: certs.CertificateFiles
) -> None:
    with https(cert_files, None) as http:
        for path in (EXPLAIN, "/apis", BASE):
            reply = http.get(advisor.url + path, headers=as_user("system:admin", "system:masters"))
            assert (reply.status_code, reply.json()) == (401, UNAUTHORIZED)
        # the probes need no caller: the kubelet presents none
        assert http.get(advisor.url + "/healthz").status_code == 200


def test_a_certificate_of_another_ca_or_name_is_no_front_proxy(
    advisor: RunningAdvisor, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    # The cluster's client CA: trusted at the TLS layer (a user may present one), yet
    # it is not the requestheader CA, so its holder cannot name a caller.
    for cert in (pki.user, pki.stranger):
        with https(cert_files, cert) as http:
            reply = http.get(advisor.url + EXPLAIN, headers=as_user("system:admin", "system:masters"))
        assert (reply.status_code, reply.json()) == (401, UNAUTHORIZED)


def test_a_front_proxy_without_a_user_header_is_refused(
    advisor: RunningAdvisor, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    with https(cert_files, pki.proxy) as http:
        reply = http.get(advisor.url + EXPLAIN, headers={"X-Remote-Group": "system:masters"})
    assert (reply.status_code, reply.json()) == (401, UNAUTHORIZED)


def test_discovery_names_the_group_its_version_and_resources(
    advisor: RunningAdvisor, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    version = {"groupVersion": f"{GROUP}/v1alpha1", "version": "v1alpha1"}
    group = {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [version], "preferredVersion": version}
    with https(cert_files, pki.proxy) as http:
        headers = as_user("system:kube-aggregator")
        assert http.get(advisor.url + "/apis", headers=headers).json() == {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [group],
        }
        assert http.get(advisor.url + f"/apis/{GROUP}", headers=headers).json() == group
        resources = http.get(advisor.url + BASE, headers=headers).json()
    assert (resources["kind"], resources["groupVersion"]) == ("APIResourceList", f"{GROUP}/v1alpha1")
    assert {(r["name"], r["namespaced"], tuple(r["verbs"])) for r in resources["resources"]} == {
        ("explanations", True, ("get",)),
        ("simulations", True, ("create",)),
        ("quotas", False, ("list",)),
    }


# ---------------------------------------------------------------- what the caller may read


def test_a_caller_allowed_in_both_namespaces_reads_the_preemptor(
    advisor: RunningAdvisor, cluster: Cluster, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    cluster.api.grants |= {("platform", "get", "explanations", "kubemaker"), ("platform", "get", "explanations", "")}
    cluster.api.reviews.clear()
    with https(cert_files, pki.proxy) as http:
        reply = http.get(
            advisor.url + EXPLAIN, headers={**as_user("carol", "platform"), "X-Remote-Extra-Scopes": "all"}
        )
    assert reply.status_code == 200
    [result] = reply.json()["results"]
    assert (result["kind"], result["workload"], result["state"], result["reason"]) == (
        "JobSet",
        "kubemaker/jobset-llm-pretrain-a3f8-4f9d2",
        "Preempted",
        "InCohortReclamation",
    )
    assert result["preemptor"] == {
        "workload": "team-a-ns/jobset-llm-finetune-77aa-1b2c3",
        "job": "JobSet/team-a-ns/llm-finetune-77aa",
        "clusterQueue": "team-a",
        "priority": 1000,
    }
    # the review asked about the caller the front proxy named, in the other namespace only
    assert cluster.api.reviews == [
        {
            "user": "carol",
            "groups": ["platform"],
            "extra": {"scopes": ["all"]},
            "resourceAttributes": {
                "group": GROUP,
                "version": "v1alpha1",
                "resource": "explanations",
                "verb": "get",
                "namespace": "team-a-ns",
            },
        }
    ]


def test_a_caller_of_one_namespace_gets_the_preemptor_unnamed(
    advisor: RunningAdvisor, cluster: Cluster, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    cluster.api.grants |= {("alice", "get", "explanations", "kubemaker")}
    with https(cert_files, pki.proxy) as http:
        reply = http.get(advisor.url + EXPLAIN, headers=as_user("alice", "system:authenticated"))
    assert reply.status_code == 200
    [result] = reply.json()["results"]
    assert result["preemptor"] == {"workload": HIDDEN, "job": HIDDEN, "clusterQueue": "team-a", "priority": 1000}
    assert result["workload"] == "kubemaker/jobset-llm-pretrain-a3f8-4f9d2"  # its own stays named
    text = reply.text
    assert "team-a-ns" not in text and "llm-finetune" not in text


def test_the_quota_picture_is_a_cluster_scoped_list(
    advisor: RunningAdvisor, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    with https(cert_files, pki.proxy) as http:
        reply = http.get(advisor.url + f"{BASE}/quotas", headers=as_user("admin"))
    assert reply.status_code == 200
    body = reply.json()
    assert (body["apiVersion"], body["kind"], [c["name"] for c in body["cohorts"]]) == (
        f"{GROUP}/v1alpha1",
        "Quota",
        ["tpu-pool"],
    )


# ---------------------------------------------------------------- bounds


class Gate:
    """An authorizer that holds the worker until the test opens it (work that takes long)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.asked: list[str] = []

    def may_read(self, caller: Caller, namespace: str) -> bool:
        self.asked.append(caller.user)
        self.opened.wait(20)
        return False

    def may_see_quota(self, caller: Caller) -> bool:
        return False


@pytest.fixture
def gated(cluster: Cluster, cert_files: certs.CertificateFiles, pki: Pki) -> Iterator[tuple[RunningAdvisor, Gate]]:
    gate = Gate()
    work = WorkQueue(max_waiting=1, deadline_seconds=20)
    with RunningAdvisor(cluster.cache, settings(cert_files, pki), front_proxy(pki), gate, work) as running:
        yield running, gate
        gate.opened.set()


def _get_in_thread(cert_files: certs.CertificateFiles, pki: Pki, url: str, user: str) -> dict[str, Any]:
    outcome: dict[str, Any] = {}

    def get() -> None:
        with https(cert_files, pki.proxy, timeout=30) as http:
            outcome["reply"] = http.get(url, headers=as_user(user))

    outcome["thread"] = thread = threading.Thread(target=get, daemon=True)
    thread.start()
    return outcome


def test_a_full_queue_answers_429_with_retry_after(
    gated: tuple[RunningAdvisor, Gate], cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    running, gate = gated
    work = running.advisor.work
    first = _get_in_thread(cert_files, pki, running.url + EXPLAIN, "first")
    wait_until(lambda: gate.asked == ["first"], timeout=10, what="the first request to be worked on")
    second = _get_in_thread(cert_files, pki, running.url + EXPLAIN, "second")
    wait_until(lambda: work.waiting == 1, timeout=10, what="the second request to wait")
    with https(cert_files, pki.proxy) as http:
        reply = http.get(running.url + EXPLAIN, headers=as_user("third"))
    assert reply.status_code == 429
    assert int(reply.headers["retry-after"]) >= 1
    assert (reply.json()["reason"], reply.json()["code"]) == ("TooManyRequests", 429)
    gate.opened.set()
    for request in (first, second):
        request["thread"].join(20)
        assert request["reply"].status_code == 200
    assert gate.asked == ["first", "second"]  # the refused one never ran


def test_work_whose_client_has_gone_never_runs(
    gated: tuple[RunningAdvisor, Gate], cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    running, gate = gated
    work = running.advisor.work
    first = _get_in_thread(cert_files, pki, running.url + EXPLAIN, "first")
    wait_until(lambda: gate.asked == ["first"], timeout=10, what="the first request to be worked on")
    # the client waits half a second for its answer (connecting may take longer), then gives up and closes
    with https(cert_files, pki.proxy, timeout=httpx.Timeout(10, read=0.5)) as http, pytest.raises(httpx.ReadTimeout):
        http.get(running.url + EXPLAIN, headers=as_user("leaves"))
    wait_until(lambda: work.dropped == 1 and work.waiting == 0, timeout=10, what="the left request to be dropped")
    gate.opened.set()
    first["thread"].join(20)
    assert first["reply"].status_code == 200
    wait_until(lambda: work.finished == 1, timeout=10, what="the first work to finish")
    time.sleep(0.2)
    assert (gate.asked, work.finished) == (["first"], 1)


def test_a_request_past_its_deadline_is_504(cluster: Cluster, cert_files: certs.CertificateFiles, pki: Pki) -> None:
    gate = Gate()
    work = WorkQueue(max_waiting=2, deadline_seconds=0.5)
    tls = settings(cert_files, pki)
    with (
        RunningAdvisor(cluster.cache, tls, front_proxy(pki), gate, work) as running,
        https(cert_files, pki.proxy) as http,
    ):
        reply = http.get(running.url + EXPLAIN, headers=as_user("slow"))
        gate.opened.set()
    assert (reply.status_code, reply.json()["reason"]) == (504, "Timeout")


# ---------------------------------------------------------------- simulations


FITS = "rfc-4.6-static-single"  # 256 chips of tpu7x-4x8x8 in team-b, which has them free
SIMULATE = f"{BASE}/namespaces/kubemaker/simulations"
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def simulator(
    tmp_path_factory: pytest.TempPathFactory, cert_files: certs.CertificateFiles, pki: Pki
) -> Iterator[RunningAdvisor]:
    """An advisor whose watch also reads what the simulator reads: WorkloadPriorityClasses and Kueue's Configuration."""
    api = load(FakeApiServer(kinds=(k.WORKLOAD_PRIORITY_CLASSES, k.KUEUE_CONFIG))).start()
    for obj in OBJECTS:
        if obj["kind"] == "WorkloadPriorityClass":
            api.put(k.WORKLOAD_PRIORITY_CLASSES, obj)
    directory = tmp_path_factory.mktemp("simulator-kube")
    cache = start_watch_cache(str(write_kubeconfig(directory / "config", api.port)), POLICY, FAST)
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
    wait_until(lambda: len(cache.snapshot().kept_documents(k.WORKLOAD_PRIORITY_CLASSES)) == 3, what="priorities")
    authorizer = SubjectAccessReviews(client_for(api, directory))
    work = WorkQueue(max_waiting=4, deadline_seconds=30)
    with RunningAdvisor(cache, settings(cert_files, pki), front_proxy(pki), authorizer, work) as running:
        yield running
    cache.stop()
    api.stop()


def test_a_simulation_answers_one_object_with_one_result(
    simulator: RunningAdvisor, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    with https(cert_files, pki.proxy) as http:
        response = http.post(simulator.url + SIMULATE, json=load_jobset(FITS), headers=as_user("alice"))
    assert response.status_code == 200
    assert response.json() == {
        "source": "request",
        "kind": "JobSet",
        "namespace": "kubemaker",
        "name": "eval-4x8x8",
        "outcome": "admit",
        "reason": "",
        "clusterQueue": "team-b",
        "podSets": [{"name": "workers", "count": 64, "flavors": {"google.com/tpu": "tpu7x-4x8x8"}, "borrows": 0}],
        "preemptions": [],
        "position": {"ahead": 0, "chipsAhead": 0},
        "message": "fits now in ClusterQueue team-b on tpu7x-4x8x8",
        "holders": None,
    }


def test_a_simulation_streamed_without_a_content_type_is_read_as_json(
    simulator: RunningAdvisor, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    """As the API server's aggregation layer forwards ``kubectl create --raw``: the body in
    chunks and no Content-Type, which the API server itself takes as JSON."""
    body = json.dumps(load_jobset(FITS)).encode()
    with https(cert_files, pki.proxy) as http:
        sent = http.post(simulator.url + SIMULATE, json=load_jobset(FITS), headers=as_user("alice"))
        streamed = http.post(simulator.url + SIMULATE, content=iter([body[:100], body[100:]]), headers=as_user("alice"))
    assert streamed.request.headers.get("content-type") is None
    assert streamed.request.headers.get("transfer-encoding") == "chunked"
    assert (streamed.status_code, streamed.json()) == (sent.status_code, sent.json())
    assert sent.status_code == 200


def _chunks(size: int) -> Iterator[bytes]:
    """A body of ``size`` bytes sent in pieces, with no Content-Length to refuse it by."""
    yield b"{"
    for _ in range(size // 65536):
        yield b" " * 65536
    yield b"}"


@pytest.mark.parametrize(
    ("body", "headers", "status", "error"),
    [
        (b"{not json", {"content-type": "application/json"}, 400, "the body is not JSON text"),
        (b"[1, 2]", {"content-type": "application/json"}, 400, "the body must be one JSON object"),
        (b'{"apiVersion": "v1", "kind": "ConfigMap"}', {"content-type": "application/json"}, 422, "not a JobSet"),
        (
            b'{"metadata": {"namespace": "team-a-ns"}}',
            {"content-type": "application/json"},
            400,
            "is not the request's",
        ),
        (b"{}", {"content-type": "text/plain"}, 415, "content-type must be application/json"),
        (b"{" + b" " * 4_000_000 + b"}", {"content-type": "application/json"}, 413, "over the limit"),
        (_chunks, {"content-type": "application/json"}, 413, "over the limit"),
    ],
    ids=["not-json", "not-an-object", "not-a-job", "another-namespace", "content-type", "too-big", "too-big-streamed"],
)
def test_a_simulation_refuses_bad_input_with_a_reason(
    simulator: RunningAdvisor,
    cert_files: certs.CertificateFiles,
    pki: Pki,
    body: Any,
    headers: dict[str, str],
    status: int,
    error: str,
) -> None:
    content = body(8 * POLICY.server.max_body_bytes) if callable(body) else body
    with https(cert_files, pki.proxy) as http:
        response = http.post(simulator.url + SIMULATE, content=content, headers={**headers, **as_user("alice")})
    assert response.status_code == status
    assert error in response.json()["error"]


# ---------------------------------------------------------------- the command


def test_serve_advisor_reads_the_published_front_proxy_settings_and_serves(
    tmp_path: Path, cert_files: certs.CertificateFiles, pki: Pki
) -> None:
    """``tpu-admission serve-advisor`` in a process of its own, its settings read from
    kube-system/extension-apiserver-authentication as the API server publishes them."""
    api = FakeApiServer(kinds=(k.KUEUE_CONFIG,)).start()
    published = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
        "data": {
            "client-ca-file": pki.client_ca.decode(),
            "requestheader-client-ca-file": pki.front_proxy_ca.decode(),
            "requestheader-allowed-names": f'["{PROXY_NAME}"]',
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        },
    }
    api.put(k.KUEUE_CONFIG, published)
    kubeconfig = write_kubeconfig(tmp_path / "config", api.port)
    cert_dir = cert_files.cert.parent
    command = [sys.executable, "-m", "webhook", "serve-advisor", "--port", "0", "--cert-dir", str(cert_dir)]
    with subprocess.Popen(
        [*command, "--kubeconfig", str(kubeconfig)], stderr=subprocess.PIPE, text=True
    ) as proc:  # fmt: skip
        try:
            assert proc.stderr is not None
            port = None
            for line in proc.stderr:
                found = re.search(r"serving the advisor on https://127\.0\.0\.1:(\d+)", line)
                if found:
                    port = found.group(1)
                    break
            assert port is not None
            with https(cert_files, pki.proxy) as http:
                reply = http.get(f"https://localhost:{port}{BASE}", headers=as_user("system:kube-aggregator"))
                assert (reply.status_code, reply.json()["kind"]) == (200, "APIResourceList")
            with https(cert_files, pki.user) as http:
                assert http.get(f"https://localhost:{port}{BASE}", headers=as_user("admin")).status_code == 401
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            api.stop()


def test_serve_advisor_without_front_proxy_settings_refuses_to_start(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "webhook", "serve-advisor", "--port", "0", "--cert-dir", str(tmp_path / "tls")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"},
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "tpu-admission: no cluster to read the front-proxy settings from: give --requestheader-client-ca-file\n",
    )
