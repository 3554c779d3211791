""" "Did you mean": one edit apart, or only the case."""

from __future__ import annotations

import pytest

from webhook.kube.typos import did_you_mean, one_edit_apart


@pytest.mark.parametrize(
    ("a", "b", "apart"),
    [
        ("kubemakr", "kubemaker", True),  # dropped
        ("kubemakerr", "kubemaker", True),  # added
        ("kubemaler", "kubemaker", True),  # changed
        ("kubemkaer", "kubemaker", True),  # neighbours swapped
        ("kubemaker", "kubemaker", False),  # the same is no typo
        ("kubmakre", "kubemaker", False),  # two edits
        ("pod", "job", False),
        ("", "a", True),
    ],
)
def test_one_edit_apart(a: str, b: str, apart: bool) -> None:
    assert one_edit_apart(a, b) is apart
    assert one_edit_apart(b, a) is apart


def test_did_you_mean() -> None:
    kinds = ("JobSet", "Job", "Deployment")
    assert did_you_mean("Jobset", kinds) == "JobSet"
    assert did_you_mean("jobset", kinds) == "JobSet"  # only the case: two edits, still a typo
    assert did_you_mean("Jobs", kinds) == "Job"
    assert did_you_mean("Deploymnet", kinds) == "Deployment"
    assert did_you_mean("JobSet", kinds) is None  # known
    assert did_you_mean("Pod", kinds) is None
    assert did_you_mean("Jo", kinds) is None  # too short to tell
