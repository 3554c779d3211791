"""Field paths into a submitted object, rendered the way people read them.

A path is an immutable tuple of steps. ``child`` adds a field name, ``index`` a list
position and ``key`` a map key (rendered ``["..."]`` because label and annotation keys
contain dots and slashes). ``pointer`` renders the same path as an RFC 6901 JSON
pointer for patches and for locating the node in a YAML file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Union

Step = Union[str, int, "MapKey"]


@dataclass(frozen=True, slots=True)
class MapKey:
    """A key of a string map (labels, annotations, nodeSelector, resources)."""

    name: str


@dataclass(frozen=True, slots=True)
class FieldPath:
    """Immutable; equal and hashed by its steps. Built from ``ROOT`` by ``child``,
    ``index`` and ``key``, which also write its rendering (``text``) as they go."""

    steps: tuple[Step, ...] = ()
    #: the path as people read it (``spec.replicatedJobs[0].name``); "" for the root
    text: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.steps and not self.text:  # built from its steps directly: render them once
            rendered = ROOT
            for step in self.steps:
                if isinstance(step, MapKey):
                    rendered = rendered.key(step.name)
                elif isinstance(step, int):
                    rendered = rendered.index(step)
                else:
                    rendered = rendered.child(step)
            object.__setattr__(self, "text", rendered.text)

    def child(self, *names: str) -> FieldPath:
        text = self.text
        for name in names:
            text = f"{text}.{name}" if text else name
        return FieldPath(self.steps + names, text)

    def index(self, position: int) -> FieldPath:
        return FieldPath((*self.steps, position), f"{self.text}[{position}]")

    def key(self, name: str) -> FieldPath:
        return FieldPath((*self.steps, MapKey(name)), f'{self.text}["{name}"]')

    def __str__(self) -> str:
        return self.text or "(object)"

    def pointer(self) -> str:
        """The RFC 6901 JSON pointer of this path."""
        return "".join("/" + pointer_token(s.name if isinstance(s, MapKey) else str(s)) for s in self.steps)

    def parts(self) -> tuple[str | int, ...]:
        """Plain steps (map keys unwrapped), for walking a parsed document."""
        return tuple(s.name if isinstance(s, MapKey) else s for s in self.steps)


def pointer_token(text: str) -> str:
    """One step of an RFC 6901 JSON pointer: ``~`` → ``~0``, ``/`` → ``~1``."""
    return text.replace("~", "~0").replace("/", "~1")


ROOT: Final = FieldPath()
METADATA: Final = ROOT.child("metadata")
LABELS: Final = METADATA.child("labels")
ANNOTATIONS: Final = METADATA.child("annotations")
SPEC: Final = ROOT.child("spec")
REPLICATED_JOBS: Final = SPEC.child("replicatedJobs")
