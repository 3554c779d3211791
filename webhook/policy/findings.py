"""The one record every rule produces and every output format renders."""

from __future__ import annotations

from enum import StrEnum

import msgspec

from webhook.kube.fieldpaths import FieldPath


class Action(StrEnum):
    """What a finding does to the request. ``off`` rules produce no findings."""

    DENY = "deny"
    WARN = "warn"
    OFF = "off"


class Finding(msgspec.Struct):
    """One broken rule at one place.

    ``problem`` says what is wrong (with the offending value), ``fix`` what to do about
    it. ``action`` is filled in by the engine from the policy, never by the rule, and so
    is ``excepted``: the reason of the policy exception that turned it into a warning.
    Not frozen: every finding is made fresh for one request, and the engine sets its
    action in place.
    """

    rule: str
    path: FieldPath
    problem: str
    fix: str
    action: Action = Action.DENY
    excepted: str = ""

    @property
    def message(self) -> str:
        text = f"{self.problem}; {self.fix}" if self.fix else self.problem
        return f"{text} (allowed by a policy exception: {self.excepted})" if self.excepted else text

    def line(self) -> str:
        """``[rule-id] <path>: <what is wrong>; <how to fix>``."""
        if self.fix and not self.excepted:  # the usual finding: one string built, not two
            return f"[{self.rule}] {self.path}: {self.problem}; {self.fix}"
        return f"[{self.rule}] {self.path}: {self.message}"
