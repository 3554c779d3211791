"""The training run of the profile-guided build: the decision path over the fixture corpus.

    TPU_ADMISSION_MYPYC=1 TPU_ADMISSION_PGO=generate:/tmp/pgo pip install --no-build-isolation --no-deps .
    python bench/pgo_train.py [--rounds 2000]      # (in place: PYTHONPATH=. after build_ext --inplace)
    TPU_ADMISSION_MYPYC=1 TPU_ADMISSION_PGO=use:/tmp/pgo pip wheel --no-build-isolation --no-deps .

The instrumented build (``setup.py``) counts which branches and functions of the
compiled modules run; this script makes them run as a cluster's submissions would: every
JobSet, Job and Deployment in ``tests/fixtures``, under the policy mode it is written
for, in a production namespace (labelled) and a dev one (labels removed: answered with a
patch), as a CREATE through ``/mutate`` and ``/validate`` and as an UPDATE, plus a
broken copy of each (no node selector, a pod priority class, ``spec.suspend``) so the
denial path is trained too. It is the fixture corpus, not the benchmark's bodies, so the
profile describes the rules' real mix. The Dockerfile runs it between the two builds.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
#: written for a dynamic-mode cluster (``tests/rule_cases.py`` has the same list, and
#: ``tests/test_pgo_train.py`` holds the two equal: the image build copies fixtures only)
DYNAMIC = {"rfc-4.3.1-dynamic", "pathways-dynamic", "falcon-migration", "falcon-before-migration", "rfc-job-dynamic"}


def corpus() -> list[tuple[str, dict[str, Any]]]:
    """``(mode, object)`` for every fixture and a broken copy of each."""
    objects = []
    for folder in ("jobsets", "jobs", "deployments"):
        for path in sorted((FIXTURES / folder).glob("*.yaml")):
            obj = yaml.safe_load(path.read_text())
            mode = "dynamic" if path.stem in DYNAMIC else "static"
            objects.append((mode, obj))
            objects.append((mode, broken(obj)))
    return objects


def broken(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy with the usual mistakes: no node selector, a pod priority class, ``spec.suspend``."""
    obj = copy.deepcopy(obj)
    spec = obj.get("spec", {})
    spec["suspend"] = False
    for job in spec.get("replicatedJobs", []):
        pod = job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
        pod["nodeSelector"] = {}
        pod["priorityClassName"] = "high"
    pod = spec.get("template", {}).get("spec", {})
    if pod:
        pod["nodeSelector"] = {}
        pod["priorityClassName"] = "high"
    return obj


def review(obj: dict[str, Any], namespace: str, operation: str) -> bytes:
    from webhook.objects.kinds import JUDGED, kind_of_document

    kind = JUDGED[kind_of_document(obj) or "JobSet"]
    request = {
        "uid": "pgo-training",
        "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:aistudio:submitter", "groups": []},
        "object": obj,
        "oldObject": obj if operation == "UPDATE" else None,
    }
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}).encode()


def bodies() -> list[tuple[str, bytes]]:
    """``(mode, review bytes)``: each object in a production and a dev namespace, created and updated."""
    out = []
    for mode, obj in corpus():
        dev = copy.deepcopy(obj)
        dev.get("metadata", {}).pop("labels", None)
        for namespace, target in (("kubemaker", obj), ("default", dev)):
            for operation in ("CREATE", "UPDATE"):
                out.append((mode, review(target, namespace, operation)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args(argv)

    import webhook.engine.decision
    from webhook.engine.decision import decide
    from webhook.rules.catalog import load_policy, policy_from_mapping
    from webhook.serving.app import admission_facts
    from webhook.wire.jsonwire import encode
    from webhook.wire.reviews import parse_review, review_response

    if not str(webhook.engine.decision.__file__).endswith(".so"):
        # Pure Python would write no profile, and the "use" build would then be a plain one.
        where = webhook.engine.decision.__file__
        print(f"pgo training: {where} is not compiled; install the instrumented build", file=sys.stderr)
        return 2
    policies = {"static": load_policy(None), "dynamic": policy_from_mapping({"mode": "dynamic"})}
    cases = bodies()
    started = time.perf_counter()
    answers = 0
    for _ in range(args.rounds):
        for mode, body in cases:
            request = parse_review(body)
            for stage in ("mutate", "validate"):
                facts = admission_facts(request, stage, None)
                decision = decide(request.object, facts, policies[mode])
                encode(review_response(request.uid, decision))
                answers += 1
    seconds = time.perf_counter() - started
    print(f"pgo training: {answers} decisions over {len(cases)} reviews in {seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
