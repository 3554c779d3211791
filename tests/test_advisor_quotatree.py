"""The ``quota`` view: the cohort tree with every ClusterQueue's numbers, as text and as JSON."""

from __future__ import annotations

from decimal import Decimal

from explain_builders import TPU, amounts

from webhook.advisor.quotatree import quota_document, render_quota
from webhook.explain.inputs import Amounts, CohortQuota, QueueQuota, QuotaPicture


def _picture() -> QuotaPicture:
    """RFC-0033's tpu-pool: team-a borrows 64 chips team-b lends; a research sub-cohort; a queue alone."""
    return QuotaPicture(
        cluster_queues={
            "team-a": QueueQuota(
                "team-a",
                "tpu-pool",
                {
                    "tpu7x": {TPU: Amounts(*map(Decimal, (256, 320, 64, 0, 128, 128)))},
                    "cpu-standard": {"memory": amounts(2**42, 100 * 2**30)},
                },
            ),
            "team-b": QueueQuota(
                "team-b",
                "tpu-pool",
                {"tpu7x": {TPU: Amounts(*map(Decimal, (256, 192, 0, 64, 0)), lending_limit=Decimal(64))}},
            ),
            "research": QueueQuota("research", "labs", {"tpu7x": {TPU: amounts(64, 0, 0, 0, 32)}}),
            "solo": QueueQuota("solo", None, {"tpu7x": {TPU: amounts(16, 16)}}),
        },
        cohorts={
            "tpu-pool": CohortQuota("tpu-pool"),
            "labs": CohortQuota("labs", "tpu-pool", {"tpu7x": {TPU: amounts(32)}}),
        },
    )


TEXT = """\
cohort tpu-pool
  cpu-standard memory
    team       nominal  in use  borrowed  lent  pending
    tpu-pool/
      team-a       4Ti   100Gi         0     0        0  #......................
  tpu7x google.com/tpu
    team          nominal  in use  borrowed  lent  pending
    tpu-pool/
      team-a          256     320        64     0      128  ################++++
      team-b          256     192         0    64        0  ############====
      labs/            32       0         0     0        0  ..
        research       64       0         0     0       32  ....
    limits: team-a borrows at most 128; team-b lends at most 64

ClusterQueue solo (no cohort)
  tpu7x google.com/tpu
    team  nominal  in use  borrowed  lent  pending
    solo       16      16         0     0        0  ############################

# in use   = lent to other teams   . free   + borrowed (bar to one scale)
"""


def test_text_is_the_tree_per_flavor_and_resource() -> None:
    text = render_quota(_picture())
    assert text == TEXT
    assert max(len(line) for line in text.splitlines()) <= 80


def _numbers(nominal: int, in_use: int = 0, borrowed: int = 0, lent: int = 0, pending: int = 0) -> dict[str, object]:
    return {
        "nominal": nominal,
        "inUse": in_use,
        "borrowed": borrowed,
        "lent": lent,
        "pending": pending,
        "borrowingLimit": None,
        "lendingLimit": None,
    }


def test_json_is_the_same_tree() -> None:
    assert quota_document(_picture()) == {
        "cohorts": [
            {
                "name": "tpu-pool",
                "flavors": {},
                "clusterQueues": [
                    {
                        "name": "team-a",
                        "flavors": {
                            "cpu-standard": {"memory": _numbers(2**42, 100 * 2**30)},
                            "tpu7x": {TPU: {**_numbers(256, 320, 64, 0, 128), "borrowingLimit": 128}},
                        },
                    },
                    {"name": "team-b", "flavors": {"tpu7x": {TPU: {**_numbers(256, 192, 0, 64), "lendingLimit": 64}}}},
                ],
                "cohorts": [
                    {
                        "name": "labs",
                        "flavors": {"tpu7x": {TPU: _numbers(32)}},
                        "clusterQueues": [{"name": "research", "flavors": {"tpu7x": {TPU: _numbers(64, 0, 0, 0, 32)}}}],
                        "cohorts": [],
                    }
                ],
            }
        ],
        "clusterQueues": [{"name": "solo", "flavors": {"tpu7x": {TPU: _numbers(16, 16)}}}],
    }


def test_an_implicit_cohort_and_an_empty_picture() -> None:
    # a cohort a queue names without a Cohort object is a root all the same (Kueue makes it)
    picture = QuotaPicture({"q": QueueQuota("q", "implicit", {"f": {"cpu": amounts(1)}})})
    assert render_quota(picture).splitlines()[:4] == [
        "cohort implicit",
        "  f cpu",
        "    team       nominal  in use  borrowed  lent  pending",
        "    implicit/",
    ]
    assert render_quota(QuotaPicture()) == "no ClusterQueues\n"
    assert quota_document(QuotaPicture()) == {"cohorts": [], "clusterQueues": []}
