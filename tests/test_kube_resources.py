"""One pod's requests as Kubernetes counts them (``webhook.kube.resources.pod_requests``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from webhook.kube.resources import pod_requests


def requests(cpu: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"cpu": cpu}, {}


def test_containers_add_up_and_a_request_defaults_to_its_limit() -> None:
    assert pod_requests([requests("2"), ({}, {"cpu": "3"})], []) == {"cpu": Decimal(5)}


def test_plain_init_containers_count_at_their_largest() -> None:
    assert pod_requests([requests("2")], [({"cpu": "8"}, {}, False), ({"cpu": "1"}, {}, False)]) == {"cpu": 8}


def test_sidecars_add_to_the_main_containers() -> None:
    """Kubernetes (and Kueue, which uses its helper): restartable init containers run beside the main ones."""
    assert pod_requests([requests("2")], [({"cpu": "1"}, {}, True)]) == {"cpu": 3}


def test_an_init_container_after_a_sidecar_runs_beside_it() -> None:
    # sidecar 1 CPU, then a plain init container of 4: 5 while it runs; afterwards 2 + 1 = 3
    assert pod_requests([requests("2")], [({"cpu": "1"}, {}, True), ({"cpu": "4"}, {}, False)]) == {"cpu": 5}
    # the plain one first: it runs alone (4), then sidecar + main (3)
    assert pod_requests([requests("2")], [({"cpu": "4"}, {}, False), ({"cpu": "1"}, {}, True)]) == {"cpu": 4}
