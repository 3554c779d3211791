"""``GET /explain/<namespace>/<kind>/<name>`` over real HTTPS with mTLS (certificates our code
generated), answering from a live watch cache fed by the local API test server.

The cluster is RFC-0033 4.3.2's example two: team-b's JobSet preempted by team-a's, whose
Workload is in the cluster too, in the cohort ``tpu-pool``.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster_apiserver import FakeApiServer, wait_until, write_kubeconfig
from cluster_fixtures import ALL, FAST
from explain_builders import TPU, preemptor_workload, rfc_example_two
from quota_fixtures import cluster_queue, cohort, q
from support import RunningServer, running_server

from webhook.cluster import kinds as k
from webhook.cluster.statefiles import state_from_objects
from webhook.cluster.watch import start_watch_cache
from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.tls import TlsSettings

POLICY = Policy()
JOBSET_PATH = "/explain/kubemaker/jobset/llm-pretrain-a3f8"


@dataclass(frozen=True)
class Clients:
    ca: Path
    aistudio: tuple[Path, Path]
    intruder: tuple[Path, Path]


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Clients:
    directory = tmp_path_factory.mktemp("explain-clients")
    ca, ca_key = certs.new_ca("client-ca")
    (directory / "ca.crt").write_bytes(ca)

    def issued(name: str) -> tuple[Path, Path]:
        cert, key = certs.issue(ca, ca_key, [name], client=True)
        (directory / f"{name}.crt").write_bytes(cert)
        (directory / f"{name}.key").write_bytes(key)
        return directory / f"{name}.crt", directory / f"{name}.key"

    return Clients(directory / "ca.crt", issued("aistudio"), issued("intruder"))


def _objects() -> list[dict[str, Any]]:
    return [
        cluster_queue("team-a", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cluster_queue("team-b", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cohort("tpu-pool"),
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "team-a-queue", "namespace": "kubemaker"},
            "spec": {"clusterQueue": "team-b"},
        },
        rfc_example_two().obj(),
        preemptor_workload().obj(),
    ]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, cert_files: certs.CertificateFiles, clients: Clients
) -> Iterator[RunningServer]:
    api = FakeApiServer().start()
    for obj in _objects():
        api.put(k.BY_KIND[obj["kind"]], obj)
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", api.port)
    cache = start_watch_cache(str(kubeconfig), POLICY, FAST)
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
    tls = TlsSettings(cert=cert_files.cert, key=cert_files.key, client_ca=clients.ca, client_names=("aistudio",))
    with running_server(POLICY, tls, cluster=cache) as running:
        yield running
    cache.stop()
    api.stop()


def _client(cert_files: certs.CertificateFiles, cert: tuple[Path, Path] | None) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(cert_files.ca))
    if cert is not None:
        context.load_cert_chain(*cert)
    return httpx.Client(verify=context, timeout=10)


def test_a_preempted_jobset_is_explained_to_a_named_client(
    server: RunningServer, cert_files: certs.CertificateFiles, clients: Clients
) -> None:
    with _client(cert_files, clients.aistudio) as http:
        reply = http.get(server.url + JOBSET_PATH)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    body = reply.json()
    assert body["errors"] == []
    [result] = body["results"]
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
    assert result["quota"] == {
        "clusterQueue": {"tpu7x": {TPU: {"nominal": 256, "inUse": 0, "borrowed": 0, "pending": 0}}},
        "cohort": "tpu-pool",
    }
    # requeued, it would be admitted at once: nothing holds team-b's quota now
    simulation = result["simulation"]
    assert (simulation["kind"], simulation["name"], simulation["outcome"], simulation["clusterQueue"]) == (
        "Workload",
        "jobset-llm-pretrain-a3f8-4f9d2",
        "admit",
        "team-b",
    )
    assert "(PendingEvaluation)" in result["message"]


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        (
            "/explain/kubemaker/jobset/other",
            404,
            "JobSet kubemaker/other: not found: no Workload in kubemaker names JobSet other as its owner; JobSets "
            "themselves are not read here, so one Kueue does not manage (no kueue.x-k8s.io/queue-name label) is "
            "not known either",
        ),
        ("/explain/kubemaker/Workloads/nope", 404, "Workload kubemaker/nope: not found"),
        (
            "/explain/kubemaker/jobst/llm-pretrain-a3f8",
            400,
            "kind 'jobst': not one explain answers for; did you mean JobSet? use JobSet, Job, Deployment or Workload",
        ),
        (
            "/explain/Kube_Maker/job/x",
            400,
            "namespace 'Kube_Maker': not a Kubernetes name (a-z, 0-9, '-' and '.', at most 253)",
        ),
        (
            "/explain/kubemaker/job/" + "a" * 300,
            400,
            f"name '{'a' * 100}...': not a Kubernetes name (a-z, 0-9, '-' and '.', at most 253)",
        ),
    ],
)
def test_bad_questions_get_a_4xx_with_the_reason_in_13s_shape(
    server: RunningServer, cert_files: certs.CertificateFiles, clients: Clients, path: str, status: int, error: str
) -> None:
    with _client(cert_files, clients.aistudio) as http:
        reply = http.get(server.url + path)
    assert (reply.status_code, reply.json()) == (status, {"results": [], "errors": [error]})


def test_a_client_the_admission_paths_refuse_is_refused(
    server: RunningServer, cert_files: certs.CertificateFiles, clients: Clients
) -> None:
    with _client(cert_files, None) as http:
        reply = http.get(server.url + JOBSET_PATH)
    assert (reply.status_code, reply.json()) == (403, {"error": "a client certificate is required for this path"})
    with _client(cert_files, clients.intruder) as http, pytest.raises(httpx.TransportError):
        http.get(server.url + JOBSET_PATH)


def test_unread_workloads_and_no_cluster_are_503_with_retry_after(
    cert_files: certs.CertificateFiles, clients: Clients
) -> None:
    tls = TlsSettings(cert=cert_files.cert, key=cert_files.key, client_ca=clients.ca, client_names=("aistudio",))
    unsynced = state_from_objects([o for o in _objects() if o["kind"] != "Workload"], POLICY)
    for cluster, error in [
        (unsynced, "Workloads cannot be read now: no objects of this kind in the --cluster-state input"),
        (None, "this server watches no cluster (started without a kubeconfig): nothing to explain"),
    ]:
        with running_server(POLICY, tls, cluster=cluster) as running, _client(cert_files, clients.aistudio) as http:
            reply = http.get(running.url + JOBSET_PATH)
        assert reply.status_code == 503 and reply.headers["retry-after"] == "5"
        [message] = reply.json()["errors"]
        assert message.startswith(error)
