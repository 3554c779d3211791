"""Through the server: real TLS, a live watch cache fed by the test API server."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from builders import job, jobset
from cluster_apiserver import FakeApiServer, free_port, wait_until, write_kubeconfig
from cluster_fixtures import ALL, FAST, load
from cluster_job_cases import CASES as JOB_CASES
from cluster_job_cases import RULES as CLUSTER_RULES
from cluster_job_cases import ClusterCase
from support import RunningServer, load_jobset, review

from webhook.cluster import kinds as k
from webhook.cluster.watch import WatchCache, start_watch_cache
from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.app import ServerState
from webhook.serving.runner import TlsSettings

POLICY = Policy()


def serve(cache: WatchCache, tls: TlsSettings) -> RunningServer:
    state = ServerState(policy=POLICY, cluster=cache)  # registers the cache's gauges itself
    return RunningServer(state, tls).start()


def https(cert_files: certs.CertificateFiles) -> httpx.Client:
    """Our own client: uvicorn waits for open keep-alive connections before it stops."""
    return httpx.Client(verify=ssl.create_default_context(cafile=str(cert_files.ca)), timeout=10)


@pytest.fixture(scope="module")
def client(cert_files: certs.CertificateFiles) -> Iterator[httpx.Client]:
    with https(cert_files) as http:
        yield http


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, tls: TlsSettings, client: httpx.Client) -> Iterator[RunningServer]:
    api = load(FakeApiServer()).start()
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", api.port)
    cache = start_watch_cache(str(kubeconfig), POLICY, FAST)
    wait_until(lambda: not cache.unavailable(ALL), what="initial sync")
    server = serve(cache, tls)
    yield server
    client.close()
    server.stop()
    cache.stop()
    api.stop()


def post(client: httpx.Client, server: RunningServer, obj: dict[str, Any], path: str = "/mutate") -> dict[str, Any]:
    response = client.post(server.url + path, json=review(obj))
    assert response.status_code == 200
    answer: dict[str, Any] = response.json()["response"]
    return answer


def test_a_cluster_rule_denies_through_the_server(live: RunningServer, client: httpx.Client) -> None:
    obj = jobset().priority("guaranteed").obj()
    answer = post(client, live, obj, "/validate/production")
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403
    assert "[guaranteed-balance-exceeded]" in answer["status"]["message"]
    assert "nominal 256 − in use 128 − pending 64" in answer["status"]["message"]


def test_the_tier_comes_from_the_cache(live: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "orphan-dev"  # dev by its labels; not in the config's map
    del obj["metadata"]["labels"]
    answer = post(client, live, obj)  # plain /mutate: no tier in the path
    assert answer["allowed"] is False
    assert "[local-queue-not-found]" in answer["status"]["message"]


def test_an_admitted_job_gets_its_patch(live: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "falcon-jobs"
    del obj["metadata"]["labels"]
    answer = post(client, live, obj, "/mutate/dev")
    assert answer["allowed"] is True
    assert "warnings" not in answer
    assert answer["patchType"] == "JSONPatch"


def test_cluster_gauges_on_metrics(live: RunningServer, client: httpx.Client) -> None:
    text = client.get(live.url + "/metrics").text
    assert 'tpu_admission_cluster_synced{kind="Workloads"} 1.0' in text
    assert 'tpu_admission_cluster_cache_age_seconds{kind="Nodes"} 0.0' in text
    assert text.count('tpu_admission_cluster_synced{kind="Nodes"}') == 1  # registered once
    ages = [line for line in text.splitlines() if line.startswith("tpu_admission_cluster_last_event_age_seconds{")]
    assert len(ages) == len(k.KINDS) and all(float(line.rsplit(" ", 1)[1]) >= -1.0 for line in ages)


def test_unreachable_api_server_serves_structural_rules_with_warnings(
    tmp_path: Path, tls: TlsSettings, cert_files: certs.CertificateFiles
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", free_port())  # nothing listens there
    cache = start_watch_cache(str(kubeconfig), POLICY, FAST)
    server = serve(cache, tls)
    client = https(cert_files)
    try:
        assert client.get(server.url + "/readyz").status_code == 200
        obj = jobset().suspend(True).obj()
        answer = post(client, server, obj, "/mutate/production")
        assert answer["allowed"] is False
        assert answer["status"]["message"].startswith("[suspend-forbidden]")
        skipped = [w for w in answer["warnings"] if "skipped: cluster state unknown" in w]
        assert len(skipped) == 7
        metrics = client.get(server.url + "/metrics").text
        assert 'tpu_admission_skipped_checks_total{rule="exceeds-node-capacity"} 1.0' in metrics
        assert 'tpu_admission_cluster_synced{kind="Nodes"} 0.0' in metrics
        assert 'tpu_admission_cluster_cache_age_seconds{kind="Nodes"} -1.0' in metrics
    finally:
        client.close()
        server.stop()
        cache.stop()


def test_a_cluster_rule_denies_a_job_through_the_server(live: RunningServer, client: httpx.Client) -> None:
    obj = job().queue("team-z-queue").obj()
    answer = post(client, live, obj, "/validate/production")
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith(
        "[local-queue-not-found] metadata.labels[\"kueue.x-k8s.io/queue-name\"]: there is no LocalQueue 'team-z-queue'"
    )


@pytest.mark.parametrize("case", JOB_CASES, ids=lambda c: c.name)
def test_cluster_rules_on_jobs_and_deployments_through_the_server(
    live: RunningServer, client: httpx.Client, case: ClusterCase
) -> None:
    answer = post(client, live, case.object(), f"/mutate/{case.tier}")
    said = answer.get("status", {}).get("message", "") + "\n" + "\n".join(answer.get("warnings", []))
    fired = {rule for rule in CLUSTER_RULES if f"[{rule}] " in said and f"[{rule}] skipped" not in said}
    assert "skipped" not in said  # the cache is synced: every cluster rule ran
    if case.rule is None:
        assert fired == set()
    else:
        assert case.rule in fired
        assert answer["allowed"] is (case.rule == "replicas-beyond-nominal")  # the one warn-level rule
