"""Node fit by shape (``webhook.cluster.nodes``): no scan of every node, unknown is not zero."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from webhook.cluster.nodes import NodeIndex
from webhook.policy.config import Policy
from webhook.quota.objects import parse_node


def node(name: str, cpu: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec, "status": {"allocatable": {"cpu": cpu}}}


def index(*nodes: dict[str, Any]) -> NodeIndex:
    out = NodeIndex(Policy().tpu)
    for obj in nodes:
        out.put(parse_node(obj))
    return out


def test_nodes_of_one_machine_type_share_one_shape() -> None:
    nodes = index(*(node(f"n{i}", "8", {"pool": "a"}) for i in range(100)), node("big", "64", {"pool": "b"}))
    assert len(nodes.shapes) == 2
    fit = nodes.fit({}, {"cpu": Decimal(100)}, (), frozenset())
    assert (fit.fits, fit.matching, fit.closest.name if fit.closest else None) == (False, 101, "big")
    assert nodes.fit({"pool": "b"}, {"cpu": Decimal(32)}, (), frozenset()).fits
    assert not nodes.fit({"pool": "a"}, {"cpu": Decimal(32)}, (), frozenset()).fits


def test_a_cordoned_node_takes_no_pods() -> None:
    nodes = index(node("cordoned", "64", unschedulable=True), node("small", "8"))
    fit = nodes.fit({}, {"cpu": Decimal(32)}, (), frozenset())
    assert (fit.fits, fit.matching) == (False, 1)
    nodes.put(parse_node(node("cordoned", "64")))  # uncordoned
    assert nodes.fit({}, {"cpu": Decimal(32)}, (), frozenset()).fits


def test_a_resource_no_node_advertises_is_unknown_not_zero() -> None:
    """DD-0018: leave it out of the fit rather than call every node too small."""
    nodes = index(node("n", "8"))
    assert nodes.fit({}, {"cpu": Decimal(4), "example.com/fpga": Decimal(1)}, (), frozenset()).fits
    assert not nodes.fit({}, {"cpu": Decimal(16), "example.com/fpga": Decimal(1)}, (), frozenset()).fits


def test_removing_a_node_updates_shapes_and_chips() -> None:
    tpu = {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}
    obj = node("t", "8", tpu)
    obj["status"]["allocatable"]["google.com/tpu"] = "4"
    nodes = index(obj, node("c", "8"))
    assert nodes.accelerator_chips == 4 and "google.com/tpu" in nodes.advertised
    nodes.remove("t")
    assert nodes.accelerator_chips == 0 and "google.com/tpu" not in nodes.advertised
    assert sum(len(names) for names in nodes.shapes.values()) == 1


def test_chips_are_summed_exactly_as_nodes_come_and_go() -> None:
    """A node advertising 1e400 chips (held at 10^31) beside one of 4: the sum is exact, so
    when it leaves the 4 are still there (Python's default 28 digits would have lost them)."""
    tpu = {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}
    small, huge = node("small", "8", tpu), node("huge", "8", tpu)
    small["status"]["allocatable"]["google.com/tpu"] = "4"
    huge["status"]["allocatable"]["google.com/tpu"] = "1e400"
    nodes = index(huge, small)
    assert nodes.accelerator_chips > Decimal("1e31")
    nodes.remove("huge")
    assert nodes.accelerator_chips == 4


def tpu_host(name: str, pool: str | None, topology: str | None = "4x4x4") -> dict[str, Any]:
    labels = {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}
    if pool is not None:
        labels["cloud.google.com/gke-nodepool"] = pool
    if topology is not None:
        labels["cloud.google.com/gke-tpu-topology"] = topology
    obj = node(name, "208", labels)
    obj["status"]["allocatable"]["google.com/tpu"] = "4"
    return obj


def test_a_node_pool_counts_its_chips_at_the_size_its_topology_declares() -> None:
    """Incremental provisioning: a 4x4x4 pool (16 hosts, 64 chips) comes up without a bad host and is
    completed after repair; the whole-cluster ceiling counts it whole, not at the hosts listed."""
    nodes = index(*(tpu_host(f"a-{i}", "a") for i in range(15)), tpu_host("b-0", "b"))
    assert nodes.accelerator_chips == 64 + 64  # 15 hosts and 1 host listed, two whole cubes
    nodes.remove("b-0")
    assert nodes.accelerator_chips == 64  # the pool's last node gone: the pool is gone
    nodes.put(parse_node(tpu_host("c-0", "c", "2x2x1")))  # a sub-slice pool: one host of 4 chips
    assert nodes.accelerator_chips == 64 + 4
    # without a pool or a topology that reads as one, a node counts as it is
    nodes.put(parse_node(tpu_host("loose", None)))
    nodes.put(parse_node(tpu_host("odd", "d", "cube")))
    assert nodes.accelerator_chips == 64 + 4 + 4 + 4
    for name in ("loose", "odd", "c-0", *(f"a-{i}" for i in range(15))):
        nodes.remove(name)
    assert nodes.accelerator_chips == 0
