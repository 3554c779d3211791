"""What one ``check`` run found: the per-object results, the unreadable inputs, the counts.

Every output format renders the same ``Report``, and the exit code is worked out here
once, so the formats cannot disagree about what failed the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.engine.decision import Decision
from webhook.objects.sources import Document, SourceError
from webhook.policy.findings import Action, Finding
from webhook.rules import Rule

EXIT_OK, EXIT_DENIED, EXIT_USAGE = 0, 1, 2
#: how many of the files left out the one-line formats name
_NAMED = 10


@dataclass(slots=True)
class CheckResult:
    document: Document
    kind: str
    namespace: str
    name: str
    decision: Decision | None  # None: not a judged kind (JobSet, Job, Deployment), skipped
    skipped: str = ""
    #: the mode that judged it (static or dynamic)
    mode: str = ""
    #: skipped, but likely a mistake: a misspelt kind or apiVersion of a judged kind, or a
    #: document that is not an object at all (``skipped`` says which); fails ``--strict``
    mistake: bool = False
    #: a key or field one edit from one the rules read (``webhook.cli.nearmiss``); fails ``--strict``
    hints: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.decision is None or self.decision.allowed

    @property
    def tier(self) -> str | None:
        return self.decision.tier if self.decision is not None else None

    @property
    def label(self) -> str:
        """``kind/namespace/name`` (``kind/name`` without a namespace): how the object is named in every format."""
        if not isinstance(self.document.data, dict):
            return "(not an object)"
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind or '(no kind)'}/{where}{self.name or '(unnamed)'}"

    @property
    def reported(self) -> list[Finding]:
        """The findings worth showing: deny and warn (``off`` rules produce none)."""
        if self.decision is None:
            return []
        return [f for f in self.decision.findings if f.action in (Action.DENY, Action.WARN)]

    @property
    def notices(self) -> list[str]:
        """Warnings that are not a finding's: an unknown tier, a skipped cluster check."""
        if self.decision is None:
            return []
        lines = {f.line() for f in self.decision.findings}
        return [w for w in self.decision.warnings if w not in lines]

    @property
    def strict_warnings(self) -> list[str]:
        """The warnings ``--strict`` fails on: all but the ones a policy exception granted."""
        if self.decision is None:
            return []
        excepted = {f.line() for f in self.decision.findings if f.excepted}
        return [w for w in self.decision.warnings if w not in excepted]


@dataclass(slots=True)
class Report:
    results: list[CheckResult] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    mode: str = "static"
    #: where the mode came from: ``--mode``, ``config`` or ``default``
    mode_source: str = "default"
    strict: bool = False
    #: files a directory walk did not read (not ``.yaml``, ``.yml`` or ``.json``)
    left_out: list[str] = field(default_factory=list)
    #: the subcommand that made it, as the summary lines name it (``check``, ``lint-queues``)
    command: str = "check"
    #: the rules its findings come from, for SARIF's rule list (empty: the job rules' catalog)
    catalog: tuple[Rule[Any, Any], ...] = ()
    #: lines said once per run rather than on every result (what would decide a kind the state lacks)
    notes: list[str] = field(default_factory=list)
    #: ``--allow-empty``: nothing judged is not a failure (without it, as kubectl apply with no objects, it is)
    allow_empty: bool = False

    @property
    def checked(self) -> list[CheckResult]:
        return [r for r in self.results if r.decision is not None]

    def summary(self) -> dict[str, int]:
        checked = self.checked
        return {
            "checked": len(checked),
            "admitted": sum(r.allowed for r in checked),
            "denied": sum(not r.allowed for r in checked),
            "warned": sum(bool(r.strict_warnings) for r in checked),
            "skipped": len(self.results) - len(checked),
            "errors": len(self.errors),
        }

    def strict_failures(self) -> list[str]:
        """Why ``--strict`` fails this run (empty without ``--strict``)."""
        if not self.strict:
            return []
        counts = self.summary()
        reasons = []
        if counts["warned"]:
            reasons.append(f"{counts['warned']} object(s) with warnings")
        mistakes = sum(r.mistake for r in self.results)
        if mistakes:
            reasons.append(f"{mistakes} skipped document(s) that look like a mistake")
        typos = sum(bool(r.hints) for r in self.results)
        if typos:
            reasons.append(f"{typos} object(s) with a key or field that looks misspelt")
        if not counts["checked"]:
            reasons.append("nothing was checked")
        return reasons

    def exit_code(self) -> int:
        """2 if an input could not be read, else 1 if anything was denied (or ``--strict`` failed, or
        nothing was judged without ``--allow-empty``), else 0."""
        if self.errors:
            return EXIT_USAGE
        if any(not r.allowed for r in self.results) or self.strict_failures():
            return EXIT_DENIED
        if not self.checked and not self.allow_empty:
            return EXIT_DENIED
        return EXIT_OK

    def summary_line(self) -> str:
        counts = self.summary()
        text = ", ".join(f"{value} {key}" for key, value in counts.items())
        mode = f"mode {self.mode}"
        if self.mode_source == "default" and self.command == "lint-queues":
            mode += " (the default)"  # it judges the cluster's queues, not jobs
        elif self.mode_source == "default":
            other = "dynamic" if self.mode == "static" else "static"
            mode += f" (the default; use --mode {other} for {other}-mode jobs)"
        text += f"; {mode}"
        failures = self.strict_failures()
        if failures:
            text += f"; --strict fails the run: {', '.join(failures)}"
        elif not counts["checked"]:
            text += "; nothing was checked"
        return text

    def left_out_line(self) -> str:
        """One line naming the files a directory walk did not read, and which ones it reads."""
        files = self.left_out
        named = ", ".join(files[:_NAMED]) + (f" and {len(files) - _NAMED} more" if len(files) > _NAMED else "")
        return (
            f"note: {len(files)} file(s) in the directories were not read: only .yaml, .yml and .json files are, "
            f"as by kubectl apply -R (the case counts; name a file to read it anyway): {named}"
        )
