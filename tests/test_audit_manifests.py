"""manifests/overlays/audit-cronjob: it renders, validates against Kubernetes' schemas, and runs
``tpu-admission audit --apply`` with the webhook's image, policy and least-privilege RBAC.

Rendered here by a small kustomize of the features the overlay uses (``resources`` and
``namespace``; anything else raises), held to the real ``kubectl kustomize`` where
``kubectl`` is present, then checked like the webhook's own manifests
(tests/test_manifests.py): ``kubernetes-validate``, strict, for the oldest and newest
supported Kubernetes.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from webhook.cli.main import build_parser
from webhook.cluster import kinds as k
from webhook.cluster.listing import JUDGED_KINDS
from webhook.cluster.reports import POLICY_REPORTS

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
OVERLAY = MANIFESTS / "overlays" / "audit-cronjob"
NAMESPACE = "tpu-admission"
K8S_VERSIONS = ("1.30", kubernetes_validate.latest_version())
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace"}


def render(directory: Path) -> list[dict[str, Any]]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - {"apiVersion", "kind", "resources", "namespace"}
    if unknown:
        raise NotImplementedError(f"kustomization keys {sorted(unknown)}")
    objects: list[dict[str, Any]] = []
    for entry in spec["resources"]:
        path = (directory / entry).resolve()
        objects.extend(render(path) if path.is_dir() else [d for d in yaml.safe_load_all(path.read_text()) if d])
    for obj in objects:
        if spec.get("namespace") and obj["kind"] not in CLUSTER_SCOPED:
            obj["metadata"]["namespace"] = spec["namespace"]
    return objects


OBJECTS = render(OVERLAY)


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


CRONJOB = one(OBJECTS, "CronJob")
POD = CRONJOB["spec"]["jobTemplate"]["spec"]["template"]
CONTAINER = POD["spec"]["containers"][0]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on this machine")
def test_renders_with_kubectl_kustomize() -> None:
    proc = subprocess.run(
        ["kubectl", "kustomize", str(OVERLAY)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr

    def keyed(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
        return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}

    assert keyed([d for d in yaml.safe_load_all(proc.stdout) if d]) == keyed(OBJECTS)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_validates_against_kubernetes_schemas(version: str) -> None:
    for obj in OBJECTS:
        kubernetes_validate.validate(obj, version, strict=True)
    assert sorted(o["kind"] for o in OBJECTS) == ["ClusterRole", "ClusterRoleBinding", "CronJob", "ServiceAccount"]
    for obj in OBJECTS:
        assert ("namespace" in obj["metadata"]) == (obj["kind"] not in CLUSTER_SCOPED)
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == NAMESPACE


def audit_command() -> list[str]:
    """The tpu-admission command line of the container's shell script."""
    assert CONTAINER["command"] == ["/bin/sh", "-c"]
    [script] = CONTAINER["args"]
    words = shlex.split(script.split(";", 1)[0])
    assert words[:2] == ["tpu-admission", "audit"]
    return words[1:]


def test_runs_audit_with_the_webhooks_image_and_policy() -> None:
    args = build_parser().parse_args(audit_command())
    assert args.command == "audit" and args.output == "policyreport" and args.apply
    assert args.kubeconfig is None and args.cluster_state is None  # in the pod: the in-cluster config
    assert args.mode is None and not args.namespace  # the policy's mode, every namespace
    base = yaml.safe_load((MANIFESTS / "base" / "deployment.yaml").read_text())
    webhook = base["spec"]["template"]["spec"]
    assert CONTAINER["image"] == webhook["containers"][0]["image"]
    # the server's policy file: the same ConfigMap, at the path --config names
    mounts = {m["mountPath"]: m for m in CONTAINER["volumeMounts"]}
    mount = mounts[str(Path(args.config).parent)]
    assert mount["readOnly"] is True
    volume = next(v for v in POD["spec"]["volumes"] if v["name"] == mount["name"])
    server_volume = next(v for v in webhook["volumes"] if "configMap" in v)
    assert volume["configMap"]["name"] == server_volume["configMap"]["name"] == "tpu-admission-policy"
    server_args = build_parser().parse_args(["serve", *webhook["containers"][0]["args"]])
    assert Path(server_args.config).name == Path(args.config).name


@pytest.mark.parametrize(("audit_exit", "job_exit"), [(0, 0), (1, 0), (2, 2)])
def test_only_a_failed_audit_fails_the_job(tmp_path: Path, audit_exit: int, job_exit: int) -> None:
    """Exit 1 (something would be denied) is the report's news; 2 (unreadable, unwritten) fails the Job."""
    fake = tmp_path / "tpu-admission"
    fake.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/argv"\nexit {audit_exit}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    proc = subprocess.run([*CONTAINER["command"], *CONTAINER["args"]], env=env, capture_output=True, timeout=30)
    assert proc.returncode == job_exit, proc.stderr
    assert (tmp_path / "argv").read_text().split() == audit_command()


def test_rbac_lists_what_audit_reads_and_writes_only_policyreports() -> None:
    role = one(OBJECTS, "ClusterRole")
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert "*" not in (group, resource) and "*" not in rule["verbs"]
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    read = {(kind.group, kind.plural): {"list"} for kind in (*JUDGED_KINDS, *k.KINDS)}
    assert granted == {**read, (POLICY_REPORTS.group, POLICY_REPORTS.plural): {"list", "create", "patch", "delete"}}
    binding = one(OBJECTS, "ClusterRoleBinding")
    account = one(OBJECTS, "ServiceAccount")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "tpu-admission-audit",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    assert POD["spec"]["serviceAccountName"] == account["metadata"]["name"]


def test_one_run_at_a_time_bounded_and_cleaned_up() -> None:
    spec = CRONJOB["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert len(spec["schedule"].split()) == 5
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] > 0 and job["ttlSecondsAfterFinished"] > 0
    assert POD["spec"]["restartPolicy"] == "Never"


def test_the_pod_is_never_one_of_the_webhooks() -> None:
    """The webhook's Service, PDB and NetworkPolicy select its pods by label; an audit pod must not match."""
    labels = POD["metadata"]["labels"]
    for name in ("service.yaml", "poddisruptionbudget.yaml", "networkpolicy.yaml"):
        obj = yaml.safe_load((MANIFESTS / "base" / name).read_text())
        selector = obj["spec"].get("selector") or obj["spec"].get("podSelector")
        selector = selector.get("matchLabels", selector)
        assert not selector.items() <= labels.items(), name


def test_container_is_locked_down() -> None:
    """The namespace enforces the restricted Pod Security Standard (manifests/base/namespace.yaml)."""
    pod = POD["spec"]
    context = CONTAINER["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert CONTAINER["resources"]["requests"]["memory"] and CONTAINER["resources"]["limits"]["memory"]
