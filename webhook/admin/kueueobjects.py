"""Kueue's own objects, read from manifests and state files for the admin guard.

The guard judges ClusterQueues, LocalQueues, Cohorts, ResourceFlavors,
WorkloadPriorityClasses, Topologies and AdmissionChecks (``kueue.x-k8s.io``), Kueue's
Configuration (the ``controller_manager_config.yaml`` key of the ``kueue-manager-config``
ConfigMap, or a bare ``config.kueue.x-k8s.io`` document) and Kueue's controller
Deployment (for its ``--feature-gates``). It reads Nodes and Namespaces as the cluster
they are judged against. Everything else is another kind, reported as skipped.

A ``KueueObject`` keeps the object as written and where it was read, so a finding's field
path turns into the line it is on. A Configuration inside a ConfigMap keeps the lines of
the embedded YAML shifted to where the block sits in the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import yaml

from webhook.cluster.kinds import KUEUE_GROUP, KUEUE_VERSION
from webhook.kube.fieldpaths import FieldPath
from webhook.kube.manifestyaml import load_single
from webhook.kube.typos import did_you_mean
from webhook.objects.sources import Document
from webhook.policy.config import Policy

CONFIG_GROUP: Final = "config.kueue.x-k8s.io"


@dataclass(frozen=True, slots=True)
class AdminKind:
    """One kind the guard reads: how objects name it, how notes and rules name it."""

    kind: str
    #: plural, as rules' ``requires`` and the skip notes name it ("ClusterQueues")
    plural: str
    group: str
    namespaced: bool
    #: how to add it to ``--cluster-state``
    get: str
    #: judged (has results) or only read as the cluster (Nodes, Namespaces)
    judged: bool = True


CLUSTER_QUEUE: Final = AdminKind(
    "ClusterQueue", "ClusterQueues", KUEUE_GROUP, False, "kubectl get clusterqueues.kueue.x-k8s.io -o yaml"
)
LOCAL_QUEUE: Final = AdminKind(
    "LocalQueue", "LocalQueues", KUEUE_GROUP, True, "kubectl get localqueues.kueue.x-k8s.io -A -o yaml"
)
COHORT: Final = AdminKind("Cohort", "Cohorts", KUEUE_GROUP, False, "kubectl get cohorts.kueue.x-k8s.io -o yaml")
RESOURCE_FLAVOR: Final = AdminKind(
    "ResourceFlavor", "ResourceFlavors", KUEUE_GROUP, False, "kubectl get resourceflavors.kueue.x-k8s.io -o yaml"
)
PRIORITY_CLASS: Final = AdminKind(
    "WorkloadPriorityClass",
    "WorkloadPriorityClasses",
    KUEUE_GROUP,
    False,
    "kubectl get workloadpriorityclasses.kueue.x-k8s.io -o yaml",
)
TOPOLOGY: Final = AdminKind(
    "Topology", "Topologies", KUEUE_GROUP, False, "kubectl get topologies.kueue.x-k8s.io -o yaml"
)
ADMISSION_CHECK: Final = AdminKind(
    "AdmissionCheck", "AdmissionChecks", KUEUE_GROUP, False, "kubectl get admissionchecks.kueue.x-k8s.io -o yaml"
)
CONFIGURATION: Final = AdminKind(
    "Configuration",
    "Configurations",
    CONFIG_GROUP,
    False,
    "kubectl get configmap kueue-manager-config -n kueue-system -o yaml",
)
CONTROLLER: Final = AdminKind(
    "Deployment",
    "Deployments",
    "apps",
    True,
    "kubectl get deployment kueue-controller-manager -n kueue-system -o yaml",
)
NODE: Final = AdminKind("Node", "Nodes", "", False, "kubectl get nodes -o yaml", judged=False)
NAMESPACE: Final = AdminKind("Namespace", "Namespaces", "", False, "kubectl get namespaces -o yaml", judged=False)

KINDS: Final[tuple[AdminKind, ...]] = (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    COHORT,
    RESOURCE_FLAVOR,
    PRIORITY_CLASS,
    TOPOLOGY,
    ADMISSION_CHECK,
    CONFIGURATION,
    CONTROLLER,
    NODE,
    NAMESPACE,
)
#: objects of the typed lists ``kubectl`` and ``snapshot`` write, and of plain ones
_BY_GROUP_KIND: Final[dict[tuple[str, str], AdminKind]] = {
    (kind.group, kind.kind): kind for kind in KINDS if kind is not CONFIGURATION
}

Origin = Literal["input", "state"]


@dataclass(slots=True)
class ShiftedDocument(Document):
    """A document embedded in another one's string (a ConfigMap key): lines shifted to the file's."""

    #: the line of the key that holds the document
    offset: int = 0
    #: whether its lines map one to one to the file's (a literal block, ``key: |``)
    literal: bool = True

    def line_of(self, path: FieldPath) -> int:
        """The file's line of ``path`` in the embedded document, else the line of the key holding it."""
        inner = Document(self.source, 0, self.data, self.node).line_of(path) if self.literal else 0
        return inner + self.offset if inner else self.offset or self.line


@dataclass(slots=True)
class KueueObject:
    """One object the guard reads: judged, or read as the cluster it is judged against."""

    kind: AdminKind
    namespace: str
    name: str
    #: the object; for a Configuration, the configuration itself (what Kueue decodes)
    data: dict[str, Any]
    #: where it was read: its file and line (an input), or ``None`` (state)
    document: Document | None
    origin: Origin
    #: a Configuration read from Kueue's ConfigMap: the ConfigMap's own document
    carrier: Document | None = None
    #: a Configuration whose text cannot be decoded: why (a YAML error, not a mapping)
    unreadable: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """kind/namespace/name: an input replaces the state's object of the same key."""
        return (self.kind.kind, self.namespace, self.name)

    @property
    def label(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.kind}/{where}{self.name or '(unnamed)'}"

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.data.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def labels(self) -> dict[str, str]:
        metadata = self.data.get("metadata")
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


@dataclass(frozen=True, slots=True)
class Skipped:
    """A document that is not one of the guard's objects, and why."""

    reason: str
    #: likely a mistake (a misspelt Kueue kind, an old API version): fails ``--strict``
    mistake: bool = False


@dataclass(frozen=True, slots=True)
class TypedList:
    """A typed list (``NodeList``): its kind is known, even with no items."""

    kind: AdminKind
    items: tuple[KueueObject | Skipped, ...]


Read = KueueObject | Skipped | TypedList


def _metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    metadata = data.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _group(api_version: object) -> str:
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def read_document(document: Document, origin: Origin, policy: Policy) -> Read:
    """What one document is to the guard: one of its objects, a typed list of them, or another kind."""
    data = document.data
    if not isinstance(data, dict):
        return Skipped("not a Kubernetes object (a mapping with apiVersion and kind)")
    kind = str(data.get("kind") or "")
    group = _group(data.get("apiVersion"))
    if kind.endswith("List") and isinstance(data.get("items"), list):
        listed = _BY_GROUP_KIND.get((group, kind.removesuffix("List")))
        if listed is None and (group, kind) == ("", "ConfigMapList"):
            listed = CONFIGURATION  # as `snapshot` writes Kueue's ConfigMap: the Configuration is known, maybe absent
        if listed is not None:
            return TypedList(listed, tuple(_items(document, data["items"], origin, policy)))
    if kind == "Configuration" and group == CONFIG_GROUP:
        return _configuration(data, document, None, origin, policy)
    if kind == "ConfigMap" and group == "":
        return _config_map(data, document, origin, policy)
    found = _BY_GROUP_KIND.get((group, kind))
    if found is None:
        reason = f"not one of Kueue's objects the admin guard judges ({data.get('apiVersion') or '?'} {kind})"
        meant = did_you_mean(kind, [k.kind for k in KINDS if k.group == group]) if group == KUEUE_GROUP else None
        return Skipped(f"{reason}; did you mean kind: {meant}?" if meant else reason, mistake=meant is not None)
    version = str(data.get("apiVersion")).rpartition("/")[2]
    if group == KUEUE_GROUP and version != KUEUE_VERSION:
        return Skipped(
            f"{data.get('apiVersion')}: the admin guard judges {KUEUE_GROUP}/{KUEUE_VERSION} (RFC-0033's API, "
            "whose field names differ); convert it",
            mistake=True,
        )
    metadata = _metadata(data)
    namespace = str(metadata.get("namespace") or ("default" if found.namespaced else ""))
    name = str(metadata.get("name") or "")
    if found is CONTROLLER and (namespace, name) != (policy.kueue.namespace, policy.kueue.controller_deployment):
        return Skipped(
            f"not Kueue's controller (the admin guard reads only {policy.kueue.namespace}/"
            f"{policy.kueue.controller_deployment})"
        )
    return KueueObject(found, namespace, name, data, document, origin)


def _items(document: Document, items: list[Any], origin: Origin, policy: Policy) -> Iterator[KueueObject | Skipped]:
    node = document.node
    items_node = None
    if isinstance(node, yaml.MappingNode):
        items_node = next((v for k, v in node.value if getattr(k, "value", None) == "items"), None)
    for position, item in enumerate(items):
        item_node = items_node.value[position] if isinstance(items_node, yaml.SequenceNode) else None
        line = item_node.start_mark.line + 1 if item_node is not None else document.line
        read = read_document(Document(document.source, line, item, item_node), origin, policy)
        if not isinstance(read, TypedList):
            yield read


def _config_map(data: dict[str, Any], document: Document, origin: Origin, policy: Policy) -> Read:
    metadata = _metadata(data)
    kueue = policy.kueue
    if (str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")) != (
        kueue.namespace,
        kueue.config_map,
    ):
        return Skipped(f"a ConfigMap, not Kueue's Configuration ({kueue.namespace}/{kueue.config_map})")
    entries = data.get("data")
    text = entries.get(kueue.config_key) if isinstance(entries, dict) else None
    if not isinstance(text, str):
        return _unreadable(
            document,
            origin,
            f"the ConfigMap has no data key {kueue.config_key!r}: Kueue starts on its built-in defaults",
        )
    return _configuration_text(text, document, origin, policy)


def _configuration_text(text: str, carrier: Document, origin: Origin, policy: Policy) -> KueueObject:
    """The Configuration in a ConfigMap's key, its lines mapped to the ConfigMap's file.

    Lines map one to one only when the key is a literal block (``key: |``, as Kueue's
    manifests and RFC-0033 write it); otherwise every finding points at the key's line.
    """
    key = FieldPath(("data", policy.kueue.config_key))
    key_line = carrier.line_of(key)
    literal = _value_style(carrier.node, policy.kueue.config_key) == "|"
    try:
        node, data = load_single(text)
    except RecursionError:
        return _unreadable(carrier, origin, "not valid YAML: nested too deeply to read")
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        where = f"line {key_line + line} of the file" if literal else f"line {line} of {policy.kueue.config_key}"
        return _unreadable(carrier, origin, f"not valid YAML: character {exc.character:#06x} ({where}) is not allowed")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = ""
        if mark is not None and literal:
            where = f" (line {key_line + mark.line + 1} of the file)"
        elif mark is not None and carrier.node is None:  # not from a file (the webhook): the key's own line
            where = f" (line {mark.line + 1} of {policy.kueue.config_key})"
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        return _unreadable(carrier, origin, f"not valid YAML{where}: {problem}")
    if not isinstance(data, dict):
        return _unreadable(carrier, origin, "not a YAML mapping (a Configuration)")
    embedded = ShiftedDocument(carrier.source, carrier.line, data, node, offset=key_line, literal=literal)
    return _configuration(data, embedded, carrier, origin, policy)


def _value_style(node: yaml.Node | None, key: str) -> str | None:
    """The YAML style of ``data.<key>`` in a ConfigMap's node (``|`` for a literal block)."""
    for name in ("data", key):
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if getattr(k, "value", None) == name), None)
    return node.style if isinstance(node, yaml.ScalarNode) else None


def _unreadable(carrier: Document, origin: Origin, why: str) -> KueueObject:
    return KueueObject(CONFIGURATION, "", "", {}, carrier, origin, carrier=carrier, unreadable=why)


def _configuration(
    data: dict[str, Any], document: Document, carrier: Document | None, origin: Origin, policy: Policy
) -> KueueObject:
    return KueueObject(CONFIGURATION, "", "", data, document, origin, carrier=carrier)


def container_images(deployment: KueueObject) -> list[str]:
    template = deployment.spec.get("template")
    pod = template.get("spec") if isinstance(template, dict) else None
    containers = pod.get("containers") if isinstance(pod, dict) else None
    return [
        str(c["image"])
        for c in (containers if isinstance(containers, list) else [])
        if isinstance(c, dict) and isinstance(c.get("image"), str)
    ]
