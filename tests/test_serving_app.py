"""The server as the API server calls it: AdmissionReview over real HTTPS, our own CA."""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any

import httpx
import jsonpatch
import pytest
from builders import TOPOLOGY_LABEL, TPU, deployment
from rule_cases import CASES, RuleCase
from support import (
    JOBSET_OWNER,
    RunningServer,
    load_deployment,
    load_job,
    load_jobset,
    review,
    running_server,
    set_path,
)

from webhook.policy.findings import Action
from webhook.rules.catalog import RULES_BY_ID, policy_from_mapping
from webhook.serving.tls import TlsSettings


def post(server: RunningServer, client: httpx.Client, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return client.post(f"{server.url}{path}", json=body, **kwargs)


def decision_line(caplog: pytest.LogCaptureFixture, uid: str) -> dict[str, Any]:
    """The decision log line of ``uid``, waited for briefly: the server writes it from its
    own thread, and this helper does not rely on it being written before the reply."""
    deadline = time.monotonic() + 5
    while True:
        for record in caplog.records:
            if record.name == "tpu_admission.decision" and isinstance(record.msg, dict) and record.msg["uid"] == uid:
                return record.msg
        assert time.monotonic() < deadline, f"no decision line for {uid}"
        time.sleep(0.01)


def answer(server: RunningServer, client: httpx.Client, path: str, obj: Any, **review_args: Any) -> dict[str, Any]:
    body = review(obj, **review_args)
    reply = post(server, client, path, body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["apiVersion"] == "admission.k8s.io/v1" and data["kind"] == "AdmissionReview"
    assert data["response"]["uid"] == body["request"]["uid"]
    return data["response"]  # type: ignore[no-any-return]


PLAIN = [case for case in CASES if case.plain]


@pytest.mark.parametrize("case", PLAIN, ids=lambda c: c.id)
def test_rule_examples_through_the_server(
    case: RuleCase, static_server: RunningServer, dynamic_server: RunningServer, client: httpx.Client
) -> None:
    server = dynamic_server if case.mode == "dynamic" else static_server
    response = answer(server, client, "/mutate", case.object())
    text = response.get("status", {}).get("message", "") + "\n".join(response.get("warnings", []))
    marker = f"[{case.rule}] "
    if not case.fires:
        assert marker not in text
        return
    assert marker in text
    if RULES_BY_ID[case.rule].default_action is Action.DENY:
        assert response["allowed"] is False and response["status"]["code"] == 403
        assert "patch" not in response
    else:
        assert any(w.startswith(marker) for w in response["warnings"])


def test_admitted_response_has_no_optional_fields(static_server: RunningServer, client: httpx.Client) -> None:
    response = answer(static_server, client, "/validate/production", load_jobset("rfc-4.6-static"), uid="abc")
    assert response == {"uid": "abc", "allowed": True}


def test_dev_patch_applies_to_give_the_intended_object(dynamic_server: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("falcon-migration")
    response = answer(dynamic_server, client, "/mutate/dev", obj)
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    expected = load_jobset("falcon-migration")
    expected["metadata"]["labels"] = {
        "kueue.x-k8s.io/queue-name": "default",
        "kueue.x-k8s.io/priority-class": "default",
    }
    assert jsonpatch.apply_patch(obj, patch) == expected


def test_validate_never_patches(dynamic_server: RunningServer, client: httpx.Client) -> None:
    response = answer(dynamic_server, client, "/validate/dev", load_jobset("falcon-migration"))
    assert response == {"uid": response["uid"], "allowed": True}


def test_dry_run_is_answered_like_any_request(static_server: RunningServer, client: httpx.Client) -> None:
    body = review(load_jobset("rfc-4.6-static"))
    body["request"]["dryRun"] = True
    set_path(body, "request.object.spec.suspend", True)
    reply = post(static_server, client, "/mutate", body).json()["response"]
    assert reply["allowed"] is False and "[suspend-forbidden]" in reply["status"]["message"]


def test_update_flip_of_suspend_by_a_user_is_refused(static_server: RunningServer, client: httpx.Client) -> None:
    old = load_jobset("rfc-4.6-static")
    new = load_jobset("rfc-4.6-static")
    new["spec"]["suspend"] = True
    response = answer(static_server, client, "/validate/production", new, operation="UPDATE", old=old, username="alice")
    assert response["allowed"] is False and "[suspend-forbidden]" in response["status"]["message"]
    kueue = "system:serviceaccount:kueue-system:kueue-controller-manager"
    response = answer(static_server, client, "/validate/production", new, operation="UPDATE", old=old, username=kueue)
    assert response["allowed"] is True


def test_other_kinds_are_allowed_unchanged(static_server: RunningServer, client: httpx.Client) -> None:
    body = review({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kubemaker"}})
    body["request"]["kind"] = {"group": "", "version": "v1", "kind": "ConfigMap"}
    reply = post(static_server, client, "/mutate", body).json()
    assert reply["response"] == {"uid": body["request"]["uid"], "allowed": True}


def test_unknown_namespace_is_admitted_with_a_warning(static_server: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "elsewhere"
    response = answer(static_server, client, "/mutate", obj)
    assert response["allowed"] is True and "could not be determined" in response["warnings"][0]


def test_garbage_object_is_denied_with_a_reason_not_an_error(
    static_server: RunningServer, client: httpx.Client
) -> None:
    response = answer(static_server, client, "/mutate/production", {"spec": {"replicatedJobs": "x"}})
    assert response["allowed"] is False and "[jobset-malformed] spec.replicatedJobs" in response["status"]["message"]


MALFORMED: list[tuple[str, bytes, int, str]] = [
    ("not json", b"{nope", 400, "not valid JSON"),
    ("not utf-8", b"\xff\xfe{}", 400, "not valid JSON"),
    ("a list", b"[]", 400, "must be a JSON object"),
    ("wrong kind", b'{"kind": "Pod", "apiVersion": "admission.k8s.io/v1"}', 400, "kind must be"),
    ("v1beta1", b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}', 400, "apiVersion"),
    (
        "no request",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}',
        400,
        "request is missing",
    ),
    (
        "request not an object",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": 1}',
        400,
        "request must be",
    ),
    (
        "no uid",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"operation": "CREATE"}}',
        400,
        "uid is missing",
    ),
    (
        "bad operation",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", '
        b'"request": {"uid": "u", "operation": "PATCH"}}',
        400,
        "operation",
    ),
    (
        "groups not a list",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", '
        b'"request": {"uid": "u", "operation": "CREATE", "userInfo": {"groups": "x"}}}',
        400,
        "groups",
    ),
]


def test_an_object_with_an_integer_too_long_to_read_is_a_400_saying_so(
    static_server: RunningServer, client: httpx.Client
) -> None:
    """Valid JSON (it was "body is not valid JSON"), though the API server never sends such a number
    (it reads integers as 64-bit): the review is refused with what it holds, and nothing else breaks."""
    body = json.dumps(review(load_jobset("rfc-4.6-static"), uid="huge")).encode()
    body = body.replace(b'"replicas": 2', b'"replicas": 1' + b"0" * 5000, 1)
    assert b"0" * 5000 in body
    response = client.post(f"{static_server.url}/mutate", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"].startswith("body holds an integer of more than 4300 digits")
    assert client.get(f"{static_server.url}/healthz").status_code == 200


@pytest.mark.parametrize(("name", "body", "status", "reason"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_reviews_get_a_4xx_with_a_reason(
    name: str, body: bytes, status: int, reason: str, static_server: RunningServer, client: httpx.Client
) -> None:
    reply = client.post(f"{static_server.url}/validate", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == status
    assert reason in reply.json()["error"]


def test_wrong_content_type_is_415(static_server: RunningServer, client: httpx.Client) -> None:
    reply = client.post(f"{static_server.url}/mutate", content=b"{}", headers={"content-type": "text/plain"})
    assert reply.status_code == 415 and "application/json" in reply.json()["error"]


def test_body_over_the_limit_is_413(static_server: RunningServer, client: httpx.Client) -> None:
    limit = static_server.state.policy.server.max_body_bytes
    big = b'{"kind": "AdmissionReview", "pad": "' + b"x" * limit + b'"}'
    reply = client.post(f"{static_server.url}/mutate", content=big, headers={"content-type": "application/json"})
    assert reply.status_code == 413

    def chunks() -> Any:  # no content-length: the streamed size is what counts
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536

    reply = client.post(f"{static_server.url}/mutate", content=chunks(), headers={"content-type": "application/json"})
    assert reply.status_code == 413
    assert client.get(f"{static_server.url}/healthz").status_code == 200


def test_unknown_tier_in_the_path_is_404(static_server: RunningServer, client: httpx.Client) -> None:
    reply = post(static_server, client, "/mutate/staging", review(load_jobset("rfc-4.6-static")))
    assert reply.status_code == 404 and "production, dev" in reply.json()["error"]


def test_get_on_an_admission_endpoint_is_405(static_server: RunningServer, client: httpx.Client) -> None:
    assert client.get(f"{static_server.url}/mutate").status_code == 405


def test_a_wrong_method_or_path_is_json_like_every_other_refusal(
    static_server: RunningServer, client: httpx.Client
) -> None:
    """The README says refusals are ``{"error": ...}``; Starlette's 404 and 405 were plain text."""
    wrong_method = client.get(f"{static_server.url}/mutate")
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
    assert wrong_method.headers["content-type"] == "application/json"
    assert wrong_method.json() == {"error": "method GET is not allowed on /mutate; use POST"}
    no_path = client.post(f"{static_server.url}/mutat", json={})
    assert no_path.status_code == 404 and no_path.headers["content-type"] == "application/json"
    assert no_path.json()["error"].startswith(
        "no such path /mutat; served: POST /validate/{tier}, POST /mutate/{tier}, POST /validate, POST /mutate, "
    )


def test_the_webhook_serves_no_advisory_paths(static_server: RunningServer, client: httpx.Client) -> None:
    """Simulate and explain are the advisor's (its own server): the admission server has no such paths."""
    simulate = client.post(f"{static_server.url}/simulate", json=load_jobset("rfc-4.6-static"))
    explain = client.get(f"{static_server.url}/explain/kubemaker/jobset/llm-pretrain-a3f8")
    for reply, path in ((simulate, "/simulate"), (explain, "/explain/kubemaker/jobset/llm-pretrain-a3f8")):
        assert reply.status_code == 404
        error = reply.json()["error"]
        assert error.startswith(f"no such path {path}; served: POST /validate/{{tier}}, ")
        assert "simulate" not in error.split("served:")[1] and "explain" not in error.split("served:")[1]


def test_probes(static_server: RunningServer, client: httpx.Client) -> None:
    assert client.get(f"{static_server.url}/healthz").text == "ok"
    assert client.get(f"{static_server.url}/readyz").status_code == 200


def test_metrics_count_requests_and_findings(static_server: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["suspend"] = False
    post(static_server, client, "/mutate", review(obj))
    text = client.get(f"{static_server.url}/metrics").text
    assert 'tpu_admission_requests_total{decision="denied",endpoint="mutate"}' in text
    assert 'tpu_admission_findings_total{action="deny",rule="suspend-forbidden"}' in text
    assert "tpu_admission_request_duration_seconds_bucket" in text


def test_exceptions_are_honoured_and_counted_apart(tls: TlsSettings, client: httpx.Client) -> None:
    policy = policy_from_mapping(
        {"exceptions": [{"rules": ["suspend-forbidden"], "names": ["llm-pretrain-*"], "reason": "load test, OPS-7"}]}
    )
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["suspend"] = True
    with running_server(policy, tls) as server:
        response = answer(server, client, "/mutate", obj)
        text = client.get(f"{server.url}/metrics").text
    assert response["allowed"] is True
    assert any(
        w.startswith("[suspend-forbidden]") and w.endswith("exception: load test, OPS-7)") for w in response["warnings"]
    )
    assert 'tpu_admission_excepted_findings_total{rule="suspend-forbidden"} 1.0' in text
    assert 'tpu_admission_findings_total{action="warn",rule="suspend-forbidden"} 1.0' in text
    assert 'action="deny",rule="suspend-forbidden"' not in text


def test_one_json_log_line_per_decision(
    static_server: RunningServer, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["suspend"] = True
    with caplog.at_level(logging.INFO, logger="tpu_admission.decision"):
        post(static_server, client, "/mutate", review(obj, uid="log-me", username="alice"))
        line = decision_line(caplog, "log-me")
    lines = [r.msg for r in caplog.records if r.name == "tpu_admission.decision"]
    assert all(isinstance(line, dict) for line in lines)  # structured; serve encodes it as one JSON line
    assert line["operation"] == "CREATE" and line["kind"] == "JobSet" and line["user"] == "alice"
    assert line["namespace"] == "kubemaker" and line["name"] == "llm-pretrain-a3f8"
    assert line["allowed"] is False and line["rules"] == ["suspend-forbidden"]
    assert line["durationMs"] >= 0
    assert (line["level"], line["logger"], line["msg"]) == ("info", "tpu_admission.decision", "decision")
    assert list(line) == [
        "level", "logger", "msg", "endpoint", "uid", "operation", "kind", "namespace", "name", "user", "tier",
        "dryRun", "allowed", "rules", "skipped", "excepted", "patched", "durationMs",
    ]  # fmt: skip


# ---------------------------------------------------------------- Jobs, Deployments, Pods


JOBSET_CONTROLLER = "system:serviceaccount:jobset-system:jobset-controller-manager"


def test_a_jobsets_own_job_is_admitted_unchanged(static_server: RunningServer, client: httpx.Client) -> None:
    job = load_job("rfc-job-static")
    del job["metadata"]["labels"]  # would be queue-label-missing, ...
    job["spec"]["suspend"] = True  # ... and suspend-forbidden, were it not the JobSet's child
    job["metadata"]["ownerReferences"] = [JOBSET_OWNER]
    for path in ("/mutate/production", "/validate/production", "/mutate"):
        response = answer(static_server, client, path, job, uid="child", username=JOBSET_CONTROLLER)
        assert response == {"uid": "child", "allowed": True}
    # The same Job with its owner reference, from anyone else: the reference is the user's own
    # writing, and every rule judges it (without the reference: the same three lines).
    forged = answer(static_server, client, "/mutate/production", job)
    del job["metadata"]["ownerReferences"]
    for response in (forged, answer(static_server, client, "/mutate/production", job)):
        assert response["allowed"] is False
        assert response["status"]["message"].count("\n") == 2  # three lines: two labels and suspend
    assert forged["status"] == answer(static_server, client, "/mutate/production", job)["status"]


def test_a_cpu_deployment_updated_onto_tpus_is_refused(static_server: RunningServer, client: httpx.Client) -> None:
    """8 unqueued CPU replicas admitted outside Kueue, then updated to 4 chips of tpu7x each:
    judged whole, as its CREATE would be, instead of taking TPUs outside every quota."""
    old = deployment().queue(None).priority(None).replicas(8)
    new = deployment().queue(None).priority(None).replicas(8).request(TPU, "4").request(TPU, "4", kind="limits")
    new.node_selector("cloud.google.com/gke-tpu-accelerator", "tpu7x").node_selector(TOPOLOGY_LABEL, "2x2x1")
    response = answer(
        static_server, client, "/validate/production", new.obj(), operation="UPDATE", old=old.obj(), uid="onto-tpus"
    )
    assert response["allowed"] is False
    lines = response["status"]["message"].splitlines()
    assert [line.split("]")[0] for line in lines] == ["[queue-label-missing", "[priority-label-missing"]
    created = answer(static_server, client, "/mutate/production", new.obj())
    assert created["status"]["message"] == response["status"]["message"]


def test_pods_are_never_judged(static_server: RunningServer, client: httpx.Client) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "kubemaker"},
        "spec": {"priorityClassName": "ci-tpu-pool", "containers": [{"name": "c", "image": "x"}]},
    }
    body = review(pod, uid="pod")
    body["request"]["kind"] = {"group": "", "version": "v1", "kind": "Pod"}
    reply = post(static_server, client, "/mutate/production", body).json()
    assert reply["response"] == {"uid": "pod", "allowed": True}


@pytest.mark.parametrize("obj", [load_job("dev-job-cpu"), load_deployment("dev-deployment")], ids=["Job", "Deployment"])
def test_dev_job_and_deployment_get_the_default_labels(
    obj: dict[str, Any], dynamic_server: RunningServer, client: httpx.Client
) -> None:
    response = answer(dynamic_server, client, "/mutate/dev", obj)
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
    assert patched["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "default",
        "kueue.x-k8s.io/priority-class": "default",
    }
    assert {k: v for k, v in patched.items() if k != "metadata"} == {k: v for k, v in obj.items() if k != "metadata"}


def test_the_decision_log_names_the_kind(
    static_server: RunningServer, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    deployment = load_deployment("service-deployment")
    deployment["spec"]["template"]["spec"]["priorityClassName"] = "high"
    with caplog.at_level(logging.INFO, logger="tpu_admission.decision"):
        post(static_server, client, "/mutate", review(deployment, uid="log-deployment"))
        line = decision_line(caplog, "log-deployment")
    assert (line["kind"], line["name"], line["allowed"]) == ("Deployment", "eval-gateway", False)
    assert line["rules"] == ["pod-priority-class-forbidden"]


def test_a_million_item_list_is_refused_at_once_while_healthz_answers(
    static_server: RunningServer, client: httpx.Client, cert_files: Any
) -> None:
    """The freeze of issue #9: 1.5M integers as replicatedJobs, under the body cap. The list
    is measured before any item is read, so the answer is short and quick, and the probe
    (on its own connection) keeps answering. 1 s is the issue's liveness bound, not a
    benchmark: the unbounded version blocked the loop for over a minute."""
    import ssl
    import threading
    import time

    obj = load_jobset("rfc-4.6-static")
    obj["spec"]["replicatedJobs"] = [1] * 1_500_000
    body = json.dumps(review(obj, namespace="kubemaker", uid="huge"), separators=(",", ":")).encode()
    assert len(body) <= static_server.state.policy.server.max_body_bytes
    probes: list[float] = []
    done = threading.Event()

    def probe() -> None:
        context = ssl.create_default_context(cafile=str(cert_files.ca))
        with httpx.Client(verify=context, timeout=10) as health:
            for _ in range(2000):  # bounded however long the big request takes
                started = time.perf_counter()
                assert health.get(f"{static_server.url}/healthz").text == "ok"
                probes.append(time.perf_counter() - started)
                if done.is_set() and len(probes) >= 3:
                    return

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        reply = client.post(f"{static_server.url}/mutate", content=body, headers={"content-type": "application/json"})
    finally:
        done.set()
        prober.join(timeout=30)
    assert reply.status_code == 200
    response = reply.json()["response"]
    assert response["uid"] == "huge" and response["allowed"] is False
    assert response["status"]["message"] == (
        "[jobset-malformed] spec.replicatedJobs: has 1500000 items, more than the 256 this webhook judges; "
        "Kueue admits at most 18 podSets per Workload; split the JobSet"
    )
    assert len(reply.content) < 4096
    assert probes and max(probes) < 1.0, max(probes)


def test_findings_past_the_limit_are_counted_not_listed(static_server: RunningServer, client: httpx.Client) -> None:
    """150,000 non-string labels: 25 lines and "... and N more", not a 25 MB answer."""
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["labels"] = {f"label-{i}": i for i in range(150_000)}
    body = json.dumps(review(obj, namespace="kubemaker"), separators=(",", ":")).encode()
    reply = client.post(f"{static_server.url}/mutate", content=body, headers={"content-type": "application/json"})
    response = reply.json()["response"]
    lines = response["status"]["message"].split("\n")
    limit = static_server.state.policy.limits.max_findings
    assert len(lines) == limit + 1
    assert lines[0] == '[jobset-malformed] metadata.labels["label-0"]: must be a string, got int; quote the value'
    # every label is wrong, plus whatever else the unlabelled object breaks
    assert lines[-1].startswith("... and ") and int(lines[-1].split()[2]) >= 150_000 - limit
    assert len(reply.content) < 16 * 1024


def test_a_lone_surrogate_uid_is_answered_not_a_500(static_server: RunningServer, client: httpx.Client) -> None:
    body = json.dumps(review(load_jobset("rfc-4.6-static"), namespace="kubemaker", uid="\ud800")).encode()
    before = _count(static_server, client, 'decision="allowed",endpoint="validate"')
    reply = client.post(f"{static_server.url}/validate", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 200 and reply.json()["response"] == {"uid": "\ud800", "allowed": True}
    assert _count(static_server, client, 'decision="allowed",endpoint="validate"') == before + 1


def _count(server: RunningServer, client: httpx.Client, labels: str) -> float:
    for line in client.get(f"{server.url}/metrics").text.splitlines():
        if line.startswith(f"tpu_admission_requests_total{{{labels}}}"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
