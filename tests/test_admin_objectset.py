"""The judged set: input ∪ state, the input winning by kind/namespace/name; which kinds are known."""

from __future__ import annotations

from typing import Any

from webhook.admin.kueueobjects import CLUSTER_QUEUE, NODE, TOPOLOGY, KueueObject, Skipped
from webhook.admin.objectset import assemble
from webhook.objects.sources import Document
from webhook.policy.config import Policy

KQ = "kueue.x-k8s.io/v1beta2"


def _docs(*objects: Any) -> list[Document]:
    return [Document("f.yaml", i + 1, o) for i, o in enumerate(objects)]


def _queue(name: str, nominal: int) -> dict[str, Any]:
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {"nominal": nominal}}


def test_the_input_replaces_the_states_object_and_keeps_the_others() -> None:
    state = _docs(_queue("team-a", 1), _queue("team-b", 1), {"apiVersion": "v1", "kind": "NodeList", "items": []})
    inputs = _docs(_queue("team-a", 2), {"apiVersion": "v1", "kind": "Pod"})
    objects, entries = assemble(inputs, state, Policy())
    assert {o.name: o.spec["nominal"] for o in objects.of(CLUSTER_QUEUE)} == {"team-a": 2, "team-b": 1}
    assert [type(e.read) for e in entries] == [KueueObject, Skipped]  # results only for the input
    assert objects.knows(NODE) and objects.of(NODE) == []  # an empty typed list: a known zero
    assert [k.plural for k in objects.missing({"Nodes", "Topologies", "ClusterQueues"})] == ["Topologies"]
    assert not objects.knows(TOPOLOGY)


def test_an_input_typed_list_gives_one_entry_per_item() -> None:
    inputs = _docs({"apiVersion": KQ, "kind": "ClusterQueueList", "items": [_queue("a", 1), _queue("b", 1)]})
    objects, entries = assemble(inputs, [], Policy())
    assert [e.read.name for e in entries if isinstance(e.read, KueueObject)] == ["a", "b"]
    assert objects.knows(CLUSTER_QUEUE)
