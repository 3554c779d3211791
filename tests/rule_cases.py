"""Loads ``rule_examples.yaml`` into runnable cases (shared by the engine, server and CLI tests)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from support import delete_path, load_deployment, load_job, load_jobset, set_path

from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.objects.request import UserInfo
from webhook.policy.config import Policy
from webhook.rules.catalog import policy_from_mapping

EXAMPLES = Path(__file__).parent / "rule_examples.yaml"
DYNAMIC_FIXTURES = {
    "rfc-4.3.1-dynamic",
    "pathways-dynamic",
    "falcon-migration",
    "falcon-before-migration",
    "rfc-job-dynamic",
}
#: the key naming a case's base object, and where that kind's fixtures are
LOADERS: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    "jobset": (JOBSET, load_jobset),
    "job": (JOB, load_job),
    "deployment": (DEPLOYMENT, load_deployment),
}


@dataclass
class RuleCase:
    rule: str
    name: str
    #: the base fixture's name (a JobSet, Job or Deployment, as ``kind`` says)
    base: str
    fires: bool
    mode: str
    kind: str = JOBSET
    sets: dict[str, Any] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    user: UserInfo = field(default_factory=UserInfo)
    path: str | None = None
    count: int | None = None
    message: str | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}: {self.kind} {self.name}" if self.kind != JOBSET else f"{self.rule}: {self.name}"

    def object(self) -> dict[str, Any]:
        loader = next(load for kind, load in LOADERS.values() if kind == self.kind)
        obj = loader(self.base)
        for path in self.deletes:
            delete_path(obj, path)
        for path, value in self.sets.items():
            set_path(obj, path, value)
        return obj

    def policy(self) -> Policy:
        return policy_from_mapping({"mode": self.mode, **self.config}, f"case {self.id}")

    @property
    def plain(self) -> bool:
        """No config or user of its own: can run through the default server and CLI."""
        return not self.config and self.user == UserInfo()


def load_cases() -> list[RuleCase]:
    data = yaml.safe_load(EXAMPLES.read_text())
    cases = []
    for rule, items in data.items():
        for item in items:
            user = item.get("user") or {}
            (key,) = [key for key in LOADERS if key in item]
            base = item[key]
            cases.append(
                RuleCase(
                    rule=rule,
                    name=item["case"],
                    base=base,
                    kind=LOADERS[key][0],
                    fires=item["fires"],
                    mode=item.get("mode") or ("dynamic" if base in DYNAMIC_FIXTURES else "static"),
                    sets=item.get("set") or {},
                    deletes=item.get("delete") or [],
                    config=item.get("config") or {},
                    user=UserInfo(user.get("username", ""), tuple(user.get("groups", ()))),
                    path=item.get("path"),
                    count=item.get("count"),
                    message=item.get("message"),
                )
            )
    return cases


CASES = load_cases()
