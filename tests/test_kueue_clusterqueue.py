"""What a ClusterQueue's nominal quota holds without borrowing (``webhook.kueue.clusterqueue.nominal_fit``)."""

from __future__ import annotations

from decimal import Decimal

from quota_fixtures import CQ, cluster_queue, q, snapshot

from webhook.kueue.clusterqueue import NominalFit, nominal_fit


def test_nominal_fit_counts_pods_within_nominal_and_skips_zero_requests() -> None:
    """The question ``replicas-beyond-nominal`` asks: pods of one shape in nominal, no borrowing.
    A zero request (cpu: 0) takes no quota and divides nothing."""
    view = snapshot(cluster_queue(CQ, [[("default", {"cpu": q("10", borrowing="90"), "memory": q("64Gi")})]]))
    info = view.cluster_queue(CQ)
    assert info is not None
    gi = Decimal(2**30)
    per_pod = {"cpu": Decimal(4), "memory": Decimal(8) * gi}
    assert nominal_fit(info, "default", per_pod, 2) == NominalFit(within=2, over=())
    assert nominal_fit(info, "default", per_pod, 3) == NominalFit(within=2, over=(("cpu", Decimal(12), Decimal(10)),))
    zero_cpu = {"cpu": Decimal(0), "memory": Decimal(8) * gi}
    assert nominal_fit(info, "default", zero_cpu, 9) == NominalFit(
        within=8, over=(("memory", Decimal(72) * gi, Decimal(64) * gi),)
    )
    # a resource the flavor does not cover is resource-not-covered's to report
    assert nominal_fit(info, "default", {"nvidia.com/gpu": Decimal(1)}, 5) == NominalFit(within=5, over=())


def test_nominal_fit_of_quantities_at_the_parsers_bounds() -> None:
    """A nominal of 10^31 (where the parser holds larger ones) over a pod of 1n is 10^40 pods:
    more digits than Python's default context divides, none too many for the quantities'."""
    view = snapshot(cluster_queue(CQ, [[("default", {"cpu": q("1e400")})]]))
    info = view.cluster_queue(CQ)
    assert info is not None
    assert nominal_fit(info, "default", {"cpu": Decimal("1e-9")}, 10**50) == NominalFit(
        within=10**40, over=(("cpu", Decimal("1e-9") * 10**50, Decimal("1e31")),)
    )
