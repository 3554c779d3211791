"""Fixtures are real JobSets: each validates against the JobSet CRD's own schema.

The rule examples' *allowed* cases must stay valid JobSets too, so a passing example
never passes only because it is something the API server would refuse anyway.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jsonschema
import pytest
import yaml
from rule_cases import CASES, RuleCase
from support import JOBSETS, SHARED


@lru_cache(maxsize=1)
def jobset_validator() -> jsonschema.protocols.Validator:
    crd = yaml.safe_load((SHARED / "crds" / "jobset.x-k8s.io_jobsets.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema = version["schema"]["openAPIV3Schema"]
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)  # type: ignore[no-any-return]


def errors(obj: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in jobset_validator().iter_errors(obj)]


@pytest.mark.parametrize("path", sorted(JOBSETS.glob("*.yaml")), ids=lambda p: p.stem)
def test_fixture_jobsets_match_the_crd(path: Any) -> None:
    assert errors(yaml.safe_load(path.read_text())) == []


def test_the_schema_catches_a_broken_jobset() -> None:
    broken = yaml.safe_load((JOBSETS / "rfc-4.6-static.yaml").read_text())
    broken["spec"]["replicatedJobs"][0]["replicas"] = "two"
    assert errors(broken)


ALLOWED = [case for case in CASES if not case.fires and case.rule != "jobset-malformed"]


@pytest.mark.parametrize("case", ALLOWED, ids=lambda c: c.id)
def test_allowed_examples_are_valid_jobsets(case: RuleCase) -> None:
    assert errors(case.object()) == []
