"""Manifests and state for every command: files, directories (recursively), ``-`` for stdin.

YAML and JSON, multi-document, lists expanded as kubectl expands them: ``kind: List`` and
every typed list (``JobSetList``, ``WorkloadList``: any ``kind`` ending in ``List`` with
``items``, as a list call answers and as ``snapshot`` writes). Each document keeps its YAML
node tree so a finding's field path can be turned into the line it is on (for ``--output
github`` annotations); a state, which needs no lines, is read without them, by the fastest
reader that fits (``lines=False``).

Values are read as kubectl reads them (``sigs.k8s.io/yaml``, on yaml.v2): a date-like
scalar (``2001-12-14``, or ``2001-13-45``, which is no date) stays the string it is, a
value PyYAML cannot build (an integer of 5000 digits) is an error at its line, like a
syntax error, never an exception out of the parser, and aliases are bounded as go-yaml
bounds them (``webhook.kube.manifestyaml``). A JSON file is decoded as JSON, a number as
the text it was (``webhook.kube.quantity.json_number``).
"""

from __future__ import annotations

import errno
import gc
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from webhook.kube.fieldpaths import FieldPath
from webhook.kube.manifestyaml import FastManifestLoader, LoaderClass, ManifestLoader, UnreadableValue
from webhook.kube.quantity import json_number, shown

SUFFIXES = (".yaml", ".yml", ".json")


class SourceError(Exception):
    """A path cannot be read or parsed; the message names it.

    ``source`` is the file (or path as given) and ``line`` where the parser stopped,
    when it knows, so a CI report can point at it.
    """

    def __init__(self, source: str, problem: str, line: int | None = None) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem
        self.line = line


@dataclass(slots=True)
class Document:
    source: str
    line: int
    data: Any
    node: yaml.Node | None = None
    #: a typed list's head (``{apiVersion, kind: CohortList, items: []}``), read before its
    #: items: it says the kind was read, even with no items (a known zero, for a state);
    #: it is not an object to judge
    header: bool = False

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


def named(value: object) -> str:
    """A document's name as a report shows it: the string, or, for what is no string (a
    list an alias made), a clipped picture of it, never the whole value."""
    return value if isinstance(value, str) else shown(value)


def _parse(
    text: str, source: str, loader_class: LoaderClass = ManifestLoader, lines: bool = True
) -> tuple[list[Document], SourceError | None]:
    """The documents of one file, and the error that stopped the parser, if one did.

    A ``.json`` file is decoded as JSON (``_parse_json``). Otherwise the file is read by
    libyaml first (``FastManifestLoader``: the same values and line marks, parsed in C,
    which a repository of thousands of manifests feels); a file it refuses is
    read again by the Python parser, whose error says more, so what is reported about a
    broken file does not depend on which parser read it. ``lines=False``: no node trees
    are kept (a state of 100,000 Workloads), and libyaml's words are enough.
    """
    if source.endswith(".json"):
        parsed = _parse_json(text, source, lines)
        if parsed is not None:
            return parsed, None
    if not lines and yaml.__with_libyaml__:
        return _parse_with(text, source, FastManifestLoader, lines=False)
    if loader_class is ManifestLoader and yaml.__with_libyaml__:
        documents, error = _parse_with(text, source, FastManifestLoader)
        if error is None:
            return documents, None
    return _parse_with(text, source, loader_class)


#: a JSON value, numbers with a fraction or an exponent through ``json_number``
_JSON = msgspec.json.Decoder(float_hook=json_number)


def _parse_json(text: str, source: str, lines: bool) -> list[Document] | None:
    """A ``.json`` file's one value, decoded as JSON; ``None`` when it is not one (YAML reads it then).

    With ``lines``, libyaml composes the text's nodes too (JSON is YAML), for the lines
    of findings; a text it cannot compose (a tab in the indentation) has none.
    """
    try:
        data = _JSON.decode(text)
    except (msgspec.DecodeError, RecursionError, ValueError):
        try:
            data = json.loads(text, parse_float=json_number)  # what msgspec leaves: nesting past its depth
        except (ValueError, RecursionError):
            return None
    node = _json_node(text) if lines else None
    return list(_expand(Document(source, node.start_mark.line + 1 if node is not None else 1, data, node)))


def _json_node(text: str) -> yaml.Node | None:
    try:
        loader = yaml.CSafeLoader(text) if yaml.__with_libyaml__ else yaml.SafeLoader(text)
    except yaml.YAMLError:
        return None
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


def _parse_with(
    text: str, source: str, loader_class: LoaderClass, lines: bool = True
) -> tuple[list[Document], SourceError | None]:
    """``_parse`` with one parser. Documents before a syntax error are kept: they parsed
    completely, and judging them tells the user more than dropping them would."""
    documents: list[Document] = []
    loader: Any = None
    try:
        loader = loader_class(text)  # the Python reader checks every character here, before parsing
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            data = loader.construct_document(node)
            for document in _expand(Document(source, node.start_mark.line + 1, data, node)):
                if not lines:  # each item's line is known; its tree is let go
                    document.node = None
                documents.append(document)
    except yaml.reader.ReaderError as exc:
        return documents, unprintable(source, text, exc)
    except yaml.YAMLError as exc:
        if source.endswith(".json") and not documents:
            try:
                return list(_expand(Document(source, 1, json.loads(text, parse_float=json_number)))), None
            except ValueError:
                pass
        return documents, _syntax_error(source, exc)
    except RecursionError:
        return documents, SourceError(source, "not readable: nested too deeply (thousands of levels)")
    finally:
        if loader is not None:
            loader.dispose()
    return documents, None


def unprintable(source: str, text: str, exc: yaml.reader.ReaderError) -> SourceError:
    """A character YAML does not allow in a document (a control character), with its line."""
    line = text.count("\n", 0, exc.position) + 1
    return SourceError(
        source,
        f"not valid YAML or JSON: character {exc.character:#06x} (line {line}) is not allowed in YAML; "
        "remove it, or write it as an escape (\\u001f) inside a double-quoted string",
        line,
    )


def _syntax_error(source: str, exc: yaml.YAMLError) -> SourceError:
    """One line (for CI annotations and JSON consumers) with the parser's line and column."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return SourceError(source, f"not valid YAML or JSON: {' '.join(str(exc).split())}")
    mark = exc.problem_mark
    where = f"(line {mark.line + 1}, column {mark.column + 1})"
    if isinstance(exc, UnreadableValue):
        return SourceError(source, f"cannot read the value at {where[1:-1]}: {exc.problem}", mark.line + 1)
    what = ": ".join(part for part in (exc.context, exc.problem) if part)
    return SourceError(source, f"not valid YAML or JSON: {what} {where}", mark.line + 1)


def _expand(document: Document) -> Iterator[Document]:
    """A list becomes its items, as kubectl reads it: ``kind: List`` (``kubectl get -o
    yaml``) and any typed list (``kind: JobSetList`` with ``items``, what a list call
    answers). An item of a typed list that names neither its apiVersion nor its kind (the
    API server leaves them out) takes the list's, as apimachinery's unstructured decoder
    does (``decodeToList``). A typed list yields its ``header`` first. Lists inside a
    list are flattened too, as kubectl's ``FlattenListVisitor`` does."""
    data = document.data
    if not (isinstance(data, dict) and isinstance(data.get("items"), list) and _is_list_kind(data.get("kind"))):
        if data is not None:
            yield document
        return
    kind, api_version = data["kind"], data.get("apiVersion")
    typed = kind != "List"
    if typed:
        head = {"apiVersion": api_version, "kind": kind, "items": []}
        yield Document(document.source, document.line, head, None, header=True)
    items_node = None
    if isinstance(document.node, yaml.MappingNode):
        items_node = next((v for k, v in document.node.value if getattr(k, "value", None) == "items"), None)
    item_kind = kind.removesuffix("List")
    for position, item in enumerate(data["items"]):
        node = items_node.value[position] if isinstance(items_node, yaml.SequenceNode) else None
        line = node.start_mark.line + 1 if node is not None else document.line
        if typed and isinstance(item, dict) and not item.get("kind") and not item.get("apiVersion"):
            item["apiVersion"], item["kind"] = api_version, item_kind
        yield from _expand(Document(document.source, line, item, node))  # a list in a list: flattened too


def _is_list_kind(kind: object) -> bool:
    return isinstance(kind, str) and kind.endswith("List") and len(kind) >= 4


def _files(path: Path, errors: list[SourceError], left_out: list[str] | None = None) -> Iterable[Path]:
    """A file as given, or a directory's files that end in ``SUFFIXES`` (the case counts, as
    for ``kubectl apply -R``: ``.YAML`` is not read); the others go in ``left_out``, but
    for those in hidden directories or hidden themselves (``.git``): tool state, not
    manifests someone forgot. A manifest's name on something that is no regular file (a
    broken or looping symbolic link, a FIFO) is an error in ``errors``, never skipped in
    silence: the manifest it stands for would go unchecked."""
    if not path.is_dir():
        return [path]
    files = []
    for file in sorted(path.rglob("*")):
        if file.suffix in SUFFIXES:
            if file.is_file():
                files.append(file)
            elif not file.is_dir():
                errors.append(SourceError(str(file), _not_a_file(file)))
        elif (
            left_out is not None
            and file.is_file()
            and not any(part.startswith(".") for part in file.relative_to(path).parts)
        ):
            left_out.append(str(file))
    return files


def _not_a_file(path: Path) -> str:
    """Why ``path`` (in a directory walk, or given and not found) cannot be read."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (following it leads back to itself); fix or remove the link"
        if path.is_symlink():
            target = shown(os.readlink(path))
            return f"a broken symbolic link (its target {target} does not exist); fix or remove the link"
        return "no such file or directory" if exc.errno == errno.ENOENT else f"cannot read: {exc.strerror or exc}"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a file: not read, since reading it could wait forever; move it out"
    return "not a regular file (a device or a socket): not read; move it out"


def read_documents(
    paths: Iterable[str],
    left_out: list[str] | None = None,
    *,
    loader: LoaderClass = ManifestLoader,
    lines: bool = True,
    heads: bool = False,
) -> tuple[list[Document], list[SourceError]]:
    """Every document that can be read, and one error per path or file that cannot.

    One bad file must not hide the verdicts on all the others (a CI run over a
    directory), so errors are collected, not raised. ``left_out`` receives the files a
    directory walk did not read (see ``_files``). ``loader``: ``FastManifestLoader`` for
    big inputs (libyaml; same values and line marks, libyaml's error wording).
    ``lines=False``: documents without node trees (every ``line_of`` is the document's
    line), read by the fastest reader (a state: JSON by msgspec, YAML by libyaml).
    ``heads``: a typed list's head too (``header``, ``items: []``), which tells a state
    reader the kind was read even when the list is empty; the commands that judge objects
    want the items alone.
    """
    documents: list[Document] = []
    errors: list[SourceError] = []
    with _collector_paused():
        _read_into(documents, errors, paths, left_out, loader, lines)
    if not heads:
        documents = [document for document in documents if not document.header]
    return documents, errors


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cycle collector off while files are read, and what was read frozen after.

    Each document keeps its node tree (for the line of a finding), so the heap grows by
    a few hundred objects a document, and the collector's passes over all of them cost
    more than the parsing and the judging together, while reading and again while judging
    (``bench/check_bulk.py`` measures a large repository). The documents live as long as
    the command that read them, so they are moved out of its reach (``gc.freeze``) once
    read. Node trees hold no cycles, and each loader's are broken by ``dispose``.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _read_into(
    documents: list[Document],
    errors: list[SourceError],
    paths: Iterable[str],
    left_out: list[str] | None,
    loader: LoaderClass,
    lines: bool,
) -> None:
    for raw in paths:
        if raw == "-":
            parsed, error = _parse(sys.stdin.read(), "<stdin>", loader, lines)
            documents.extend(parsed)
            errors.extend([error] if error else [])
            continue
        path = Path(raw)
        try:
            if not path.exists():
                errors.append(SourceError(raw, _not_a_file(path)))
                continue
            files = _files(path, errors, left_out)
        except OSError as exc:
            errors.append(SourceError(raw, f"cannot read: {exc.strerror or exc}"))
            continue
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except OSError as exc:
                errors.append(SourceError(str(file), f"cannot read: {exc.strerror or exc}"))
                continue
            except UnicodeDecodeError as exc:
                errors.append(SourceError(str(file), f"cannot read: not UTF-8 text ({exc.reason} at byte {exc.start})"))
                continue
            parsed, error = _parse(text, str(file), loader, lines)
            documents.extend(parsed)
            errors.extend([error] if error else [])


def load_documents(paths: Iterable[str], *, lines: bool = True, heads: bool = False) -> list[Document]:
    """Every document, or ``SourceError`` for the first path that cannot be read."""
    documents, errors = read_documents(paths, lines=lines, heads=heads)
    if errors:
        raise errors[0]
    return documents
