"""The review's two envelope decoders against each other: identical decisions and response bytes.

The server decodes a review once with msgspec: the envelope into typed structs and the
object as plain JSON (``webhook.wire.reviews.parse_review``); a body that decoder refuses
is read by ``json.loads`` (``parse_review_general``), which words every 4xx. The object
then goes to the one reader of its kind either way (``webhook.objects.readers.read_workload``).
Here every body is answered both ways, from the same bytes, and the two answers must be
byte for byte the same: the review (or the
same 4xx reason), every field of the decision, the encoded AdmissionReview response and
the decision log's object name. The corpus is the fixture JobSets, the HTTP fuzz corpus
(subtrees of the review replaced with arbitrary JSON) and hand-written bodies msgspec
reads differently.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from fuzzing import FIXTURES, mutate_subtrees
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support import FIXTURES as FIXTURE_DIR
from support import load_jobset, review

from webhook.cluster.statefiles import state_from_objects
from webhook.engine.decision import Stage, decide
from webhook.objects.kinds import JOB
from webhook.objects.readers import read_workload
from webhook.objects.sources import load_documents
from webhook.policy.config import Policy
from webhook.serving.app import admission_facts
from webhook.wire import reviews
from webhook.wire.jsonwire import encode
from webhook.wire.reviews import AdmissionRequest, ReviewError, parse_review, parse_review_general, review_response

POLICIES = {"static": Policy(), "dynamic": Policy(mode="dynamic")}
CLUSTER = state_from_objects([d.data for d in load_documents([str(FIXTURE_DIR / "cluster")])], POLICIES["static"])
ROUTES: list[tuple[Stage, str | None]] = [
    ("mutate", None),
    ("validate", None),
    ("mutate", "dev"),
    ("validate", "production"),
]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parsed(body: bytes, parse: Any) -> AdmissionRequest | tuple[int, str]:
    try:
        return parse(body)  # type: ignore[no-any-return]
    except ReviewError as exc:
        return exc.status, exc.reason


def answers(request: AdmissionRequest, policy: Policy, cluster: Any) -> list[Any]:
    """Everything the server derives from a review, for every route."""
    out: list[Any] = [request.uid, request.operation, request.kind, request.group, request.namespace]
    out += [request.name, request.user, request.dry_run, request.object_name]
    for stage, tier in ROUTES:
        facts = admission_facts(request, stage, tier)  # as the server builds them
        decision = decide(request.object, facts, policy, cluster) if request.judged_kind else None
        if decision is None:
            out.append(None)
            continue
        lines = [(f.line(), f.action) for f in decision.findings]
        out.append((decision.allowed, lines, decision.warnings, decision.patch, decision.tier, decision.skipped))
        out.append(encode(review_response(request.uid, decision)))
    return out


def same_both_ways(body: bytes, *, cluster: Any = None) -> AdmissionRequest | tuple[int, str]:
    """Assert both paths agree on ``body``; return the fast path's review (or 4xx)."""
    fast, general = parsed(body, parse_review), parsed(body, parse_review_general)
    if not isinstance(general, AdmissionRequest):
        assert fast == general, "the same 4xx and reason"
        return fast
    assert isinstance(fast, AdmissionRequest), fast
    for name, policy in POLICIES.items():
        state = cluster if name == "static" else None
        assert answers(fast, policy, state) == answers(general, policy, state)
    return fast


def body_of(obj: Any, namespace: str = "kubemaker", **kwargs: Any) -> bytes:
    return json.dumps(review(obj, namespace=namespace, uid=str(uuid.uuid4()), **kwargs)).encode()


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("namespace", ["kubemaker", "default", "falcon-jobs", "elsewhere"])
def test_fixtures_answer_alike(name: str, namespace: str) -> None:
    body = body_of(load_jobset(name), namespace)
    request = same_both_ways(body, cluster=CLUSTER)
    assert isinstance(request, AdmissionRequest) and reviews._fast_review(body) == request  # the fast path read it


def test_an_update_answers_alike() -> None:
    old, new = load_jobset("rfc-4.6-static"), load_jobset("rfc-4.6-static")
    new["spec"]["suspend"] = True
    new["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue"
    same_both_ways(body_of(new, operation="UPDATE", old=old, username="alice"), cluster=CLUSTER)


def _many_replicated_jobs(count: int) -> dict[str, Any]:
    """The RFC JobSet with ``count`` well-formed copies of its replicatedJob."""
    obj = load_jobset("rfc-4.6-static")
    job = obj["spec"]["replicatedJobs"][0]
    obj["spec"]["replicatedJobs"] = [{**job, "name": f"j{i}"} for i in range(count)]
    return obj


def edited(body: bytes, old: bytes, new: bytes, count: int = 1) -> bytes:
    """``body`` with ``old`` replaced: an edit that finds nothing to replace is an error, not a no-op."""
    if old not in body:
        raise ValueError(f"{old!r} is not in the body: the case would test nothing")
    return body.replace(old, new, count)


#: a Job the JobSet controller made: its object names JobSet's group inside ``apiVersion``
OWNED_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "llm-pretrain-a3f8-workers-0",
        "namespace": "kubemaker",
        "labels": {"jobset.sigs.k8s.io/jobset-name": "llm-pretrain-a3f8"},
        "ownerReferences": [
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "llm-pretrain-a3f8", "uid": "u"}
        ],
    },
    "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
}

ODD: dict[str, bytes] = {
    "NaN replicas": edited(body_of(load_jobset("rfc-4.6-static")), b'"replicas": 2', b'"replicas": NaN', 1),
    "Infinity in a field no rule reads": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"name": "llm-pretrain-a3f8"',
        b'"name": "llm-pretrain-a3f8", "x": Infinity',
        1,
    ),
    "1e400 in a field no rule reads": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"name": "llm-pretrain-a3f8"',
        b'"name": "llm-pretrain-a3f8", "x": [1e400]',
        1,
    ),
    "1e400 as replicas": edited(body_of(load_jobset("rfc-4.6-static")), b'"replicas": 2', b'"replicas": 2e400', 1),
    "a big integer as replicas": edited(
        body_of(load_jobset("rfc-4.6-static")), b'"replicas": 2', b'"replicas": 223456789012345678901234567890', 1
    ),
    "lone surrogate in a label": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"kueue.x-k8s.io/queue-name": "',
        b'"kueue.x-k8s.io/queue-name": "\\ud800',
        1,
    ),
    "lone surrogate in the uid": json.dumps(review(load_jobset("rfc-4.6-static"), uid="\ud800")).encode(),
    "UTF-16": json.dumps(review(load_jobset("rfc-4.6-static"), uid="utf16")).encode("utf-16"),
    "UTF-8 with a BOM": b"\xef\xbb\xbf" + body_of(load_jobset("rfc-4.6-static")),
    "null namespace": edited(body_of(load_jobset("rfc-4.6-static")), b'"namespace": "kubemaker"', b'"namespace": null'),
    "kind group a number": edited(
        body_of(load_jobset("rfc-4.6-static")), b'"group": "jobset.x-k8s.io"', b'"group": 5', 1
    ),
    "object 3000 deep": edited(body_of("__OBJECT__"), b'"__OBJECT__"', b"[" * 3000 + b"]" * 3000),
    "labels 900 deep": edited(body_of({"metadata": {"labels": "__X__"}}), b'"__X__"', b"[" * 900 + b"]" * 900),
    "duplicate keys": edited(
        body_of(load_jobset("rfc-4.6-static")), b'"replicas": 2', b'"replicas": -1, "replicas": 2', 1
    ),
    "replicas true": edited(body_of(load_jobset("rfc-4.6-static")), b'"replicas": 2', b'"replicas": true', 1),
    "replicas 2.0": edited(body_of(load_jobset("rfc-4.6-static")), b'"replicas": 2', b'"replicas": 2.0', 1),
    "an empty replicatedJob": body_of({"spec": {"replicatedJobs": [{}]}}),
    "a null replicatedJob": body_of({"spec": {"replicatedJobs": [None]}}),
    "null replicatedJobs": body_of({"metadata": {"name": "x"}, "spec": {"replicatedJobs": None}}),
    "a null container": edited(body_of(load_jobset("rfc-4.6-static")), b'"containers": [', b'"containers": [null, ', 1),
    "owned by a JobSet": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"name": "llm-pretrain-a3f8"',
        b'"name": "llm-pretrain-a3f8", "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", '
        b'"kind": "JobSet", "name": "parent", "uid": "u", "controller": true}]',
        1,
    ),
    "a sidecar init container and tolerations": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"containers": [',
        b'"tolerations": [{"key": "google.com/tpu", "operator": "Exists"}], "initContainers": [{"name": "side", '
        b'"restartPolicy": "Always", "resources": {"requests": {"cpu": "2"}}}], "containers": [',
        1,
    ),
    "more replicatedJobs than limits allow": body_of(_many_replicated_jobs(300)),
    "more containers than limits allow": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"containers": [',
        b'"initContainers": [' + b", ".join([b'{"name": "i"}'] * 1100) + b'], "containers": [',
        1,
    ),
    "invalid UTF-8 in a field no rule reads": edited(
        body_of(load_jobset("rfc-4.6-static")), b'"image": "', b'"x": "\xff", "image": "', 1
    ),
    "invalid UTF-8 in a field of the review no one reads": edited(
        body_of(load_jobset("rfc-4.6-static")), b'"uid": "', b'"x": "\xff", "uid": "', 1
    ),
    "invalid UTF-8 in a label": edited(
        body_of(load_jobset("rfc-4.6-static")),
        b'"kueue.x-k8s.io/queue-name": "',
        b'"kueue.x-k8s.io/queue-name": "\xff',
        1,
    ),
    "invalid UTF-8 in a Job": edited(body_of(OWNED_JOB), b'"name": "c"', b'"name": "\xc3("', 1),
    "invalid UTF-8 in the old object": edited(
        body_of(load_jobset("rfc-4.6-static"), operation="UPDATE", old={"metadata": {"name": "x"}}),
        b'"name": "x"',
        b'"name": "x\xff"',
        1,
    ),
    "UTF-8 beyond ASCII": edited(
        body_of(load_jobset("rfc-4.6-static")), b'"image": "', b'"x": "\xc3\xa9", "image": "', 1
    ),
    "an unknown kind": edited(body_of({"metadata": {"name": "x"}}), b'"kind": "JobSet"', b'"kind": "Job"'),
    "no object": body_of(None),
    "object absent": edited(body_of(None), b'"object": null, ', b"", 1),
    "compact JSON, as the API server writes it": json.dumps(
        review(load_jobset("rfc-4.6-static"), namespace="default"), separators=(",", ":")
    ).encode(),
    "a Job a JobSet owns": body_of(OWNED_JOB),
    "a Job review naming JobSet's group early (its uid)": edited(
        body_of(OWNED_JOB), b'"uid": "', b'"uid": "jobset.x-k8s.io", "x": "', 1
    ),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_bodies_answer_alike(name: str) -> None:
    body = ODD[name]
    assert body != body_of(load_jobset("rfc-4.6-static")) or name == "no object"
    same_both_ways(body, cluster=CLUSTER)


@st.composite
def mutated_reviews(draw: st.DrawFn) -> bytes:
    """The HTTP fuzz corpus: a real review with one to three subtrees replaced or removed."""
    obj = load_jobset(draw(st.sampled_from(FIXTURES)))
    namespace = draw(st.sampled_from(["kubemaker", "default", "falcon-jobs", "elsewhere"]))
    body = review(obj, namespace=namespace, uid=str(uuid.uuid4()))
    return json.dumps(mutate_subtrees(draw, body, keep_root=False)).encode()


@FUZZ
@given(body=mutated_reviews())
def test_the_fuzz_corpus_answers_alike(body: bytes) -> None:
    request = same_both_ways(body)
    event("decoded" if isinstance(request, AdmissionRequest) else "refused")


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")], ids=["spaced", "compact"])
@pytest.mark.parametrize("name", FIXTURES)
def test_the_review_decoder_reads_the_objects_in_the_same_pass(name: str, separators: tuple[str, str]) -> None:
    """The object and the old object come out as plain JSON, from one decode of the body: the same
    values the general path reads, however the body is spaced."""
    data = review(load_jobset(name), namespace="kubemaker", operation="UPDATE", old=load_jobset(name))
    body = json.dumps(data, separators=separators).encode()
    fast = reviews._fast_review(body)
    assert fast is not None and fast == parse_review(body) == parse_review_general(body)
    assert fast.object == data["request"]["object"] and fast.old_object == data["request"]["oldObject"]


@pytest.mark.parametrize("name", ["no object", "object absent", "a Job a JobSet owns"])
def test_what_the_review_decoder_hands_on(name: str) -> None:
    """No object (absent or ``null``) is ``None`` on both paths; a Job is the Job."""
    fast, general = parse_review(ODD[name]), parse_review_general(ODD[name])
    if name == "a Job a JobSet owns":
        assert fast.judged_kind == general.judged_kind == JOB
        assert fast.object == general.object == OWNED_JOB
        assert read_workload(JOB, fast.object, POLICIES["static"]).controlled_by_jobset is False  # no controller
    else:
        assert fast.object is None and general.object is None
