"""The fast paths against the general ones: identical decisions and response bytes.

The server decodes a review's envelope with msgspec into typed structs
(``webhook.wire.reviews``) and hands the object on as its JSON text; ``read_workload``
reads a well-formed JobSet's text straight into structs (``webhook.objects.fastjobset``);
anything unusual goes through ``json.loads`` and ``parse_jobset``. Here every body is
answered both ways, from the same bytes, and the two answers must be byte for byte the
same: the review (or the same 4xx reason), every field of the decision, the encoded
AdmissionReview response and the decision log's object name. The corpus is the fixture
JobSets, well-formed variations of them, the HTTP fuzz corpus (subtrees of the review
replaced with arbitrary JSON) and hand-written bodies msgspec reads differently.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import msgspec
import pytest
from builders import jobset
from fuzzing import FIXTURES, mutate_subtrees
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support import FIXTURES as FIXTURE_DIR
from support import load_jobset, review

from webhook.cluster.statefiles import state_from_objects
from webhook.engine.decision import Stage, decide
from webhook.objects.fastjobset import _ReplicatedJob, _Text, read_typed_jobset
from webhook.objects.kinds import JOB, JOBSET
from webhook.objects.readers import read_workload
from webhook.objects.sources import load_documents
from webhook.objects.workload import PodSet, parse_jobset
from webhook.policy.config import Policy
from webhook.serving.app import admission_facts
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


def took_the_fast_path(request: AdmissionRequest | tuple[int, str]) -> bool:
    """Whether the typed reader read the review's JobSet (the engine reads it the same way)."""
    if not isinstance(request, AdmissionRequest) or not isinstance(request.object, bytes):
        return False
    return read_typed_jobset(request.object, POLICIES["static"], request.namespace) is not None


def body_of(obj: Any, namespace: str = "kubemaker", **kwargs: Any) -> bytes:
    return json.dumps(review(obj, namespace=namespace, uid=str(uuid.uuid4()), **kwargs)).encode()


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("namespace", ["kubemaker", "default", "falcon-jobs", "elsewhere"])
def test_fixtures_take_the_fast_path_and_answer_alike(name: str, namespace: str) -> None:
    request = same_both_ways(body_of(load_jobset(name), namespace), cluster=CLUSTER)
    assert took_the_fast_path(request), "a well-formed JobSet must not need the general path"


def test_the_fast_workload_is_the_parsed_one() -> None:
    """Field by field, for every fixture in both modes (not only the decisions they lead to)."""
    for name in FIXTURES:
        obj = load_jobset(name)
        raw = json.dumps(obj).encode()
        for policy in POLICIES.values():
            fast = read_typed_jobset(raw, policy, "ns")
            general = parse_jobset(obj, policy, "ns")
            assert fast is not None and not general.malformed
            assert read_workload(JOBSET, raw, policy, "ns") is not fast  # the one reader, by way of the typed one
            fields = ("namespace", "name", "labels", "annotations", "generated_suffix", "has_labels_map")
            for field in (*fields, "controlled_by_jobset"):
                assert getattr(fast, field) == getattr(general, field), field
            assert (fast.has_metadata, fast.suspend, fast.spec) == (general.has_metadata, general.suspend, general.spec)
            assert as_read(fast.podsets) == as_read(general.podsets)
            assert as_read(fast.tpu_podsets) == as_read(general.tpu_podsets)
            assert [p.pod_spec for p in fast.podsets] == [p.pod_spec for p in general.podsets]
            # the tolerations and affinity as text: the bytes read, or the parsed spec written out
            assert [placement_values(p) for p in fast.podsets] == [placement_values(p) for p in general.podsets]
            assert fast.kind == general.kind and fast.replicas == general.replicas


def test_both_readers_keep_the_same_tolerations_and_affinity() -> None:
    """The text the typed reader keeps is the part of the pod spec the general one parses:
    present, absent, null, and a key written twice (the last one counts, as Kubernetes reads it)."""
    toleration = {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
    built = jobset().tolerations([toleration]).required_affinity("pool", "In", ["a", "b"]).obj()
    cases = [json.dumps(built).encode(), json.dumps(load_jobset("rfc-4.6-static")).encode()]
    nulls = jobset().obj()
    nulls["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].update(tolerations=None, affinity=None)
    cases.append(json.dumps(nulls).encode())
    text = json.dumps(built)
    cases.append(text.replace('"tolerations": [', '"tolerations": [], "tolerations": [', 1).encode())
    for raw in cases:
        fast, general = (
            read_typed_jobset(raw, POLICIES["static"], "ns"),
            parse_jobset(json.loads(raw), POLICIES["static"], "ns"),
        )
        assert fast is not None
        assert [placement_values(p) for p in fast.podsets] == [placement_values(p) for p in general.podsets]
        spec = json.loads(raw)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        expected = [spec.get(key, "absent") for key in ("tolerations", "affinity")]
        assert placement_values(fast.podsets[0]) == expected


def as_read(podsets: list[PodSet]) -> list[PodSet]:
    """The podSets without where each reads its pod spec from (the text, or the parsed spec kept)."""
    return [msgspec.structs.replace(podset, raw_pod_spec=None, source=None, placement=None) for podset in podsets]


def placement_values(podset: PodSet) -> list[Any]:
    """``placement_text()`` decoded (``"absent"`` for a field the pod spec does not have)."""
    text = podset.placement_text()
    assert text is not None
    return [json.loads(part) if part else "absent" for part in text]


def podsets_text(obj: Any) -> bytes:
    """The typed reader's text of ``obj``'s podSets (``Source.podsets_text``); it must take ``obj``."""
    workload = read_typed_jobset(json.dumps(obj).encode(), POLICIES["static"], "ns")
    assert workload is not None and workload.source is not None
    return workload.source.podsets_text()


def test_the_podsets_text_reads_back_as_the_structs_it_was_written_from() -> None:
    """Why equal texts mean equal podSets: the text is the structs' own, and reads back as them."""
    toleration = {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
    built = [
        jobset().tolerations([toleration]).required_affinity("pool", "In", ["a"]).obj(),
        jobset().init_containers([{"name": "s", "restartPolicy": "Always"}]).request("cpu", 3).obj(),
    ]
    for obj in [*(load_jobset(name) for name in FIXTURES), *built]:
        for policy in POLICIES.values():
            workload = read_typed_jobset(json.dumps(obj).encode(), policy, "ns")
            assert workload is not None and isinstance(workload.source, _Text)
            text = workload.source.podsets_text()
            assert msgspec.json.decode(text, type=list[_ReplicatedJob]) == workload.source.jobs


def with_pod_spec(change: Any, build: Any = None) -> dict[str, Any]:
    """``build`` (the builder's JobSet by default) with its first pod spec changed by ``change``."""
    obj: dict[str, Any] = (build or jobset()).obj()
    change(obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"])
    return obj


def test_jobs_of_one_template_share_the_podsets_text() -> None:
    """What no rule reads (the job's name and labels, images, commands, env) is not in it."""
    run = {"image": "elsewhere/jax:2", "command": ["python", "-m", "other"], "env": [{"name": "RUN", "value": "7"}]}
    other = with_pod_spec(
        lambda spec: spec["containers"][0].update(run), jobset().name("another-job").queue("other-queue")
    )
    assert podsets_text(other) == podsets_text(jobset().obj())


@pytest.mark.parametrize(
    "changed",
    [
        jobset().request("google.com/tpu", 4).request("google.com/tpu", 4, kind="limits").obj(),  # "4" and 4
        jobset().replicas(7).obj(),
        jobset().parallelism(64).obj(),
        jobset().node_selector("pool", "blue").obj(),
        jobset().tolerations([]).obj(),  # written empty, not absent
        with_pod_spec(lambda spec: spec.update(affinity={})),
        with_pod_spec(lambda spec: spec.update(initContainers=[])),
        with_pod_spec(lambda spec: spec["containers"][0].update(restartPolicy="Always")),
        with_pod_spec(lambda spec: spec["containers"][0].update(name="other")),
    ],
    ids=[
        "a number",
        "replicas",
        "parallelism",
        "selector",
        "no tolerations",
        "empty affinity",
        "no init",
        "restart",
        "name",
    ],
)
def test_any_change_to_what_the_podsets_are_built_from_changes_the_podsets_text(changed: dict[str, Any]) -> None:
    assert podsets_text(changed) != podsets_text(jobset().obj())


@pytest.mark.parametrize("value", [4.0, 4.5, True, None, {"n": 4}])
def test_a_quantity_that_is_not_a_string_or_an_integer_is_the_general_readers(value: Any) -> None:
    """``4.0`` and ``4`` read alike as JSON numbers but not as text: no float reaches the structs."""
    obj = with_pod_spec(lambda spec: spec["containers"][0]["resources"]["requests"].update({"cpu": value}))
    raw = json.dumps(obj).encode()
    assert read_typed_jobset(raw, POLICIES["static"], "ns") is None
    assert read_workload(JOBSET, raw, POLICIES["static"], "ns").source is None  # the general reader's


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
    event("fast path" if took_the_fast_path(same_both_ways(body)) else "general path")


TEXT = st.sampled_from(
    ["4x4x4", "2x2x1", "4x4x8", "tpu7x", "4", "8", "", "high", "dev-queue", "team-a-queue", "x" * 70]
)
POD_TEMPLATE = "spec.replicatedJobs[0].template.spec.template"
VALID_EDITS = {
    "metadata.name": TEXT,
    'metadata.labels["kueue.x-k8s.io/queue-name"]': TEXT,
    'metadata.labels["kueue.x-k8s.io/priority-class"]': TEXT,
    "spec.replicatedJobs[0].replicas": st.integers(-2, 300),
    "spec.replicatedJobs[0].name": TEXT,
    "spec.replicatedJobs[0].template.spec.parallelism": st.integers(-1, 20) | st.none(),
    "spec.replicatedJobs[0].template.spec.completions": st.integers(-1, 20) | st.none(),
    f'{POD_TEMPLATE}.metadata.annotations["cloud.google.com/gke-tpu-slice-topology"]': TEXT,
    'spec.replicatedJobs[0].template.spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]': TEXT,
    "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits": st.dictionaries(
        st.sampled_from(["google.com/tpu", "cpu", "memory"]), TEXT | st.integers(-1, 8), max_size=3
    ),
    "spec.suspend": st.booleans() | st.none(),
    "spec.replicatedJobs[0].template.spec.template.spec.priorityClassName": TEXT | st.none(),
}


@st.composite
def well_formed_variations(draw: st.DrawFn) -> bytes:
    """Fixture JobSets with values changed but shapes kept: mostly the fast path's business."""
    from support import set_path

    obj = load_jobset(draw(st.sampled_from(FIXTURES)))
    for path in draw(st.lists(st.sampled_from(sorted(VALID_EDITS)), min_size=1, max_size=4, unique=True)):
        try:
            set_path(obj, path, draw(VALID_EDITS[path]))
        except (IndexError, KeyError, TypeError):
            continue  # the fixture has no such list item
    return body_of(obj, draw(st.sampled_from(["kubemaker", "default", "falcon-jobs"])))


@FUZZ
@given(body=well_formed_variations())
def test_well_formed_variations_answer_alike(body: bytes) -> None:
    event("fast path" if took_the_fast_path(same_both_ways(body, cluster=CLUSTER)) else "general path")


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")], ids=["spaced", "compact"])
@pytest.mark.parametrize("name", FIXTURES)
def test_the_review_decoder_hands_the_object_on_as_its_text(name: str, separators: tuple[str, str]) -> None:
    """Undecoded, byte for byte as the review holds it, and the old object the same way."""
    data = review(load_jobset(name), namespace="kubemaker", operation="UPDATE", old=load_jobset(name))
    body = json.dumps(data, separators=separators).encode()
    request = parse_review(body)
    assert request.object == json.dumps(data["request"]["object"], separators=separators).encode()
    assert request.old_object == json.dumps(data["request"]["oldObject"], separators=separators).encode()
    assert took_the_fast_path(request)
    general = parse_review_general(body)
    assert general.object == data["request"]["object"] and general.old_object == data["request"]["oldObject"]


@pytest.mark.parametrize("name", ["no object", "object absent", "a Job a JobSet owns"])
def test_what_the_review_decoder_hands_on(name: str) -> None:
    """No object (absent or ``null``) is ``None`` on both paths; a Job is a Job's text."""
    fast, general = parse_review(ODD[name]), parse_review_general(ODD[name])
    if name == "a Job a JobSet owns":
        assert fast.judged_kind == general.judged_kind == JOB
        assert isinstance(fast.object, bytes) and json.loads(fast.object) == general.object == OWNED_JOB
        assert read_workload(JOB, fast.object, POLICIES["static"]).controlled_by_jobset is False  # no controller
    else:
        assert fast.object is None and general.object is None


def test_an_object_nested_too_deeply_for_the_reader_is_a_finding() -> None:
    """The review decoder checks the nesting a few frames up the stack from the reader: an
    object just under its limit there may be over it here, and is a finding, not a 500."""
    for kind in (JOBSET, JOB):
        workload = read_workload(kind, b"[" * 5000 + b"]" * 5000, POLICIES["static"], "ns")
        assert [f.problem for f in workload.malformed] == ["is nested too deeply to be read"]
        workload = read_workload(kind, b'{"x": "\xff"}', POLICIES["static"], "ns")
        assert [f.rule for f in workload.malformed] == ["jobset-malformed"]
