"""Fuzz the HTTP layer over real TLS: bad input is a 4xx, never a 5xx or a dropped connection.

Every 200 is an AdmissionReview that echoes the request's uid, and every patch it
carries applies to the submitted object with ``jsonpatch``.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import ssl
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import jsonpatch
import pytest
from builders import DeploymentBuilder, JobBuilder, JobSetBuilder, deployment, job, jobset
from cluster_fixtures import STATE
from fuzzing import FIXTURES, json_values, mutate_subtrees
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from support import RunningServer, load_jobset, review, running_server

from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.tls import TlsSettings

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PATHS = ["/mutate", "/validate", "/mutate/dev", "/validate/production", "/mutate/production"]
MAX_BODY = Policy().server.max_body_bytes
JSON = {"content-type": "application/json"}


def _event(value: str) -> None:
    with contextlib.suppress(InvalidArgument):  # outside a hypothesis test there is nothing to record
        event(value)


def check_answer(reply: httpx.Response, sent: Any) -> dict[str, Any] | None:
    """The HTTP contract for any input; returns the AdmissionReview response on a 200."""
    assert reply.status_code < 500, (reply.status_code, reply.text[:500])
    _event(f"HTTP {reply.status_code}")
    if reply.status_code != 200:
        assert 400 <= reply.status_code < 500, reply.status_code
        assert reply.json()["error"], "a 4xx says why"
        return None
    answer = reply.json()
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["code"] in (403, 500)
        assert response["status"]["message"]
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
        patch = json.loads(base64.b64decode(response["patch"]))
        patched = jsonpatch.apply_patch(sent["request"]["object"], patch)
        assert isinstance(patched["metadata"]["labels"], dict)
        _event("patched")
    return response  # type: ignore[no-any-return]


@st.composite
def mutated_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """A real AdmissionReview with one to three subtrees (envelope or object) replaced or removed."""
    obj = load_jobset(draw(st.sampled_from(FIXTURES)))
    namespace = draw(st.sampled_from(["kubemaker", "default", "falcon-jobs", "elsewhere"]))
    body = review(obj, namespace=namespace, uid=str(uuid.uuid4()))
    return mutate_subtrees(draw, body, keep_root=False)  # type: ignore[no-any-return]


@pytest.fixture(params=["static", "dynamic"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    yield request.getfixturevalue(f"{request.param}_server")


@pytest.fixture(scope="module")
def client(cert_files: certs.CertificateFiles) -> Iterator[httpx.Client]:
    """conftest's verifying client, closed at the end of this module.

    A keep-alive TLS connection still open when a session server stops holds uvicorn's
    graceful shutdown for its full 20 s (the idle client never answers close_notify), so
    this module closes its connections before the session servers go.
    """
    context = ssl.create_default_context(cafile=str(cert_files.ca))
    with httpx.Client(verify=context, timeout=10) as http:
        yield http


@FUZZ
@given(body=mutated_reviews(), path=st.sampled_from(PATHS))
def test_mutated_reviews(server: RunningServer, client: httpx.Client, body: dict[str, Any], path: str) -> None:
    reply = client.post(f"{server.url}{path}", content=json.dumps(body), headers={"content-type": "application/json"})
    check_answer(reply, body)


@FUZZ
@given(body=json_values, path=st.sampled_from(PATHS))
def test_arbitrary_json_bodies(static_server: RunningServer, client: httpx.Client, body: Any, path: str) -> None:
    reply = client.post(
        f"{static_server.url}{path}", content=json.dumps(body), headers={"content-type": "application/json"}
    )
    assert reply.status_code < 500
    if reply.status_code == 200:
        check_answer(reply, body)


@FUZZ
@given(
    data=st.binary(max_size=300),
    content_type=st.sampled_from(
        ["application/json", "application/json; charset=utf-8", "text/plain", "", "application/x-www-form-urlencoded",
         "multipart/form-data; boundary=x", "application/json-patch+json", "APPLICATION/JSON"]
    ),
)  # fmt: skip
def test_arbitrary_bytes_and_content_types(
    static_server: RunningServer, client: httpx.Client, data: bytes, content_type: str
) -> None:
    reply = client.post(f"{static_server.url}/mutate", content=data, headers={"content-type": content_type})
    assert 400 <= reply.status_code < 500, (reply.status_code, reply.text[:300])
    assert reply.json()["error"]


def _nested(depth: int, open_: str, close: str, leaf: str = "1") -> str:
    return open_ * depth + leaf + close * depth


def _with_object(obj_json: str, uid: str = "deep-uid") -> bytes:
    envelope = review(load_jobset("rfc-4.6-static"), namespace="kubemaker", uid=uid)
    envelope["request"]["object"] = "__OBJECT__"
    return json.dumps(envelope).replace('"__OBJECT__"', obj_json).encode()


def _wrong_envelope(field: str, value_json: str) -> bytes:
    envelope = review(load_jobset("rfc-4.6-static"), namespace="kubemaker", uid="env-uid")
    node = envelope
    *parents, last = field.split(".")
    for key in parents:
        node = node[key]
    node[last] = "__VALUE__"
    return json.dumps(envelope).replace('"__VALUE__"', value_json).encode()


HOSTILE: dict[str, tuple[bytes, str, set[int]]] = {
    # name: (body, content type, acceptable statuses)
    "array nested 100k deep": (_nested(100_000, "[", "]").encode(), "application/json", {400}),
    "object nested 100k deep": (_nested(100_000, '{"a":', "}").encode(), "application/json", {400}),
    "array nested 995 deep": (_nested(995, "[", "]").encode(), "application/json", {400}),
    "kind nested 980 deep": (_wrong_envelope("kind", _nested(980, "[", "]")), "application/json", {400}),
    "apiVersion nested 980 deep": (_wrong_envelope("apiVersion", _nested(980, "[", "]")), "application/json", {400}),
    "object nested 5000 deep": (_with_object(_nested(5000, "[", "]")), "application/json", {400, 200}),
    "labels nested 900 deep": (
        _with_object('{"metadata":{"labels":' + _nested(900, "[", "]") + "}}"),
        "application/json",
        {200},
    ),
    # the answer echoes the uid: a huge one is refused rather than copied into a huge answer
    "uid a 2 MB string": (
        json.dumps(review(load_jobset("rfc-4.6-static"), uid="u" * 2_000_000)).encode(),
        "application/json",
        {400},
    ),
    # a lone surrogate decodes to a str that UTF-8 cannot encode: the answer must still go out
    "uid a lone surrogate": (
        json.dumps(review(load_jobset("rfc-4.6-static"), uid="\ud800-uid")).encode(),
        "application/json",
        {200},
    ),
    "label value a 2 MB string": (
        _with_object(json.dumps({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q" * 2_000_000}}})),
        "application/json",
        {200},
    ),
    "kind a 2 MB string": (_wrong_envelope("kind", json.dumps("k" * 2_000_000)), "application/json", {400}),
    "body over the size limit": (b" " * (MAX_BODY + 1), "application/json", {413}),
    "uid a number": (_wrong_envelope("request.uid", "42"), "application/json", {400}),
    "uid empty": (_wrong_envelope("request.uid", '""'), "application/json", {400}),
    "request a list": (_wrong_envelope("request", "[]"), "application/json", {400}),
    "operation a list": (_wrong_envelope("request.operation", '["CREATE"]'), "application/json", {400}),
    "userInfo a string": (_wrong_envelope("request.userInfo", '"me"'), "application/json", {400}),
    "groups a dict": (_wrong_envelope("request.userInfo.groups", "{}"), "application/json", {400}),
    "dryRun a string": (_wrong_envelope("request.dryRun", '"yes"'), "application/json", {400}),
    "NaN and Infinity": (
        _with_object('{"spec":{"replicatedJobs":[{"name":"a","replicas":NaN,"template":Infinity}]}}'),
        "application/json",
        {200},
    ),
    "lone surrogate": (_wrong_envelope("kind", '"\\ud800"'), "application/json", {400}),
    "lone surrogate in the uid": (_wrong_envelope("request.uid", '"\\ud800"'), "application/json", {200, 400}),
    "lone surrogate in a label": (
        _with_object('{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"\\udc00"}}}'),
        "application/json",
        {200},
    ),
    "not UTF-8": (b'{"kind":"\xff\xfe"}', "application/json", {400}),
    "empty body": (b"", "application/json", {400}),
    "null": (b"null", "application/json", {400}),
    "text/plain": (_with_object("{}"), "text/plain", {415}),
    "no content type": (_with_object("{}"), "", {415}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_bodies(static_server: RunningServer, client: httpx.Client, name: str) -> None:
    body, content_type, statuses = HOSTILE[name]
    headers = {"content-type": content_type} if content_type else {}
    reply = client.post(f"{static_server.url}/mutate", content=body, headers=headers)
    assert reply.status_code in statuses, (reply.status_code, reply.text[:300])
    if reply.status_code == 200:
        check_answer(reply, json.loads(body))
    else:
        assert reply.json()["error"]
    # and the server is still there for the next request on the same client
    fine = review(load_jobset("rfc-4.6-static"), namespace="kubemaker", uid="after")
    assert client.post(f"{static_server.url}/validate", json=fine).json()["response"]["uid"] == "after"


def test_chunked_body_without_content_length(static_server: RunningServer, client: httpx.Client) -> None:
    body = json.dumps(review(load_jobset("rfc-4.6-static"), namespace="kubemaker", uid="chunked")).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 100):
            yield body[start : start + 100]

    reply = client.post(f"{static_server.url}/mutate", content=chunks(), headers={"content-type": "application/json"})
    assert reply.status_code == 200
    assert reply.json()["response"] == {"uid": "chunked", "allowed": True}


def test_chunked_body_over_the_limit(static_server: RunningServer, client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY // 65536 + 2):
            yield b" " * 65536

    reply = client.post(f"{static_server.url}/mutate", content=chunks(), headers={"content-type": "application/json"})
    assert reply.status_code == 413


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/mutate", 405), ("PUT", "/validate", 405), ("POST", "/mutate/no-such-tier", 404), ("POST", "/nope", 404)],
)
def test_wrong_methods_and_paths(
    static_server: RunningServer, client: httpx.Client, method: str, path: str, status: int
) -> None:
    body = json.dumps(review(load_jobset("rfc-4.6-static"), namespace="kubemaker")).encode()
    reply = client.request(
        method, f"{static_server.url}{path}", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == status


# ---------------------------------------------------------------- huge quantities, a cluster configured

#: valid quantities no node holds (the JobSet CRD's pattern accepts each), and JSON numbers
#: Python reads as infinity or NaN: written into the body as they are
BEYOND_ANY_NODE = ['"1e400"', '"1e999999"', '"1' + "0" * 1000 + '"', '"1e2147483647"', '"1e-2147483648"', "1e400"]
BEYOND_ANY_NODE += ['"9' + "9" * 5000 + 'Ei"', "1" + "0" * 1000, "Infinity"]
HUGE_QUANTITIES = [*BEYOND_ANY_NODE, '"-1e400"', "-1e400", "NaN", '"+"', '"."']
QUANTITY_PLACES = ["ephemeral-storage", "cpu", "memory", "google.com/tpu", "example.com/widget"]


@pytest.fixture(scope="module")
def clustered_server(tls: TlsSettings) -> Iterator[RunningServer]:
    """The default policy with the fixture cluster: the cluster rules sum and compare quantities."""
    with running_server(Policy(), tls, cluster=STATE) as server:
        yield server


def _with_quantity(obj: dict[str, Any], resource: str, raw: str, operation: str = "CREATE") -> bytes:
    """A review of ``obj`` whose first container requests ``raw`` (JSON text, as is) of ``resource``."""
    builder = {"JobSet": JobSetBuilder, "Job": JobBuilder, "Deployment": DeploymentBuilder}[obj["kind"]](obj)
    builder.request(resource, "__QUANTITY__").request(resource, "__QUANTITY__", kind="limits")
    old = copy.deepcopy(obj) if operation == "UPDATE" else None
    body = json.dumps(review(builder.obj(), uid="huge", operation=operation, old=old))
    return body.replace('"__QUANTITY__"', raw).encode()


KINDS = {"JobSet": jobset, "Job": job, "Deployment": deployment}


@pytest.mark.parametrize("raw", HUGE_QUANTITIES, ids=lambda raw: raw[:16])
@pytest.mark.parametrize("resource", QUANTITY_PLACES)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_huge_quantities_are_numbers_never_a_500(
    clustered_server: RunningServer, client: httpx.Client, kind: str, resource: str, raw: str
) -> None:
    """Whatever quantity an object holds, with a cluster configured, the answer is a decision:
    a magnitude no node holds is refused (by node capacity, queue capacity or coverage)."""
    for path in ("/mutate/production", "/validate/production", "/validate/dev"):
        for operation in ("CREATE", "UPDATE"):
            body = _with_quantity(KINDS[kind]().obj(), resource, raw, operation)
            reply = client.post(f"{clustered_server.url}{path}", content=body, headers=JSON)
            response = check_answer(reply, json.loads(body))
            assert response is not None, (reply.status_code, reply.text[:300])
            if operation == "CREATE" and raw in BEYOND_ANY_NODE:
                assert response["allowed"] is False, response


@st.composite
def huge_quantity_reviews(draw: st.DrawFn) -> bytes:
    """A fixture object of any kind with some of its requests and limits set to quantities of any size."""
    kind = draw(st.sampled_from(sorted(KINDS)))
    obj = KINDS[kind]().obj()
    builder = {"JobSet": JobSetBuilder, "Job": JobBuilder, "Deployment": DeploymentBuilder}[kind](obj)
    digits = st.text("0123456789", min_size=1, max_size=40)
    exponent = st.integers(-(2**64), 2**64).map(str)
    text = st.builds(
        lambda sign, whole, fraction, suffix: f"{sign}{whole}{fraction}{suffix}",
        st.sampled_from(["", "+", "-"]),
        digits | st.just("") | st.builds(lambda n: "1" + "0" * n, st.integers(0, 3000)),
        st.just("") | digits.map(lambda d: "." + d),
        st.sampled_from(["", "m", "n", "k", "E", "Ki", "Ei", "Pi"]) | exponent.map(lambda e: "e" + e),
    )
    raws: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        resource = draw(st.sampled_from(QUANTITY_PLACES))
        raw = draw(text.map(json.dumps) | st.sampled_from(["1e400", "-1e400", "NaN", "Infinity", "1e308"]))
        marker = f"__QUANTITY_{len(raws)}__"
        builder.request(resource, marker, kind=draw(st.sampled_from(["requests", "limits"])))
        raws.append(raw)
    body = json.dumps(review(builder.obj(), uid=str(uuid.uuid4())))
    for index, raw in enumerate(raws):
        body = body.replace(f'"__QUANTITY_{index}__"', raw)
    return body.encode()


@FUZZ
@given(body=huge_quantity_reviews(), path=st.sampled_from(PATHS))
def test_quantities_of_any_size(clustered_server: RunningServer, client: httpx.Client, body: bytes, path: str) -> None:
    reply = client.post(f"{clustered_server.url}{path}", content=body, headers=JSON)
    assert check_answer(reply, json.loads(body)) is not None, (reply.status_code, reply.text[:300])
