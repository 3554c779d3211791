"""The advisor through the API server's aggregation layer, as users reach it: ``kubectl get
--raw`` and ``kubectl create --raw``, with RBAC deciding who reads which namespace. Alice
is bound to the shipped ``tpu-admission-advisor-user`` role in kubemaker only; the quota
picture needs ``tpu-admission-advisor-quota``, which she gets only where a test binds it."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from controlplane import REPO, ControlPlane
from support import run_cli

pytestmark = pytest.mark.e2e

API = "/apis/advisor.tpu-admission.antgroup.com/v1alpha1"
USER, NAMESPACE, OTHER_NAMESPACE = "alice", "kubemaker", "falcon-jobs"
JOBSET = REPO / "tests" / "fixtures" / "jobsets" / "rfc-4.6-static-single.yaml"
#: a Workload nobody admits (deactivated), so its explanation holds with or without Kueue's scheduler
WORKLOAD = "e2e-advisor-explained"


def raw(plane: ControlPlane, *args: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    return plane.kubectl(*args, *(("--as", user) if user else ()), check=False)


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tpu_admission(plane: ControlPlane, *args: str) -> Any:
    """The CLI's JSON answer against the live cluster (``--kubeconfig``)."""
    run = run_cli(*args, "--kubeconfig", str(plane.layout.kubeconfig))
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def alice(control_plane: ControlPlane) -> Iterator[str]:
    control_plane.kubectl(
        "create", "rolebinding", "alice-advisor", "-n", NAMESPACE,
        "--clusterrole=tpu-admission-advisor-user", f"--user={USER}",
    )  # fmt: skip
    yield USER
    control_plane.kubectl("delete", "rolebinding", "alice-advisor", "-n", NAMESPACE)


@pytest.fixture(scope="module")
def explained(control_plane: ControlPlane) -> Iterator[str]:
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {
            "queueName": "team-a-queue",
            "active": False,
            "podSets": [
                {
                    "name": "workers",
                    "count": 16,
                    "template": {
                        "spec": {
                            "nodeSelector": {
                                "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                                "cloud.google.com/gke-tpu-topology": "4x4x4",
                            },
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"google.com/tpu": "4"}}}
                            ],
                        }
                    },
                }
            ],
        },
    }
    control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(workload))
    yield WORKLOAD
    control_plane.kubectl("delete", "workload", WORKLOAD, "-n", NAMESPACE)


def test_kubectl_discovers_the_advisors_resources(control_plane: ControlPlane) -> None:
    resources = answer(raw(control_plane, "get", "--raw", API))["resources"]
    assert {(r["name"], r["namespaced"], tuple(r["verbs"])) for r in resources} == {
        ("explanations", True, ("get",)),
        ("simulations", True, ("create",)),
        ("quotas", False, ("list",)),
    }
    listed = control_plane.kubectl("api-resources", "--api-group=advisor.tpu-admission.antgroup.com", "-o", "name")
    assert sorted(listed.stdout.split()) == [
        "explanations.advisor.tpu-admission.antgroup.com",
        "quotas.advisor.tpu-admission.antgroup.com",
        "simulations.advisor.tpu-admission.antgroup.com",
    ]


def test_an_admin_reads_the_quota_picture_the_cli_prints(control_plane: ControlPlane) -> None:
    served = answer(raw(control_plane, "get", "--raw", f"{API}/quotas"))
    assert (served.pop("apiVersion"), served.pop("kind")) == ("advisor.tpu-admission.antgroup.com/v1alpha1", "Quota")
    assert served == tpu_admission(control_plane, "quota", "-o", "json")


def test_a_user_simulates_in_her_namespace_as_the_cli_does(control_plane: ControlPlane, alice: str) -> None:
    body = control_plane.layout.root / JOBSET.with_suffix(".json").name
    body.write_text(control_plane.kubectl("create", "--dry-run=client", "-o", "json", "-f", str(JOBSET)).stdout)
    path = f"{API}/namespaces/{NAMESPACE}/simulations"
    served = answer(raw(control_plane, "create", "--raw", path, "-f", str(body), user=alice))
    assert served["outcome"] == "admit", served
    cli = tpu_admission(control_plane, "simulate", "-f", str(body), "-o", "json")
    assert cli["errors"] == []
    # the same result but where the object came from: the request's body, or a file and its line
    (printed,) = cli["results"]
    assert (served.pop("source"), printed.pop("source"), printed.pop("line")) == ("request", str(body), 1)
    assert served == printed


def test_a_user_reads_her_namespaces_explanation_as_the_cli_gives_it(
    control_plane: ControlPlane, alice: str, explained: str
) -> None:
    path = f"{API}/namespaces/{NAMESPACE}/explanations/workload.{explained}"
    served = answer(raw(control_plane, "get", "--raw", path, user=alice))
    assert served == tpu_admission(control_plane, "explain", f"workload/{explained}", "-n", NAMESPACE, "-o", "json")
    assert [result["name"] for result in served["results"]] == [explained]


@pytest.mark.parametrize(
    ("verb", "path", "refusal"),
    [
        (
            "get",
            f"{API}/namespaces/{OTHER_NAMESPACE}/explanations/workload.{WORKLOAD}",
            'cannot get resource "explanations"',
        ),
        ("create", f"{API}/namespaces/{OTHER_NAMESPACE}/simulations", 'cannot create resource "simulations"'),
        ("get", f"{API}/quotas", 'cannot list resource "quotas"'),
    ],
    ids=["explanation-elsewhere", "simulation-elsewhere", "quota-picture"],
)
def test_rbac_keeps_a_user_to_her_namespace(
    control_plane: ControlPlane, alice: str, verb: str, path: str, refusal: str
) -> None:
    args = ("create", "--raw", path, "-f", "-") if verb == "create" else ("get", "--raw", path)
    done = control_plane.kubectl(*args, "--as", alice, stdin="{}", check=False)
    assert done.returncode == 1
    assert "Error from server (Forbidden)" in done.stderr and refusal in done.stderr, done.stderr


def test_the_quota_role_opens_the_quota_picture(control_plane: ControlPlane, alice: str) -> None:
    control_plane.kubectl(
        "create", "clusterrolebinding", "alice-quota", "--clusterrole=tpu-admission-advisor-quota", f"--user={alice}"
    )
    try:
        assert answer(raw(control_plane, "get", "--raw", f"{API}/quotas", user=alice))["kind"] == "Quota"
    finally:
        control_plane.kubectl("delete", "clusterrolebinding", "alice-quota")


def test_the_advisor_answers_no_caller_the_front_proxy_did_not_name(control_plane: ControlPlane) -> None:
    """Straight to its port, past the API server: no front-proxy certificate, no answer."""
    state = json.loads(control_plane.layout.state.read_text())
    context = ssl.create_default_context(cafile=str(control_plane.layout.pki / "advisor" / "ca.crt"))
    request = urllib.request.Request(f"{state['advisor']}{API}/quotas", headers={"X-Remote-User": "system:admin"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10, context=context)
    assert refused.value.code == 401
