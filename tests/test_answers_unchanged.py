"""Every answer stays byte-identical while the code is reorganised.

The app is driven in-process over ASGI (no sockets: the answer's bytes are all that is
compared) with a fixed corpus: each rule example on its own policy, each fixture on every
endpoint and tier as CREATE and UPDATE, with and without the fixture cluster, a
deterministic set of hostile edits of every fixture leaf, and malformed bodies. The
digest of each answer (status and body) is held in ``fixtures/answers.json``.

A change that means to alter answers regenerates it, and the diff of that file shows
how many answers moved: ``TPU_ADMISSION_WRITE_ANSWERS=1 pytest tests/test_answers_unchanged.py``.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

from cluster_fixtures import STATE
from rule_cases import CASES
from support import DEPLOYMENTS, FIXTURES, JOBS, JOBSETS, review

from webhook.cluster.state import ClusterState
from webhook.policy.config import Policy
from webhook.serving.app import ServerState, create_app

ANSWERS = FIXTURES / "answers.json"
PATHS = ("/mutate", "/validate", "/mutate/production", "/validate/production", "/mutate/dev", "/validate/dev")
HOSTILE: tuple[Any, ...] = (None, "", -1, 0, 2**64, 1.5, "4x4x4", "x" * 300, [], {}, True)
MALFORMED = (
    b"",
    b"{",
    b"[]",
    b"null",
    b'"review"',
    b"{}",
    b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
    b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "u"}}',
    b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}}',
    b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": []}',
    b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", "object": 5}}',
    b"\xef\xbb\xbf{}",
    b"\xff\xfe",
    b'{"a": 1e400}',
    b'{"a": NaN}',
)


def _bodies() -> Iterator[tuple[str, Policy, ClusterState | None, str, bytes]]:
    """``(case id, policy, cluster, path, body)`` for the whole corpus, in a fixed order."""
    for case in CASES:
        body = review(case.object(), uid=case.id, username=case.user.username, groups=list(case.user.groups))
        for path in ("/mutate", "/validate"):
            yield f"case {case.id} {path}", case.policy(), None, path, json.dumps(body).encode()
    policies = {"static": Policy(), "dynamic": Policy(mode="dynamic")}
    fixtures = [*sorted(JOBSETS.glob("*.yaml")), *sorted(JOBS.glob("*.yaml")), *sorted(DEPLOYMENTS.glob("*.yaml"))]
    import yaml

    for file in fixtures:
        obj = yaml.safe_load(file.read_text())
        for mode, policy in policies.items():
            for cluster_name, cluster in (("no cluster", None), ("fixture cluster", STATE)):
                for path in PATHS:
                    for operation in ("CREATE", "UPDATE"):
                        old = _unlabelled(obj) if operation == "UPDATE" else None
                        uid = f"{file.stem} {mode} {cluster_name} {path} {operation}"
                        body = review(obj, operation=operation, old=old, uid=uid)
                        yield f"fixture {uid}", policy, cluster, path, json.dumps(body).encode()
            for index, edited in enumerate(_hostile_edits(obj)):
                uid = f"{file.stem} {mode} edit {index}"
                for path in ("/mutate", "/validate/production"):
                    body = review(edited, uid=uid)
                    yield f"edit {uid} {path}", policy, None, path, json.dumps(body).encode()
    for index, raw in enumerate(MALFORMED):
        yield f"malformed {index}", policies["static"], None, "/mutate", raw


def _unlabelled(obj: dict[str, Any]) -> dict[str, Any]:
    old = copy.deepcopy(obj)
    old["metadata"].pop("labels", None)
    return old


def _hostile_edits(obj: Any) -> Iterator[Any]:
    """``obj`` with one leaf at a time replaced by each of ``HOSTILE`` (deterministic)."""
    for path in _leaves(obj, ()):
        for value in HOSTILE:
            edited = copy.deepcopy(obj)
            node = edited
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            yield edited


def _leaves(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    elif path:
        yield path


async def _call(app: Any, path: str, body: bytes) -> bytes:
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
        "http_version": "1.1",
        "scheme": "https",
    }
    sent = [False]
    out: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if sent[0]:
            await asyncio.sleep(3600)
        sent[0] = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out.append(b"%d " % message["status"])
        else:
            out.append(message.get("body", b""))

    await app(scope, receive, send)
    return b"".join(out)


def _digests() -> dict[str, str]:
    apps: dict[tuple[int, int], Any] = {}

    async def run() -> dict[str, str]:
        digests: dict[str, str] = {}
        for case_id, policy, cluster, path, body in _bodies():
            key = (id(policy), id(cluster))
            if key not in apps or apps[key][0] is not policy:
                apps.clear()
                apps[key] = (policy, create_app(ServerState(policy=policy, cluster=cluster)))
            answer = await _call(apps[key][1], path, body)
            assert case_id not in digests, f"two cases named {case_id!r}"
            digests[case_id] = hashlib.sha256(answer).hexdigest()[:16]
        return digests

    return asyncio.run(run())


def test_every_answer_is_unchanged() -> None:
    digests = _digests()
    if os.environ.get("TPU_ADMISSION_WRITE_ANSWERS"):
        ANSWERS.write_text(json.dumps(digests, indent=0, sort_keys=True) + "\n")
    expected = json.loads(ANSWERS.read_text())
    changed = sorted(case for case in expected if digests.get(case) != expected[case])
    assert set(digests) == set(expected), "the corpus changed: regenerate fixtures/answers.json"
    assert changed == [], f"{len(changed)} of {len(expected)} answers changed, first: {changed[:5]}"
    assert len(expected) > 5000
