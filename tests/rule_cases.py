"""Loads ``rule_examples.yaml`` into runnable cases (shared by the engine, server and CLI tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from support import delete_path, load_jobset, set_path

from webhook.config import Policy, policy_from_mapping
from webhook.rules import UserInfo

EXAMPLES = Path(__file__).parent / "rule_examples.yaml"
DYNAMIC_FIXTURES = {"rfc-4.3.1-dynamic", "pathways-dynamic", "falcon-migration", "falcon-before-migration"}


@dataclass
class RuleCase:
    rule: str
    name: str
    jobset: str
    fires: bool
    mode: str
    sets: dict[str, Any] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    user: UserInfo = field(default_factory=UserInfo)
    path: str | None = None
    count: int | None = None
    message: str | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}: {self.name}"

    def object(self) -> dict[str, Any]:
        obj = load_jobset(self.jobset)
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
            cases.append(
                RuleCase(
                    rule=rule,
                    name=item["case"],
                    jobset=item["jobset"],
                    fires=item["fires"],
                    mode=item.get("mode") or ("dynamic" if item["jobset"] in DYNAMIC_FIXTURES else "static"),
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
