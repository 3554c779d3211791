"""A real control plane on loopback for the end-to-end tests: etcd, kube-apiserver, the JobSet
and Kueue CRDs, Kueue's manager with RFC-0033's Configuration, and our webhook and our advisor
registered through the shipped manifests (an overlay of ``manifests/base`` that ``kubectl
kustomize`` renders).

    python -m tests.e2e.controlplane up --dir D     # build (Go's cache keeps it), start, wait
    python -m tests.e2e.controlplane down --dir D   # stop every process ``up`` started, by PID

The programs are built from their released Go modules, pinned in ``tests/e2e/tools/go.mod``
and, for Kueue's manager (whose Kubernetes libraries are of another patch release),
``tests/e2e/kueue/go.mod`` (the envtest binaries come from a download site these machines
cannot reach; the module proxy serves the same programs as source). ``up`` writes
``D/kubeconfig`` (a cluster admin),
``D/bin/kubectl`` (kubectl of the API server's release), the logs in ``D/logs`` and the PIDs
in ``D/state.json``, which ``down`` reads.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.crd_modules import CrdsUnavailable, crd_files
from webhook.serving import certs

REPO = Path(__file__).resolve().parents[2]
TOOLS = Path(__file__).resolve().parent / "tools"
KUEUE = Path(__file__).resolve().parent / "kueue"
MANIFESTS = REPO / "manifests" / "base"
#: the shipped webhook configurations, rendered to call the webhook on loopback
WEBHOOK_CONFIGURATIONS = (
    "mutatingwebhookconfiguration.yaml",
    "validatingwebhookconfiguration.yaml",
    "kueue-validatingwebhookconfiguration.yaml",
)
#: the advisor's Service (namespace, name), as the shipped APIService names it
ADVISOR_SERVICE = ("tpu-admission", "tpu-admission-advisor")
#: the advisor's APIService, as the shipped manifests name it
ADVISOR_API_SERVICE = "v1alpha1.advisor.tpu-admission.antgroup.com"
#: what the control plane applies of the overlay's render: the webhook configurations, the
#: advisor's APIService and Service, the roles an admin binds and the namespace; not the
#: Deployments and what serves them (no kubelet runs here: the processes run on loopback)
REGISTERED = (
    ("Namespace", None),
    ("MutatingWebhookConfiguration", None),
    ("ValidatingWebhookConfiguration", None),
    ("APIService", None),
    ("Service", ADVISOR_SERVICE[1]),
    ("ClusterRole", "tpu-admission-advisor-user"),
    ("ClusterRole", "tpu-admission-advisor-quota"),
)
#: the RFC's cluster as the unit tests' fake API server serves it: the tiers' namespaces,
#: tpu7x nodes, and Kueue's queues (applied in this order: the LocalQueues need their namespaces)
CLUSTER_FIXTURES = REPO / "tests" / "fixtures" / "cluster"
NAMESPACES, NODES, QUEUES = (CLUSTER_FIXTURES / f"{name}.yaml" for name in ("namespaces", "nodes", "queues"))
#: RFC-0033 4.6's static cluster, whose Topology the queues' flavors name
RFC_STATIC = REPO / "tests" / "fixtures" / "kueue" / "rfc-4.6-static.yaml"
TPU = "google.com/tpu"
POOL_LABEL = "cloud.google.com/gke-nodepool"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
#: Go builds on at most this many cores: the machine is shared
GO_PARALLELISM = "2"
#: the programs: the module folder that pins each one, and the package it is built from
PROGRAMS = {
    "etcd": (TOOLS, "go.etcd.io/etcd/server/v3"),
    "kube-apiserver": (TOOLS, "k8s.io/kubernetes/cmd/kube-apiserver"),
    "kubectl": (TOOLS, "k8s.io/kubernetes/cmd/kubectl"),
    "kueue": (KUEUE, "sigs.k8s.io/kueue/cmd/kueue"),
}
KUEUE_MODULE = "sigs.k8s.io/kueue"
#: RFC-0033 4.1's Configuration, in the ConfigMap Kueue reads it from
KUEUE_CONFIGURATION = REPO / "tests" / "fixtures" / "kueue" / "rfc-4.1-configuration.yaml"
KUEUE_CONFIGURATION_KEY = "controller_manager_config.yaml"
KUEUE_NAMESPACE = "kueue-system"
KUEUE_USER = f"system:serviceaccount:{KUEUE_NAMESPACE}:kueue-controller-manager"
#: the webhook configurations Kueue's module ships (as controller-gen writes them, before kustomize)
KUEUE_WEBHOOKS = Path("config") / "components" / "webhook" / "manifests.yaml"
#: Kueue's own objects: its webhooks for them are not scoped to namespaces
KUEUE_API_PATH = "-kueue-x-k8s-io-"
SERVICE_CIDR = "10.0.0.0/24"
STATE_FILE = "state.json"
READY_TIMEOUT = 180.0


class ControlPlaneError(Exception):
    """A step of ``up`` failed; the message names it and the log to read."""


@dataclass(frozen=True)
class Advisor:
    """The advisor's process and where it listens."""

    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


def needs() -> str | None:
    """Why the control plane cannot be built here, or ``None`` when it can."""
    if shutil.which("go") is None:
        return (
            "the end-to-end tests need Go (>= 1.26, with the Go module proxy) on PATH to build etcd,"
            " kube-apiserver and Kueue"
        )
    if shutil.which("unshare") is None:
        return "the end-to-end tests need unshare (util-linux) to give Kueue's manager its metrics certificate"
    try:
        crd_files()
    except CrdsUnavailable as exc:
        return f"the end-to-end tests need the upstream JobSet and Kueue CRDs: {exc}"
    return None


def binary_cache(module: Path = TOOLS) -> Path:
    """Where the programs of one module folder are kept, one folder per pinned go.mod/go.sum.

    Outside the clone, so that a fresh clone (CI's) links nothing again once Go's build
    cache and this folder are warm."""
    digest = hashlib.sha256((module / "go.mod").read_bytes() + (module / "go.sum").read_bytes()).hexdigest()[:16]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "tpu-admission" / "e2e" / digest


def required_version(module: Path, path: str) -> str:
    """The version of ``path`` that ``module``'s go.mod requires."""
    for line in (module / "go.mod").read_text().splitlines():
        fields = line.split()
        if fields[:1] == [path] and len(fields) >= 2 and fields[1].startswith("v"):
            return fields[1]
    raise ControlPlaneError(f"no {path} requirement in {module / 'go.mod'}")


def kubernetes_version() -> str:
    """The release of k8s.io/kubernetes that go.mod pins (``v1.36.3``)."""
    return required_version(TOOLS, "k8s.io/kubernetes")


def kueue_version() -> str:
    """The release of Kueue whose manager runs (``v0.19.2``)."""
    return required_version(KUEUE, KUEUE_MODULE)


def version_flags(module: Path = TOOLS) -> str:
    """The link flags a release build stamps the version with: without them the API
    server reports v0.0.0 in /version, kubectl warns of a version skew, and Kueue logs
    a development version."""
    if module == KUEUE:
        return f"-X {KUEUE_MODULE}/pkg/version.GitVersion={kueue_version()}"
    version = kubernetes_version()
    major, minor = version.removeprefix("v").split(".")[:2]
    stamps = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    return " ".join(
        f"-X {package}.{key}={value}"
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for key, value in stamps.items()
    )


GO_ENV = {"GOFLAGS": "-mod=readonly -buildvcs=false"}


def build(log: Callable[[str], None] = print) -> dict[str, Path]:
    """Build etcd, kube-apiserver, kubectl and Kueue's manager (``go build`` skips what is up
    to date); return where each program is."""
    env = {**os.environ, **GO_ENV}
    built = {}
    for name, (module, package) in PROGRAMS.items():
        out = binary_cache(module)
        out.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        flags = version_flags(module)
        command = ["go", "build", "-p", GO_PARALLELISM, "-ldflags", flags, "-o", str(out / name), package]
        done = subprocess.run(command, cwd=module, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ControlPlaneError(f"building {name} ({package}) failed:\n{done.stderr.strip()}")
        log(f"built {name} in {time.monotonic() - started:.0f}s")
        built[name] = out / name
    return built


def kueue_source() -> Path:
    """Kueue's module in Go's module cache, at the release its manager is built from: its
    webhook configurations are read from there, never copied into the repository."""
    command = ["go", "list", "-m", "-f", "{{.Dir}}", KUEUE_MODULE]
    done = subprocess.run(command, cwd=KUEUE, env={**os.environ, **GO_ENV}, capture_output=True, text=True, check=False)
    folder = Path(done.stdout.strip())
    if done.returncode != 0 or not (folder / KUEUE_WEBHOOKS).is_file():
        raise ControlPlaneError(f"no {KUEUE_MODULE} module with {KUEUE_WEBHOOKS}: {done.stderr.strip()}")
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Layout:
    """The files of one control plane under its folder."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def kueue_kubeconfig(self) -> Path:
        return self.root / "kueue" / "kubeconfig"

    @property
    def kubectl(self) -> Path:
        return self.bin / "kubectl"

    @property
    def state(self) -> Path:
        return self.root / STATE_FILE


def _write(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def make_pki(pki: Path) -> None:
    """The cluster CA and API server certificate, the front-proxy CA and its client (the
    aggregation layer's requestheader authentication), the service-account signing key,
    and the webhook's own CA and serving certificate."""
    ca, ca_key = certs.new_ca("e2e-cluster-ca")
    _write(pki / "ca.crt", ca)
    names = ["127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "10.0.0.1"]
    serving, serving_key = certs.issue(ca, ca_key, names)
    _write(pki / "apiserver.crt", serving)
    _write(pki / "apiserver.key", serving_key, 0o600)
    proxy_ca, proxy_ca_key = certs.new_ca("e2e-front-proxy-ca")
    _write(pki / "front-proxy-ca.crt", proxy_ca)
    client, client_key = certs.issue(proxy_ca, proxy_ca_key, ["front-proxy-client"], client=True)
    _write(pki / "front-proxy-client.crt", client)
    _write(pki / "front-proxy-client.key", client_key, 0o600)
    account_key = ec.generate_private_key(ec.SECP256R1())
    pem = account_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(pki / "sa.key", pem, 0o600)
    public = account_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(pki / "sa.pub", public)
    webhook_ca, webhook_ca_key = certs.new_ca("e2e-tpu-admission-ca")
    webhook_cert, webhook_key = certs.issue(webhook_ca, webhook_ca_key, ["127.0.0.1", "localhost"])
    certs.write(pki / "webhook", webhook_ca, webhook_cert, webhook_key)
    # the aggregation layer checks an aggregated server's certificate for its Service's DNS name
    namespace, name = ADVISOR_SERVICE
    advisor_names = ["127.0.0.1", "localhost", f"{name}.{namespace}.svc"]
    advisor_cert, advisor_key = certs.issue(webhook_ca, webhook_ca_key, advisor_names)
    certs.write(pki / "advisor", webhook_ca, advisor_cert, advisor_key)

    # Kueue's webhook server and its metrics endpoint, signed by a CA of their own: its
    # internal certificate management names the in-cluster Service, which loopback has not
    kueue_ca, kueue_ca_key = certs.new_ca("e2e-kueue-ca")
    kueue_cert, kueue_key = certs.issue(kueue_ca, kueue_ca_key, ["127.0.0.1", "localhost"])
    certs.write(pki / "kueue", kueue_ca, kueue_cert, kueue_key)
    # the only place Kueue's manager reads its metrics certificate from without internal
    # certificate management: /etc/kueue/metrics/certs, seen through an overlay of /etc (kueue_command)
    metrics = pki / "kueue-etc" / "kueue" / "metrics" / "certs"
    _write(metrics / certs.CERT_FILE, kueue_cert)
    _write(metrics / certs.KEY_FILE, kueue_key, 0o600)


def kubeconfig(server: str, ca: Path, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
        "current-context": "e2e",
    }


def overlay(base_url: str, advisor_port: int, ca_bundle: bytes) -> dict[str, Any]:
    """The kustomization of an overlay of the shipped ``manifests/base`` for processes on
    loopback, and nothing more: each webhook's ``clientConfig.service`` becomes a URL on
    ``base_url`` (same path) with ``caBundle``; the APIService gets ``caBundle`` and the
    advisor's port; the advisor's Service becomes an ExternalName for ``localhost`` (the
    aggregation layer resolves such a Service to that name and the APIService's port, so
    nothing needs kube-proxy). ``resources`` is filled in by ``write_overlay``."""
    bundle = base64.b64encode(ca_bundle).decode()
    patches: list[dict[str, Any]] = []
    for file_name in WEBHOOK_CONFIGURATIONS:
        for document in yaml.safe_load_all((MANIFESTS / file_name).read_text()):
            operations = [
                {
                    "op": "replace",
                    "path": f"/webhooks/{index}/clientConfig",
                    "value": {"url": base_url + hook["clientConfig"]["service"].get("path", "/"), "caBundle": bundle},
                }
                for index, hook in enumerate(document["webhooks"])
            ]
            target = {"kind": document["kind"], "name": document["metadata"]["name"]}
            patches.append({"target": target, "patch": yaml.safe_dump(operations)})
    api_service = [
        {"op": "add", "path": "/spec/caBundle", "value": bundle},
        {"op": "replace", "path": "/spec/service/port", "value": advisor_port},
    ]
    api_service_target = {"kind": "APIService", "name": ADVISOR_API_SERVICE}
    patches.append({"target": api_service_target, "patch": yaml.safe_dump(api_service)})
    external = [{"op": "replace", "path": "/spec", "value": {"type": "ExternalName", "externalName": "localhost"}}]
    service = {"kind": "Service", "name": ADVISOR_SERVICE[1]}
    patches.append({"target": service, "patch": yaml.safe_dump(external)})
    kind = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    return {**kind, "resources": [], "patches": patches}


def write_overlay(directory: Path, kustomization: dict[str, Any]) -> Path:
    """``kustomization`` written as ``directory/kustomization.yaml`` over the shipped base
    (kustomize takes a base only by a relative path)."""
    directory.mkdir(parents=True, exist_ok=True)
    rendered = {**kustomization, "resources": [os.path.relpath(MANIFESTS, directory)]}
    return _write(directory / "kustomization.yaml", yaml.safe_dump(rendered, sort_keys=False).encode())


def registered(documents: Iterator[Any]) -> list[dict[str, Any]]:
    """The documents of the overlay's render the control plane applies (``REGISTERED``)."""
    wanted = [
        document
        for document in documents
        if isinstance(document, dict)
        and any(
            document.get("kind") == kind and name in (None, document["metadata"]["name"]) for kind, name in REGISTERED
        )
    ]
    missing = [kind for kind, name in REGISTERED if not any(doc["kind"] == kind for doc in wanted)]
    if missing:
        raise ControlPlaneError(f"the overlay's render has no {', '.join(missing)}")
    return wanted


def kueue_webhook_configurations(source: Path, base_url: str, ca_bundle: bytes) -> Iterator[dict[str, Any]]:
    """Kueue's webhook configurations as its module ships them, rendered for a manager served
    on loopback: named as its release manifests name them (``kueue-`` first), each
    ``clientConfig.service`` a URL on ``base_url`` with ``caBundle`` set, and the webhooks for
    jobs and pods kept out of kube-system and Kueue's namespace, as its kustomization does."""
    bundle = base64.b64encode(ca_bundle).decode()
    outside = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", KUEUE_NAMESPACE]}
        ]
    }
    for document in yaml.safe_load_all((source / KUEUE_WEBHOOKS).read_text()):
        if not document:
            continue
        rendered = copy.deepcopy(document)
        rendered["metadata"]["name"] = "kueue-" + rendered["metadata"]["name"]
        for hook in rendered["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": base_url + path, "caBundle": bundle}
            if KUEUE_API_PATH not in path:
                hook["namespaceSelector"] = copy.deepcopy(outside)
        yield rendered


@dataclass(frozen=True)
class KueuePorts:
    """Where Kueue's manager listens, every port on loopback."""

    webhook: int
    health: int
    metrics: int


def kueue_configuration(ports: KueuePorts, cert_dir: Path) -> dict[str, Any]:
    """RFC-0033 4.1's ConfigMap with what a manager outside the cluster needs and nothing
    else changed: its namespace, no leader election (one replica), every port on loopback,
    and internal certificate management off (its webhook serves our certificate from
    ``cert_dir``). The API server holds it too: ``simulate`` reads fair sharing from it."""
    configmap: dict[str, Any] = yaml.safe_load(KUEUE_CONFIGURATION.read_text())
    configuration: dict[str, Any] = yaml.safe_load(configmap["data"][KUEUE_CONFIGURATION_KEY])
    configuration.update(
        namespace=KUEUE_NAMESPACE,
        leaderElection={"leaderElect": False},
        health={"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
        metrics={**configuration.get("metrics", {}), "bindAddress": f"127.0.0.1:{ports.metrics}"},
        webhook={"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        internalCertManagement={"enable": False},
    )
    configmap["data"] = {KUEUE_CONFIGURATION_KEY: yaml.safe_dump(configuration, sort_keys=False)}
    return configmap


#: its on-demand visibility API server reads its certificate from /visibility, which no flag
#: moves; nothing here uses that API (the manager's flag, and its Deployment's, which the
#: admin guard reads)
KUEUE_FEATURE_GATES = "--feature-gates=VisibilityOnDemand=false"


def kueue_command(layout: Layout, config: Path) -> list[str]:
    """Kueue's manager, started in a mount namespace of its own where /etc is an overlay
    holding its metrics certificate: without internal certificate management it reads that
    certificate from /etc/kueue/metrics/certs and no flag moves it. Nothing outside the
    manager's process sees the overlay. ``unshare`` execs the shell, which execs the
    manager: the PID recorded is the manager's."""
    upper, work = layout.pki / "kueue-etc", layout.root / "kueue-etc-work"
    work.mkdir(parents=True, exist_ok=True)
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    script = f'mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc && exec "$@"'
    manager = [
        str(layout.bin / "kueue"),
        f"--config={config}",
        f"--kubeconfig={layout.kueue_kubeconfig}",
        KUEUE_FEATURE_GATES,
    ]
    return ["unshare", *user, "--mount", "--propagation", "private", "sh", "-c", script, "kueue", *manager]


def kueue_deployment() -> dict[str, Any]:
    """Kueue's manager as a cluster holds it: the Deployment the admin guard reads Kueue's
    version (its image tag) and ``--feature-gates`` from. The manager runs here as a process
    (``kueue_command``, with the same gates); no controller acts on this object, since no
    kube-controller-manager runs."""
    labels = {"control-plane": "controller-manager"}
    manager = {
        "name": "manager",
        "image": f"registry.k8s.io/kueue/kueue:{kueue_version()}",
        "args": ["--config=/controller_manager_config.yaml", KUEUE_FEATURE_GATES],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": KUEUE_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [manager]}},
        },
    }


def cluster_nodes() -> list[dict[str, Any]]:
    """The fixture's nodes as a cluster of kubelets would hold them: every pool with all its
    hosts (the fixture lists two of each; a slice's hosts are its chips over each host's),
    each node Ready. Kueue's topology-aware scheduling places pods only on Ready nodes, and
    no kubelet runs here to say so."""
    listed: list[dict[str, Any]] = yaml.safe_load(NODES.read_text())["items"]
    names = {node["metadata"]["name"] for node in listed}
    added = []
    pools: dict[str, list[dict[str, Any]]] = {}
    for node in listed:
        labels = node["metadata"]["labels"]
        if TOPOLOGY_LABEL in labels and not node["spec"].get("unschedulable"):
            pools.setdefault(labels[POOL_LABEL], []).append(node)
    for pool, members in pools.items():
        template = members[0]
        chips = 1
        for dimension in template["metadata"]["labels"][TOPOLOGY_LABEL].split("x"):
            chips *= int(dimension)
        hosts = chips // int(template["status"]["allocatable"][TPU])
        index = 0
        while len(members) < hosts:
            name = f"gke-{pool}-{index}"
            index += 1
            if name in names:
                continue
            node = copy.deepcopy(template)
            node["metadata"]["name"] = name
            node["metadata"]["labels"]["kubernetes.io/hostname"] = name
            members.append(node)
            added.append(node)
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "no kubelet: the e2e control plane",
    }
    nodes = [copy.deepcopy(node) for node in [*listed, *added]]
    for node in nodes:
        node["status"]["conditions"] = [ready]
    return nodes


def rfc_topology() -> list[dict[str, Any]]:
    """The Topology RFC-0033 4.6's flavors name (the cluster fixture's flavors name it too,
    and Kueue keeps a ClusterQueue inactive while a flavor's Topology is missing)."""
    return [d for d in yaml.safe_load_all(RFC_STATIC.read_text()) if d and d["kind"] == "Topology"]


def shipped_policy() -> str:
    """The policy the shipped ConfigMap carries (what a deployed webhook runs on)."""
    configmap = yaml.safe_load((MANIFESTS / "policy-configmap.yaml").read_text())
    policy: str = configmap["data"]["policy.yaml"]
    return policy


class Processes:
    """The processes ``up`` started, recorded in ``state.json`` as each one starts, so that
    ``down`` (or a failed ``up``) stops exactly those."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.state: dict[str, Any] = {"processes": {}, "commands": {}}

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        self.layout.logs.mkdir(parents=True, exist_ok=True)
        with (self.layout.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # outlives ``up``; ``down`` stops it by PID
            )
        self.state["processes"][name] = process.pid
        self.state["commands"][name] = command
        self.save()
        return process

    def save(self) -> None:
        _write(self.layout.state, json.dumps(self.state, indent=2).encode(), 0o600)  # holds the admin token


def stop(layout: Layout, grace: float = 15.0) -> list[str]:
    """Stop the processes recorded in ``layout``'s state, last started first; return their names."""
    if not layout.state.is_file():
        return []
    recorded: dict[str, int] = json.loads(layout.state.read_text()).get("processes", {})
    stopped = []
    for name, pid in reversed(list(recorded.items())):
        if terminate(pid, grace):
            stopped.append(name)
    layout.state.unlink()
    return stopped


def terminate(pid: int, grace: float = 15.0) -> bool:
    """SIGTERM ``pid``, SIGKILL it after ``grace`` seconds; whether it was running."""
    if not _signal(pid, signal.SIGTERM):
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        _signal(pid, signal.SIGKILL)
    return True


def _signal(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)  # our child when ``up`` stops it itself
    except ChildProcessError:
        finished = 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return _not_zombie(pid)
    return finished == 0


def _not_zombie(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def wait_for(
    what: str,
    check: Callable[[], bool],
    log: Path,
    process: subprocess.Popen[bytes] | None = None,
    timeout: float = READY_TIMEOUT,
) -> None:
    """Poll ``check`` until it holds; fail naming the log when ``process`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log.is_file() else "(no log)"
            raise ControlPlaneError(f"{what} exited with {process.returncode}; the end of {log}:\n{tail}")
        try:
            if check():
                return
        except (OSError, subprocess.SubprocessError):
            pass
        time.sleep(0.25)
    tail = log.read_text(errors="replace")[-3000:] if log.is_file() else "(no log)"
    raise ControlPlaneError(f"{what} not ready within {timeout:.0f}s; the end of {log}:\n{tail}")


def _get(url: str, context: ssl.SSLContext | None = None, token: str | None = None) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=5, context=context) as response:
        body: bytes = response.read()
        return body.decode()


def _post(url: str, body: dict[str, Any]) -> str:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: bytes = response.read()
        return answer.decode()


def _all_synced(metrics: str) -> bool:
    """Whether the webhook's metrics say every watched kind is synced."""
    gauges = [line for line in metrics.splitlines() if line.startswith("tpu_admission_cluster_synced{")]
    return bool(gauges) and all(line.endswith(" 1.0") for line in gauges)


class ControlPlane:
    """Run ``up``'s steps against one folder."""

    def __init__(self, root: Path, log: Callable[[str], None] = print) -> None:
        self.layout = Layout(root.resolve())
        self.log = log
        self.processes = Processes(self.layout)

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.layout.kubectl), "--kubeconfig", str(self.layout.kubeconfig), *args]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120, check=False)
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed:\n{done.stderr.strip()}")
        return done

    def up(self) -> None:
        layout = self.layout
        if layout.state.is_file():
            raise ControlPlaneError(f"{layout.root} already has a control plane ({layout.state}): run down first")
        programs = build(self.log)
        layout.bin.mkdir(parents=True, exist_ok=True)
        for name, program in programs.items():
            target = layout.bin / name
            target.unlink(missing_ok=True)
            target.symlink_to(program)
        make_pki(layout.pki)
        processes = self.processes = Processes(layout)
        try:
            self._start(processes)
        except BaseException:
            stop(layout)
            raise

    def _start(self, processes: Processes) -> None:
        layout, pki = self.layout, self.layout.pki
        etcd_port, peer_port, api_port, webhook_port = free_port(), free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        etcd = processes.start(
            "etcd",
            [
                str(layout.bin / "etcd"),
                "--name=e2e",
                f"--data-dir={layout.root / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=e2e=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",  # a throwaway store: no fsync keeps a shared disk out of the timings
            ],
        )
        wait_for("etcd", lambda: '"health":"true"' in _get(f"{etcd_url}/health"), layout.logs / "etcd.log", etcd)
        self.log(f"etcd ready on {etcd_url}")

        token, kueue_token = secrets.token_hex(16), secrets.token_hex(16)
        users = (
            f'{token},e2e-admin,e2e-admin,"system:masters"\n'
            # Kueue's manager under its service account's name: the webhook lets only that
            # user flip spec.suspend. Its rights are an admin's (its RBAC is not applied here).
            f'{kueue_token},{KUEUE_USER},{KUEUE_USER},"system:serviceaccounts,system:masters"\n'
        )
        _write(pki / "tokens.csv", users.encode(), 0o600)
        server = f"https://127.0.0.1:{api_port}"
        apiserver = processes.start(
            "kube-apiserver",
            [
                str(layout.bin / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                # the aggregation layer: requests it proxies carry the user in headers,
                # trusted only from a client the front-proxy CA signed
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
                f"--cert-dir={layout.root / 'apiserver'}",
            ],
        )
        _write(layout.kubeconfig, yaml.safe_dump(kubeconfig(server, pki / "ca.crt", token)).encode(), 0o600)
        _write(layout.kueue_kubeconfig, yaml.safe_dump(kubeconfig(server, pki / "ca.crt", kueue_token)).encode(), 0o600)
        processes.state.update(server=server, token=token)
        self._wait_for_apiserver(apiserver)
        self.log(f"kube-apiserver ready on {server}")

        crds = crd_files()
        # server-side: the Kueue CRDs are larger than client-side apply's annotation may hold
        self.kubectl("apply", "--server-side", *(arg for crd in crds for arg in ("-f", str(crd))))
        self.kubectl("wait", "--for=condition=Established", "--timeout=120s", "crd", "--all")
        self.log(f"applied {len(crds)} CRDs")

        self._start_kueue(processes)
        # after Kueue's webhooks: the queues pass its defaulting and validation, as in a cluster
        self.kubectl("apply", "--server-side", "-f", str(NAMESPACES))
        nodes = cluster_nodes()
        # created with their status (an update keeps the stored one): Ready, as a kubelet
        # says; then replaced, dropping the not-ready taint the API server puts on a new
        # node, which the node lifecycle controller (not run here) would take off
        listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes})
        self.kubectl("create", "-f", "-", stdin=listed)
        self.kubectl("replace", "-f", "-", stdin=listed)
        topology = {"apiVersion": "v1", "kind": "List", "items": rfc_topology()}
        self.kubectl("apply", "--server-side", "-f", "-", stdin=json.dumps(topology))
        self.kubectl("apply", "--server-side", "-f", str(QUEUES))
        self.kubectl("apply", "-f", "-", stdin=json.dumps(kueue_deployment()))
        self.log(f"applied the RFC's namespaces, {len(nodes)} nodes, its Topology and queues, Kueue's Deployment")

        _write(layout.root / "policy.yaml", shipped_policy().encode())
        webhook_process = processes.start("tpu-admission", self._ours("serve", webhook_port, pki / "webhook"))
        webhook = f"https://127.0.0.1:{webhook_port}"
        webhook_context = ssl.create_default_context(cafile=str(pki / "webhook" / "ca.crt"))
        wait_for(
            "tpu-admission",
            lambda: _get(f"{webhook}/readyz", webhook_context) == "ok",
            layout.logs / "tpu-admission.log",
            webhook_process,
        )
        # the gates read the watch cache: the webhook is ready for the tests once every kind it watches is synced
        wait_for(
            "tpu-admission's watch cache",
            lambda: _all_synced(_get(f"{webhook}/metrics", webhook_context)),
            layout.logs / "tpu-admission.log",
            webhook_process,
        )
        advisor = self._start_advisor(processes)
        # the shipped manifests, through an overlay kustomize renders (kubectl's own kustomize)
        kustomization = overlay(webhook, advisor.port, (pki / "webhook" / "ca.crt").read_bytes())
        write_overlay(layout.root / "overlay", kustomization)
        render = self.kubectl("kustomize", str(layout.root / "overlay")).stdout
        documents = registered(yaml.safe_load_all(render))
        _write(layout.root / "registered.yaml", yaml.safe_dump_all(documents).encode())
        self.kubectl("apply", "-f", str(layout.root / "registered.yaml"))
        processes.state.update(server=server, webhook=webhook, advisor=advisor.url)
        processes.save()
        # registered: the API server calls the webhook once its informer has the configurations
        wait_for("the webhook registration", self.webhook_called, layout.logs / "tpu-admission.log", webhook_process)
        self.log(f"tpu-admission ready on {webhook} and registered")
        wait_for(
            "the advisor's APIService",
            self._advisor_available,
            layout.logs / "tpu-admission-advisor.log",
            advisor.process,
        )
        self.log(f"tpu-admission-advisor ready on {advisor.url}, served as {ADVISOR_API_SERVICE}")
        self.log(f"kubectl: {layout.kubectl} --kubeconfig {layout.kubeconfig}")

    def _ours(self, command: str, port: int, cert_dir: Path) -> list[str]:
        """``tpu-admission COMMAND`` (``serve`` or ``serve-advisor``) on loopback, on the shipped
        policy, watching this control plane."""
        layout = self.layout
        program = str(Path(sys.executable).parent / "tpu-admission")
        return [
            program, command, "--host=127.0.0.1", f"--port={port}", f"--cert-dir={cert_dir}",
            f"--config={layout.root / 'policy.yaml'}", f"--kubeconfig={layout.kubeconfig}",
        ]  # fmt: skip

    def _start_advisor(self, processes: Processes) -> Advisor:
        """``serve-advisor`` on loopback, watching the cluster; it reads the front-proxy
        settings from the ConfigMap the API server publishes, as in a cluster."""
        layout, pki = self.layout, self.layout.pki
        port = free_port()
        process = processes.start("tpu-admission-advisor", self._ours("serve-advisor", port, pki / "advisor"))
        advisor = Advisor(port, process)
        context = ssl.create_default_context(cafile=str(pki / "advisor" / "ca.crt"))
        wait_for(
            "tpu-admission-advisor",
            lambda: '"ok"' in _get(f"{advisor.url}/readyz", context),
            layout.logs / "tpu-admission-advisor.log",
            process,
        )
        return advisor

    def _advisor_available(self) -> bool:
        """The aggregation layer has found the advisor (its discovery answered)."""
        done = self.kubectl("get", "apiservice", ADVISOR_API_SERVICE, "-o", "json", check=False)
        if done.returncode != 0:
            return False
        conditions = json.loads(done.stdout).get("status", {}).get("conditions", [])
        return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)

    def _start_kueue(self, processes: Processes) -> None:
        """Kueue's manager with RFC-0033's Configuration, ready (its /readyz says its webhook
        server listens), and its webhooks registered and called by the API server."""
        layout = self.layout
        ports = KueuePorts(webhook=free_port(), health=free_port(), metrics=free_port())
        configmap = kueue_configuration(ports, layout.pki / "kueue")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}
        self.kubectl("apply", "-f", "-", stdin=json.dumps(namespace))
        self.kubectl("apply", "-f", "-", stdin=json.dumps(configmap))
        config = _write(layout.root / "kueue" / "config.yaml", configmap["data"][KUEUE_CONFIGURATION_KEY].encode())
        kueue = processes.start("kueue", kueue_command(layout, config))
        health = f"http://127.0.0.1:{ports.health}"
        wait_for("kueue", lambda: _get(f"{health}/readyz") == "ok", layout.logs / "kueue.log", kueue)
        url = f"https://127.0.0.1:{ports.webhook}"
        rendered = kueue_webhook_configurations(kueue_source(), url, (layout.pki / "kueue" / "ca.crt").read_bytes())
        _write(layout.root / "kueue" / "webhook-configurations.yaml", yaml.safe_dump_all(rendered).encode())
        self.kubectl("apply", "-f", str(layout.root / "kueue" / "webhook-configurations.yaml"))
        processes.state.update(kueue=url)
        processes.save()
        wait_for("Kueue's webhook registration", self._kueue_called, layout.logs / "kueue.log", kueue)
        self.log(f"kueue {kueue_version()} ready on {url} and registered")

    def _kueue_called(self) -> bool:
        """Whether Kueue's mutating webhook is called: it suspends a Job that names a queue."""
        probe = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "e2e-kueue-probe",
                "namespace": "default",
                "labels": {"kueue.x-k8s.io/queue-name": "e2e-probe"},
            },
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
        }
        done = self.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(probe), check=False)
        return done.returncode == 0 and json.loads(done.stdout)["spec"].get("suspend") is True

    def _wait_for_apiserver(self, process: subprocess.Popen[bytes]) -> None:
        state, pki = self.processes.state, self.layout.pki
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        wait_for(
            "kube-apiserver",
            lambda: _get(f"{state['server']}/readyz", context, state["token"]) == "ok",
            self.layout.logs / "kube-apiserver.log",
            process,
        )

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and store: what a
        control-plane upgrade does to every client's watches."""
        state = self.processes.state
        terminate(state["processes"]["kube-apiserver"])
        self._wait_for_apiserver(self.processes.start("kube-apiserver", state["commands"]["kube-apiserver"]))

    def compact_etcd(self) -> int:
        """Compact etcd up to its current revision, as the API server does every five minutes:
        a watch from any older resourceVersion then gets 410 Gone. The revision compacted at."""
        command = self.processes.state["commands"]["etcd"]
        url = next(arg.split("=", 1)[1] for arg in command if arg.startswith("--listen-client-urls="))
        # etcd's JSON gateway: a range read answers with the store's revision in its header
        ranged = _post(f"{url}/v3/kv/range", {"key": base64.b64encode(b"/registry").decode()})
        revision = int(json.loads(ranged)["header"]["revision"])
        _post(f"{url}/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def webhook_called(self) -> bool:
        probe = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "e2e-registration-probe", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
        }
        done = self.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(probe), check=False)
        if done.returncode != 0:  # a denial names the webhook that gave it
            return "tpu-admission.antgroup.com" in done.stderr
        labels = json.loads(done.stdout)["metadata"].get("labels", {})
        return "kueue.x-k8s.io/queue-name" in labels  # the dev tier's default, patched in by our webhook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.controlplane", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["up", "down", "build"])
    parser.add_argument("--dir", type=Path, help="the control plane's folder (up, down)")
    args = parser.parse_args(argv)
    try:
        if args.action == "build":
            for program in build().values():
                print(program)
            return 0
        if args.dir is None:
            parser.error(f"{args.action} needs --dir")
        if args.action == "up":
            reason = needs()
            if reason:
                print(reason, file=sys.stderr)
                return 2
            ControlPlane(args.dir).up()
        else:
            names = stop(Layout(args.dir.resolve()))
            print(f"stopped {', '.join(names)}" if names else f"nothing running under {args.dir}")
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
