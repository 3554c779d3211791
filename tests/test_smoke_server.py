from __future__ import annotations

import httpx
from support import RunningServer, load_jobset, review


def test_example_review_is_admitted_over_tls(static_server: RunningServer, client: httpx.Client) -> None:
    body = review(load_jobset("rfc-4.6-static"), uid="u-1")
    reply = client.post(f"{static_server.url}/mutate", json=body)
    assert reply.status_code == 200
    assert reply.json()["response"] == {"uid": "u-1", "allowed": True}
