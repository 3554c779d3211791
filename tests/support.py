"""Test support: JobSet, Job and Deployment builders from RFC-0033's examples, and a real TLS server runner."""

from __future__ import annotations

import asyncio
import copy
import io
import json
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from crd_modules import CrdsUnavailable, crd_path

from webhook.cli.main import main
from webhook.objects.kinds import JOBSET, JUDGED, kind_of_document
from webhook.policy.config import Policy
from webhook.rules.catalog import RULES
from webhook.serving.app import ServerState
from webhook.serving.runner import TlsSettings, bound_port, build_server

#: the owner reference the JobSet controller puts on the Jobs it creates
JOBSET_OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "llm-pretrain-a3f8",
    "uid": "6f1e0c2a-0000-4000-8000-000000000001",
    "controller": True,
    "blockOwnerDeletion": True,
}
#: the cluster-aware rules (they read cluster state), from the catalog
CLUSTER_RULES: frozenset[str] = frozenset(rule.id for rule in RULES if rule.requires)
#: those that apply to JobSets
JOBSET_CLUSTER_RULES: frozenset[str] = frozenset(rule.id for rule in RULES if rule.requires and JOBSET in rule.kinds)

FIXTURES = Path(__file__).parent / "fixtures"
JOBSETS = FIXTURES / "jobsets"
#: RFC-0033 4.3.1's other two kinds: batch/v1 Jobs and apps/v1 Deployments
JOBS = FIXTURES / "jobs"
DEPLOYMENTS = FIXTURES / "deployments"
#: the API server's own request shape for a JobSet CREATE (admission.k8s.io/v1)
EXAMPLE_REVIEW = FIXTURES / "admissionreview-create-jobset.json"


def upstream_crd(file_name: str) -> dict[str, Any]:
    """One upstream CRD (``jobset.x-k8s.io_jobsets.yaml`` ...), or skip the test when none can be
    had (``go`` missing); under ``CI=true`` or ``$TPU_ADMISSION_REQUIRE_CRDS`` it fails instead."""
    try:
        path = crd_path(file_name)
        if not path.is_file():
            raise CrdsUnavailable(f"upstream CRD {file_name} not found at {path}")
    except CrdsUnavailable as exc:
        if os.environ.get("TPU_ADMISSION_REQUIRE_CRDS") or os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def load_jobset(name: str) -> dict[str, Any]:
    """A fresh copy of one of the fixture JobSets (``rfc-4.3.1-dynamic`` ...)."""
    return copy.deepcopy(_cached(JOBSETS, name))


def load_job(name: str) -> dict[str, Any]:
    """A fresh copy of one of the fixture batch/v1 Jobs (``rfc-job-static`` ...)."""
    return copy.deepcopy(_cached(JOBS, name))


def load_deployment(name: str) -> dict[str, Any]:
    """A fresh copy of one of the fixture apps/v1 Deployments (``service-deployment`` ...)."""
    return copy.deepcopy(_cached(DEPLOYMENTS, name))


_CACHE: dict[tuple[Path, str], dict[str, Any]] = {}


def _cached(directory: Path, name: str) -> dict[str, Any]:
    if (directory, name) not in _CACHE:
        _CACHE[directory, name] = yaml.safe_load((directory / f"{name}.yaml").read_text())
    return _CACHE[directory, name]


def _walk(obj: Any, path: str) -> tuple[Any, str | int]:
    """Split ``a.b[0].c`` or ``a.b.0.c`` (keys with dots go in ``["..."]``) into parent and last key."""
    parts: list[str | int] = []
    i = 0
    token = ""
    while i < len(path):
        ch = path[i]
        if ch == ".":
            if token:
                parts.append(token)
            token = ""
        elif ch == "[":
            if token:
                parts.append(token)
            token = ""
            end = path.index("]", i)
            inner = path[i + 1 : end]
            parts.append(inner[1:-1] if inner.startswith('"') else int(inner))
            i = end
        else:
            token += ch
        i += 1
    if token:
        parts.append(token)
    parts = [int(p) if isinstance(p, str) and p.isdigit() else p for p in parts]
    node = obj
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    return node, parts[-1]


def set_path(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    parent, last = _walk(obj, path)
    parent[last] = value
    return obj


def delete_path(obj: dict[str, Any], path: str) -> dict[str, Any]:
    parent, last = _walk(obj, path)
    if isinstance(parent, dict):
        parent.pop(last, None)
    else:
        del parent[last]
    return obj


POD = "spec.replicatedJobs[0].template.spec.template"


def review(
    obj: Any,
    *,
    operation: str = "CREATE",
    namespace: str | None = None,
    old: Any = None,
    username: str = "system:serviceaccount:aistudio:submitter",
    groups: list[str] | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview shaped like the API server's (``EXAMPLE_REVIEW``) around ``obj``."""
    base = json.loads(EXAMPLE_REVIEW.read_text())
    request = base["request"]
    request["uid"] = uid or str(uuid.uuid4())
    request["operation"] = operation
    judged = kind_of_document(obj)
    if judged is not None and judged != JOBSET:  # the example is a JobSet's review already
        target = JUDGED[judged]
        request["kind"] = request["requestKind"] = {
            "group": target.group,
            "version": target.version,
            "kind": target.kind,
        }
        request["resource"] = request["requestResource"] = {
            "group": target.group,
            "version": target.version,
            "resource": target.resource,
        }
    request["object"] = obj
    request["oldObject"] = old
    ns = namespace
    if ns is None and isinstance(obj, dict):
        ns = (obj.get("metadata") or {}).get("namespace")
    request["namespace"] = ns or "default"
    request["name"] = ((obj or {}).get("metadata") or {}).get("name", "") if isinstance(obj, dict) else ""
    request["userInfo"]["username"] = username
    request["userInfo"]["groups"] = groups if groups is not None else ["system:authenticated"]
    if operation == "UPDATE":
        request["options"] = {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
    return base


class RunningServer:
    """A real uvicorn server over TLS in a background thread (port chosen by the OS)."""

    def __init__(self, state: ServerState, tls: TlsSettings, **options: Any) -> None:
        # Session-scoped clients keep idle TLS connections open; uvicorn would wait its
        # whole graceful timeout for them at teardown.
        options.setdefault("graceful_seconds", 1)
        self.state = state
        self.server, self.reloader = build_server(state, "127.0.0.1", 0, tls, **options)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        from webhook.serving.runner import run_server

        self.loop.run_until_complete(run_server(self.server, self.reloader))

    def start(self) -> RunningServer:
        self.thread.start()
        for _ in range(500):
            if self.server.started:
                break
            threading.Event().wait(0.01)
        else:  # pragma: no cover
            raise RuntimeError("server did not start")
        self.port = bound_port(self.server)
        return self

    @property
    def url(self) -> str:
        return f"https://localhost:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextmanager
def running_server(policy: Policy, tls: TlsSettings, cluster: Any = None, **options: Any) -> Iterator[RunningServer]:
    server = RunningServer(ServerState(policy=policy, cluster=cluster), tls, **options).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: str | None = None) -> CliRun:
    """``tpu-admission ARGS`` in this process: ``main(argv)`` with its streams captured.

    A subprocess per call cost a Python start-up and the imports each time (most of the
    CLI tests' time); the console script itself keeps its own subprocess tests.
    """
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse: --help, --version, bad usage
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved
    return CliRun(code, out.getvalue(), err.getvalue())


def write_yaml(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(obj))
    return path


def with_slice_topology(obj: dict[str, Any], value: str = "4x4x4") -> dict[str, Any]:
    """A static job carrying the dynamic annotation: ``slice-topology-ignored`` warns."""
    set_path(obj, f'{POD}.metadata.annotations["cloud.google.com/gke-tpu-slice-topology"]', value)
    return obj


def mixed_inputs(directory: Path) -> Path:
    """A denied job, an admitted one, a YAML syntax error (line 3) and a non-UTF-8 file."""
    write_yaml(directory / "a-denied.yaml", load_jobset("falcon-before-migration"))
    (directory / "b-broken.yaml").write_text("apiVersion: v1\nkind: [unclosed\n")
    admitted = load_jobset("falcon-migration")
    admitted["metadata"]["name"] = "falcon-sft-v2"
    write_yaml(directory / "c-admitted.yaml", admitted)
    (directory / "d-latin1.yaml").write_bytes(b"name: caf\xe9\n")
    return directory


def assert_example_findings(
    rule: str, fires: bool, found: list[Any], path: str | None, count: int | None, message: str | None
) -> None:
    """What a rule example promises of its rule's findings: none when it does not fire; else
    the first at ``path`` saying ``message``, ``count`` of them, each with a fix, each
    "<what is wrong>; <how to fix>" with the one "; " between the two."""
    if not fires:
        assert found == [], [f.line() for f in found]
        return
    assert found, f"{rule} did not fire"
    first = found[0]
    if path is not None:
        assert str(first.path) == path, first.line()
    if count is not None:
        assert len(found) == count, [f.line() for f in found]
    if message is not None:
        assert message in first.message, first.message
    assert first.fix, "every finding says how to fix it"
    for finding in found:
        assert "; " not in finding.problem and "; " not in finding.fix, finding.line()
