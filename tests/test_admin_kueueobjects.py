"""Reading Kueue's objects: kinds, typed lists, Kueue's ConfigMap with its lines, what is skipped."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from webhook.admin.kueueobjects import (
    CLUSTER_QUEUE,
    CONFIGURATION,
    LOCAL_QUEUE,
    KueueObject,
    Skipped,
    TypedList,
    container_images,
    read_document,
)
from webhook.kube.fieldpaths import FieldPath
from webhook.kube.manifestyaml import FastManifestLoader, ManifestLoader
from webhook.objects.sources import Document, _parse
from webhook.policy.config import Policy

POLICY = Policy()
KQ = "kueue.x-k8s.io/v1beta2"


def _read(data: Any) -> KueueObject | Skipped | TypedList:
    return read_document(Document("f.yaml", 1, data), "input", POLICY)


def test_kueue_kinds_are_read_with_their_scope() -> None:
    queue = _read({"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": "team-a"}})
    assert (
        isinstance(queue, KueueObject) and queue.kind is CLUSTER_QUEUE and queue.key == ("ClusterQueue", "", "team-a")
    )
    local = _read({"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": "q"}})
    assert isinstance(local, KueueObject) and local.kind is LOCAL_QUEUE and local.namespace == "default"
    assert local.label == "LocalQueue/default/q"


@pytest.mark.parametrize(
    ("data", "reason", "mistake"),
    [
        ({"apiVersion": "v1", "kind": "Pod"}, "not one of Kueue's objects the admin guard judges (v1 Pod)", False),
        ({"apiVersion": KQ, "kind": "ClusterQeue"}, "did you mean kind: ClusterQueue?", True),
        ({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue"}, "judges kueue.x-k8s.io/v1beta2", True),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}},
            "not Kueue's controller",
            False,
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "kueue-system"}},
            "a ConfigMap, not Kueue's Configuration",
            False,
        ),
        (["a", "list"], "not a Kubernetes object", False),
    ],
)
def test_other_documents_are_skipped_saying_why(data: Any, reason: str, mistake: bool) -> None:
    read = _read(data)
    assert isinstance(read, Skipped) and reason in read.reason and read.mistake is mistake


def test_a_typed_list_is_its_kind_even_when_empty() -> None:
    empty = _read({"apiVersion": "v1", "kind": "NodeList", "items": []})
    assert isinstance(empty, TypedList) and empty.kind.plural == "Nodes" and empty.items == ()
    queues = _read(
        {"apiVersion": KQ, "kind": "ClusterQueueList", "items": [{"apiVersion": KQ, "kind": "ClusterQueue"}]}
    )
    assert isinstance(queues, TypedList) and isinstance(queues.items[0], KueueObject)


CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: kueue-manager-config
  namespace: kueue-system
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    fairSharing:
      enable: true
"""


@pytest.mark.parametrize("loader", [ManifestLoader, FastManifestLoader])
def test_kueues_configmap_is_its_configuration_with_the_files_lines(loader: type[ManifestLoader]) -> None:
    (document,), error = _parse(CONFIG_MAP, "cm.yaml", loader)
    assert error is None
    config = read_document(document, "input", POLICY)
    assert isinstance(config, KueueObject) and config.kind is CONFIGURATION and config.carrier is document
    assert config.data["fairSharing"] == {"enable": True}
    assert config.document is not None
    assert config.document.line_of(FieldPath(("fairSharing", "enable"))) == 11
    assert config.document.line_of(FieldPath(("nothing", "here"))) == 7  # the key holding it
    assert config.document.line == 1


def test_a_configuration_that_cannot_be_read_says_why() -> None:
    broken = CONFIG_MAP.replace("    fairSharing:\n      enable: true\n", "    fairSharing: [\n")
    (document,), _ = _parse(broken, "cm.yaml")
    config = read_document(document, "input", POLICY)
    assert isinstance(config, KueueObject) and config.unreadable.startswith("not valid YAML (line 11 of the file)")
    data = yaml.safe_load(CONFIG_MAP)
    del data["data"]
    missing = _read(data)
    assert isinstance(missing, KueueObject) and "has no data key 'controller_manager_config.yaml'" in missing.unreadable


def test_a_bare_configuration_document() -> None:
    config = _read({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"})
    assert isinstance(config, KueueObject) and config.kind is CONFIGURATION and config.carrier is None


def test_the_controllers_images() -> None:
    controller = _read(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
            "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": "kueue:v0.19.2"}, {}]}}},
        }
    )
    assert isinstance(controller, KueueObject) and container_images(controller) == ["kueue:v0.19.2"]


def test_a_configuration_with_a_character_yaml_does_not_allow_says_where() -> None:
    """JSON (``kubectl apply -f x.json``, or the webhook) can carry a control character in the
    key's string; YAML cannot read it. An unreadable Configuration naming the line, not a crash."""
    data = yaml.safe_load(CONFIG_MAP)
    data["data"]["controller_manager_config.yaml"] = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: \x1f\n"
    config = _read(data)
    assert isinstance(config, KueueObject)
    assert config.unreadable == (
        "not valid YAML: character 0x001f (line 2 of controller_manager_config.yaml) is not allowed"
    )
