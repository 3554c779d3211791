"""Manifests for ``check``: files, directories (recursively), ``-`` for stdin.

YAML and JSON, multi-document, ``kind: List`` expanded. Each document keeps its YAML node
tree so a finding's field path can be turned into the line it is on (for ``--output
github`` annotations).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.fieldpaths import FieldPath

SUFFIXES = (".yaml", ".yml", ".json")


class SourceError(Exception):
    """A path cannot be read or parsed; the message names it."""


@dataclass(slots=True)
class Document:
    source: str
    line: int
    data: Any
    node: yaml.Node | None = None

    def line_of(self, path: FieldPath) -> int:
        """The line of ``path`` in the file, or of its nearest ancestor that is there."""
        node = self.node
        line = self.line
        for step in path.parts():
            if isinstance(node, yaml.MappingNode):
                node = next((v for k, v in node.value if getattr(k, "value", None) == str(step)), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
                node = node.value[step]
            else:
                node = None
            if node is None:
                break
            line = node.start_mark.line + 1
        return line


def _parse(text: str, source: str) -> Iterator[Document]:
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            data = loader.construct_document(node)
            yield from _expand(Document(source, node.start_mark.line + 1, data, node))
    except yaml.YAMLError as exc:
        if source.endswith(".json"):
            try:
                yield from _expand(Document(source, 1, json.loads(text)))
                return
            except ValueError:
                pass
        raise SourceError(f"{source}: not valid YAML or JSON: {exc}") from None
    finally:
        loader.dispose()


def _expand(document: Document) -> Iterator[Document]:
    """``kind: List`` (as ``kubectl get -o yaml`` prints) becomes its items."""
    data = document.data
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        items_node = None
        if isinstance(document.node, yaml.MappingNode):
            items_node = next((v for k, v in document.node.value if getattr(k, "value", None) == "items"), None)
        for position, item in enumerate(data["items"]):
            node = items_node.value[position] if isinstance(items_node, yaml.SequenceNode) else None
            line = node.start_mark.line + 1 if node is not None else document.line
            yield Document(document.source, line, item, node)
    elif data is not None:
        yield document


def _files(path: Path) -> Iterable[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    return [path]


def load_documents(paths: Iterable[str]) -> list[Document]:
    documents: list[Document] = []
    for raw in paths:
        if raw == "-":
            documents.extend(_parse(sys.stdin.read(), "<stdin>"))
            continue
        path = Path(raw)
        if not path.exists():
            raise SourceError(f"{raw}: no such file or directory")
        for file in _files(path):
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SourceError(f"{file}: cannot read: {exc}") from None
            documents.extend(_parse(text, str(file)))
    return documents
