"""Fixtures are real objects: each JobSet validates against the JobSet CRD's own schema,
each Job and Deployment against Kubernetes' own OpenAPI schema (``kubernetes-validate``).

The rule examples' *allowed* cases must stay valid objects too, so a passing example
never passes only because it is something the API server would refuse anyway.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from rule_cases import CASES, RuleCase
from support import DEPLOYMENTS, JOBS, JOBSETS, upstream_crd

from webhook.objects.kinds import JOBSET

K8S_VERSION = "1.30"  # the oldest the manifests support


@lru_cache(maxsize=1)
def jobset_validator() -> jsonschema.protocols.Validator:
    crd = upstream_crd("jobset.x-k8s.io_jobsets.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema = version["schema"]["openAPIV3Schema"]
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)  # type: ignore[no-any-return]


def errors(obj: Any) -> list[str]:
    if obj.get("kind") != JOBSET:
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            return [f"{'/'.join(map(str, exc.path))}: {exc.message}"]
        return []
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in jobset_validator().iter_errors(obj)]


FIXTURES = [*sorted(JOBSETS.glob("*.yaml")), *sorted(JOBS.glob("*.yaml")), *sorted(DEPLOYMENTS.glob("*.yaml"))]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixtures_match_their_schema(path: Any) -> None:
    assert errors(yaml.safe_load(path.read_text())) == []


def test_the_schema_catches_a_broken_jobset() -> None:
    broken = yaml.safe_load((JOBSETS / "rfc-4.6-static.yaml").read_text())
    broken["spec"]["replicatedJobs"][0]["replicas"] = "two"
    assert errors(broken)


@pytest.mark.parametrize(("directory", "field"), [(JOBS, "parallelism"), (DEPLOYMENTS, "replicas")])
def test_the_schema_catches_a_broken_job_or_deployment(directory: Any, field: str) -> None:
    broken = yaml.safe_load(next(iter(sorted(directory.glob("*.yaml")))).read_text())
    broken["spec"][field] = "two"
    assert errors(broken)
    broken["spec"][field] = 2
    broken["spec"]["suspended"] = True  # strict: an unknown field is an error too
    assert errors(broken)


ALLOWED = [case for case in CASES if not case.fires and case.rule != "jobset-malformed"]


@pytest.mark.parametrize("case", ALLOWED, ids=lambda c: c.id)
def test_allowed_examples_are_valid_jobsets(case: RuleCase) -> None:
    assert errors(case.object()) == []
