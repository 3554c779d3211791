"""The admin guard's test objects: RFC-0033's Kueue objects and a cluster to judge them against.

``rfc_objects(mode)`` is the RFC's own configuration (4.2 dynamic or 4.6 static, with
4.1's Configuration, the explicit tpu-pool Cohort and Kueue's controller) read from
``fixtures/kueue``; ``cluster_state(mode)`` is the cluster it was written for: the
namespaces as 4.2 labels them, and nodes with exactly the chips the RFC's Σ nominal
promises (dynamic: 9 cubes of 16 tpu7x hosts, every partition label; static: one pool
each of 4x4x4, 4x4x8 and 4x8x8). ``lint_objects`` runs the engine on them.

Admin rule examples (``admin_rule_examples.yaml``) are mutations of these, applied by
``AdminCase``: ``set``/``delete`` per object (``Kind/name`` or ``Kind/namespace/name``;
``Configuration`` edits the configuration inside Kueue's ConfigMap), ``add`` and
``remove`` objects, ``nodes`` and ``namespaces`` change the cluster (``state: none``
drops it), ``config`` overrides the policy.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from support import delete_path, set_path

from webhook.admin.catalog import policy_from_mapping
from webhook.admin.judging import Judged, lint
from webhook.admin.objectset import assemble
from webhook.kube.manifestyaml import FastManifestLoader
from webhook.objects.sources import Document, _parse
from webhook.policy.config import Policy
from webhook.policy.findings import Finding

KUEUE = Path(__file__).parent / "fixtures" / "kueue"
EXAMPLES = Path(__file__).parent / "admin_rule_examples.yaml"
#: 4.1's Configuration, the explicit tpu-pool Cohort and Kueue's controller, in both forms
COMMON = ("rfc-4.1-configuration.yaml", "cohort-tpu-pool.yaml", "controller-deployment.yaml")
RFC_FILES = {"dynamic": ("rfc-4.2-dynamic.yaml", *COMMON), "static": ("rfc-4.6-static.yaml", *COMMON)}
CONFIG_KEY = "controller_manager_config.yaml"
TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
PARTITIONS = ("4x4x4", "2x4x4", "2x2x4", "2x2x2", "2x2x1")
#: hosts per partition geometry of one 4x4x4 cube (16 hosts of 4 chips)
HOSTS_PER = {"4x4x4": 16, "2x4x4": 8, "2x2x4": 4, "2x2x2": 2, "2x2x1": 1}
STATIC_POOLS = {"4x4x4": 1, "4x4x8": 1, "4x8x8": 1}


@cache
def _documents(name: str) -> tuple[dict[str, Any], ...]:
    return tuple(d for d in yaml.safe_load_all((KUEUE / name).read_text()) if d)


def rfc_objects(mode: str) -> list[dict[str, Any]]:
    """The RFC's Kueue objects for ``mode``, fresh copies."""
    return [copy.deepcopy(d) for name in RFC_FILES[mode] for d in _documents(name)]


def namespaces() -> list[dict[str, Any]]:
    return [copy.deepcopy(d) for d in _documents("state/namespaces.yaml")[0]["items"]]


def _node(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": copy.deepcopy(taints if taints is not None else [TPU_TAINT])},
        "status": {
            "allocatable": {"cpu": "208", "memory": "720Gi", "ephemeral-storage": "200Gi", "google.com/tpu": "4"}
        },
    }


def dynamic_nodes(cubes: int = 9) -> list[dict[str, Any]]:
    """``cubes`` 4x4x4 cubes of 16 tpu7x hosts, every partition label (RFC-0033 阶段〇 done)."""
    nodes = []
    for cube in range(cubes):
        for host in range(16):
            labels = {
                "cloud.google.com/gke-nodepool": f"tpu7x-cube-{cube}",
                "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                "cloud.google.com/gce-topology-block": f"block-{cube // 4}",
            }
            for geometry in PARTITIONS:
                labels[f"cloud.google.com/gke-tpu-partition-{geometry}-id"] = f"c{cube}-{host // HOSTS_PER[geometry]}"
            nodes.append(_node(f"gke-tpu7x-c{cube}-h{host}", labels))
    return nodes


def static_nodes(pools: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Static tpu7x node pools: ``{topology: how many pools}``, a pool's hosts = its chips ÷ 4."""
    nodes = []
    for topology, count in (pools if pools is not None else STATIC_POOLS).items():
        a, b, c = (int(d) for d in topology.split("x"))
        for pool in range(count):
            for host in range(a * b * c // 4):
                labels = {
                    "cloud.google.com/gke-nodepool": f"tpu-{topology}-{pool}",
                    "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                    "cloud.google.com/gke-tpu-topology": topology,
                }
                nodes.append(_node(f"gke-tpu-{topology}-{pool}-{host}", labels))
    return nodes


def node_list(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "NodeList", "items": nodes}


def namespace_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "NamespaceList", "items": items}


def cluster_state(mode: str, nodes: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The state documents the RFC's objects are judged against (typed lists: known even when empty)."""
    made = _nodes(mode, nodes or {})
    return [namespace_list(namespaces()), node_list(made)]


def _nodes(mode: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    made = dynamic_nodes(spec.get("cubes", 9)) if mode == "dynamic" else static_nodes(spec.get("pools"))
    for label, count in (spec.get("drop_labels") or {}).items():
        for node in made[:count]:
            node["metadata"]["labels"].pop(label, None)
    if "taints" in spec:
        for node in made:
            node["spec"]["taints"] = copy.deepcopy(spec["taints"])
    return made


def documents(objects: list[dict[str, Any]], source: str, nodes: bool = True) -> list[Document]:
    """``objects`` as one file reads (with YAML nodes; ``nodes=False``: without, for a big state)."""
    if not nodes:
        return [Document(source, index + 1, obj) for index, obj in enumerate(objects)]
    parsed, error = _parse(dump(objects), source, FastManifestLoader)
    assert error is None
    return parsed


class _Dumper(yaml.CSafeDumper):
    """libyaml's dumper, multi-line text as a literal block (as ConfigMaps are written)."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def dump(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, by libyaml (a cluster of 144 Nodes dumps in milliseconds)."""
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False)


def lint_objects(inputs: list[dict[str, Any]], state: list[dict[str, Any]] | None, policy: Policy) -> list[Judged]:
    objects, entries = assemble(
        documents(inputs, "input.yaml"), documents(state or [], "state.yaml", nodes=False), policy
    )
    return lint(objects, entries, policy)


def label(obj: dict[str, Any]) -> str:
    """``Kind/name`` or ``Kind/namespace/name`` (Kueue's ConfigMap: ``Configuration``)."""
    metadata = obj.get("metadata") or {}
    if obj.get("kind") == "ConfigMap" and metadata.get("name") == "kueue-manager-config":
        return "Configuration"
    namespace = metadata.get("namespace")
    return f"{obj['kind']}/{namespace}/{metadata.get('name')}" if namespace else f"{obj['kind']}/{metadata.get('name')}"


def result_label(judged: Judged) -> str:
    read = judged.entry.read
    kind = getattr(read, "kind", None)
    if kind is None:
        return ""
    if kind.kind == "Configuration":
        return "Configuration"
    return f"{kind.kind}/{read.namespace}/{read.name}" if read.namespace else f"{kind.kind}/{read.name}"  # type: ignore[union-attr]


@dataclass
class AdminCase:
    rule: str
    name: str
    mode: str
    fires: bool
    on: str | None = None
    sets: dict[str, dict[str, Any]] = field(default_factory=dict)
    deletes: dict[str, list[str]] = field(default_factory=dict)
    add: list[dict[str, Any]] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    config_text: str | None = None
    state: str = "rfc"
    nodes: dict[str, Any] = field(default_factory=dict)
    namespace_edits: dict[str, dict[str, Any]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    message: str | None = None
    count: int | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}: {self.name}"

    def policy(self) -> Policy:
        return policy_from_mapping({"mode": self.mode, **self.config}, f"case {self.id}")

    def inputs(self) -> list[dict[str, Any]]:
        objects = [o for o in rfc_objects(self.mode) if label(o) not in self.remove]
        objects += copy.deepcopy(self.add)
        for obj in objects:
            key = label(obj)
            if key == "Configuration":
                self._edit_configuration(obj)
                continue
            for path in self.deletes.get(key, []):
                delete_path(obj, path)
            for path, value in self.sets.get(key, {}).items():
                set_path(obj, path, value)
        return objects

    def _edit_configuration(self, config_map: dict[str, Any]) -> None:
        if self.config_text is not None:
            config_map["data"][CONFIG_KEY] = self.config_text
            return
        if "Configuration" not in self.sets and "Configuration" not in self.deletes:
            return
        config = yaml.safe_load(config_map["data"][CONFIG_KEY])
        for path in self.deletes.get("Configuration", []):
            delete_path(config, path)
        for path, value in self.sets.get("Configuration", {}).items():
            set_path(config, path, value)
        config_map["data"][CONFIG_KEY] = yaml.safe_dump(config, sort_keys=False)

    def cluster(self) -> list[dict[str, Any]] | None:
        if self.state == "none":
            return None
        items = namespaces()
        for name, edits in self.namespace_edits.items():
            found = next((n for n in items if n["metadata"]["name"] == name), None)
            if found is None:
                found = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {}}}
                items.append(found)
            for path, value in edits.items():
                set_path(found, path, value)
        docs = [namespace_list(items)]
        if self.state != "no-nodes":
            docs.append(node_list(_nodes(self.mode, self.nodes)))
        return docs

    def findings(self) -> list[Finding]:
        """The case's rule's findings on the object it names (``on``), or on every object."""
        found = []
        for judged in lint_objects(self.inputs(), self.cluster(), self.policy()):
            if judged.decision is None or (self.on is not None and result_label(judged) != self.on):
                continue
            found += [f for f in judged.decision.findings if f.rule == self.rule]
        return found


def load_cases() -> list[AdminCase]:
    data = yaml.safe_load(EXAMPLES.read_text())
    cases = []
    for rule, items in data.items():
        for item in items:
            cases.append(
                AdminCase(
                    rule=rule,
                    name=item["case"],
                    mode=item.get("mode", "dynamic"),
                    fires=item["fires"],
                    on=item.get("object"),
                    sets=item.get("set") or {},
                    deletes=item.get("delete") or {},
                    add=item.get("add") or [],
                    remove=item.get("remove") or [],
                    config_text=item.get("config_text"),
                    state=item.get("state", "rfc"),
                    nodes=item.get("nodes") or {},
                    namespace_edits=item.get("namespaces") or {},
                    config=item.get("config") or {},
                    path=item.get("path"),
                    message=item.get("message"),
                    count=item.get("count"),
                )
            )
    return cases


CASES = load_cases() if EXAMPLES.exists() else []
