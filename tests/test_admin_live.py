"""The judged set from the watch cache's snapshot: the same objects ``lint-queues`` reads from files."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Mapping
from typing import Any

import pytest
from admin_fixtures import cluster_state, documents, dynamic_nodes, label, node_list, rfc_objects
from kueue_cache import cache_of

from webhook.admin import AdminContext
from webhook.admin.kueueobjects import COHORT, KINDS, NODE
from webhook.admin.live import judged_set
from webhook.admin.objectset import ObjectSet, assemble
from webhook.cluster import kinds as k
from webhook.cluster.store import ClusterStore
from webhook.kueue.clusterqueue import ClusterQueueInfo, parse_cluster_queue
from webhook.kueue.cohort import CohortInfo
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.policy.config import Policy
from webhook.quota.objects import NodeInfo

POLICY = Policy(mode="dynamic")
KQ = "kueue.x-k8s.io/v1beta2"
#: a state of eight cubes, so a Node event can add the ninth
CUBES = 8

Objects = list[dict[str, Any]]


def view(
    objects: ObjectSet,
    queues: Mapping[str, ClusterQueueInfo],
    cohorts: Mapping[str, CohortInfo],
    flavors: Mapping[str, FlavorInfo],
    nodes: Collection[NodeInfo],
) -> dict[str, Any]:
    """What the admin rules read: the objects (Nodes only as parsed), the kinds known, the parsed
    views in order (a message lists them in it)."""
    return {
        "objects": {
            kind: {key: obj.data for key, obj in held.items()}
            for kind, held in objects.objects.items()
            if kind != NODE.kind
        },
        "known": sorted(objects.known),
        "queues": list(queues.items()),
        "cohorts": list(cohorts.items()),
        "flavors": list(flavors.items()),
        "nodes": sorted(nodes, key=lambda node: node.name),  # the store indexes them in its own order
    }


def files_view(state: Objects) -> tuple[dict[str, Any], ObjectSet]:
    """``lint-queues``' view of ``state`` as a state file, and its set."""
    objects, _ = assemble([], documents(state, "state.yaml", nodes=False), POLICY)
    ctx = AdminContext(POLICY, objects)
    return view(objects, ctx.queues, ctx.cohorts, ctx.flavors, ctx.nodes), objects


def store_view(store: ClusterStore) -> dict[str, Any]:
    live = judged_set(store.snapshot())
    return view(live.objects, live.queues, live.cohorts, live.flavors, live.nodes)


def find(objects: Objects, key: str) -> dict[str, Any]:
    return next(o for o in objects if label(o) == key)


def raised(obj: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 128
    return changed


def edit_cluster_queue(objects: Objects, nodes: Objects) -> tuple[k.Kind, str, dict[str, Any]]:
    team_a = raised(find(objects, "ClusterQueue/team-a"))
    objects[objects.index(find(objects, "ClusterQueue/team-a"))] = team_a
    return k.CLUSTER_QUEUES, "MODIFIED", team_a


def delete_cohort(objects: Objects, nodes: Objects) -> tuple[k.Kind, str, dict[str, Any]]:
    cohort = next(o for o in objects if o["kind"] == "Cohort")
    # the watch still lists Cohorts, none: a known zero, as an empty typed list says in a file
    objects[objects.index(cohort)] = {"apiVersion": KQ, "kind": "CohortList", "items": []}
    return k.COHORTS, "DELETED", cohort


def add_flavor(objects: Objects, nodes: Objects) -> tuple[k.Kind, str, dict[str, Any]]:
    flavor = {
        "apiVersion": KQ,
        "kind": "ResourceFlavor",
        "metadata": {"name": "tpu7x-spare"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}, "topologyName": "tpu7x-topology"},
    }
    objects.append(flavor)
    return k.RESOURCE_FLAVORS, "ADDED", flavor


def edit_configuration(objects: Objects, nodes: Objects) -> tuple[k.Kind, str, dict[str, Any]]:
    config_map = copy.deepcopy(find(objects, "Configuration"))
    key = POLICY.kueue.config_key
    config_map["data"][key] = config_map["data"][key] + "unknownField: true\n"
    objects[objects.index(find(objects, "Configuration"))] = config_map
    return k.KUEUE_CONFIG, "MODIFIED", config_map


def add_node(objects: Objects, nodes: Objects) -> tuple[k.Kind, str, dict[str, Any]]:
    node = dynamic_nodes(CUBES + 1)[-1]
    nodes.append(node)
    return k.NODES, "ADDED", node


EVENTS: dict[str, Callable[[Objects, Objects], tuple[k.Kind, str, dict[str, Any]]]] = {
    "a ClusterQueue's nominal changed": edit_cluster_queue,
    "a Cohort deleted": delete_cohort,
    "a ResourceFlavor added": add_flavor,
    "Kueue's Configuration changed": edit_configuration,
    "a Node added": add_node,
}


@pytest.mark.parametrize("event", EVENTS.values(), ids=list(EVENTS))
def test_after_an_event_the_guard_reads_what_lint_queues_reads_from_the_same_objects_as_files(
    event: Callable[[Objects, Objects], tuple[k.Kind, str, dict[str, Any]]],
) -> None:
    objects, nodes = rfc_objects("dynamic"), dynamic_nodes(CUBES)
    namespaces = cluster_state("dynamic")[0]
    store = cache_of([*objects, namespaces, node_list(nodes)], POLICY)
    store_view(store)  # the set before the event, memoized
    kind, verb, obj = event(objects, nodes)
    store.apply(kind, verb, obj)
    expected, from_files = files_view([*objects, namespaces, node_list(nodes)])
    assert store_view(store) == expected
    reasons = judged_set(store.snapshot()).objects.reasons
    assert reasons == {
        kind.plural: f"the webhook's cache cannot say ({kind.plural}: not in the test's cluster)"
        for kind in KINDS
        if not from_files.knows(kind)
    }


def test_the_set_is_worked_out_once_per_state_of_the_kept_documents() -> None:
    """Status writes, Workload events and Node events publish no new kept document: the set is
    the one memoized; a spec change is a new set. The Nodes are the snapshot's own, every time."""
    objects = rfc_objects("dynamic")
    store = cache_of([*objects, *cluster_state("dynamic", {"cubes": CUBES})], POLICY)
    first = judged_set(store.snapshot())
    team_a = copy.deepcopy(find(objects, "ClusterQueue/team-a"))
    team_a["status"] = {"admittedWorkloads": 3}  # Kueue rewrites status on every admission
    store.apply(k.CLUSTER_QUEUES, "MODIFIED", team_a)
    store.apply(
        k.WORKLOADS, "ADDED", {"apiVersion": KQ, "kind": "Workload", "metadata": {"namespace": "a", "name": "w"}}
    )
    node = dynamic_nodes(CUBES + 1)[-1]
    store.apply(k.NODES, "ADDED", node)
    again = judged_set(store.snapshot())
    assert (again.objects, again.queues, again.cohorts, again.flavors) == (
        first.objects,
        first.queues,
        first.cohorts,
        first.flavors,
    )
    assert again.objects is first.objects
    assert sorted(n.name for n in again.nodes) == sorted([*(n.name for n in first.nodes), node["metadata"]["name"]])
    store.apply(k.CLUSTER_QUEUES, "MODIFIED", raised(team_a))
    edited = judged_set(store.snapshot())
    assert edited.objects is not first.objects
    assert edited.queues["team-a"] == parse_cluster_queue(raised(team_a))


def test_a_kind_whose_watch_breaks_is_unknown_with_the_watchs_reason_though_the_store_holds_it() -> None:
    store = cache_of([*rfc_objects("dynamic"), *cluster_state("dynamic", {"cubes": CUBES})], POLICY)
    judged_set(store.snapshot())
    store.availability.mark_absent(k.COHORTS.name, "forbidden (403): check its RBAC")
    store.availability.mark_absent(k.NODES.name, "forbidden (403): check its RBAC")
    live = judged_set(store.snapshot())
    assert {plural: live.objects.reasons.get(plural) for plural in ("Cohorts", "Nodes")} == {
        "Cohorts": "the webhook's cache cannot say (Cohorts: forbidden (403): check its RBAC)",
        "Nodes": "the webhook's cache cannot say (Nodes: forbidden (403): check its RBAC)",
    }
    assert (live.objects.of(COHORT), live.cohorts, list(live.nodes)) == ([], {}, [])
    assert not live.objects.knows_plural("Cohorts") and not live.objects.knows_plural("Nodes")
