"""YAML read as kubectl reads it, for manifests and for the policy file alike.

Aliases are bounded as Kubernetes' YAML decoders bound them (go-yaml v2 and v3, under
``sigs.k8s.io/yaml``): a few hundred bytes of anchors nine levels deep, each aliased ten
times, stand for a billion nodes. PyYAML shares an anchor's node among its aliases, so
composing and constructing stay cheap, but anything that walks the value (a check of
duplicate keys, a JSON encoding, a message that prints it) walks all of them. So every
document is measured as it would be expanded, and refused past go-yaml's limit with its
words, "document contains excessive aliasing"; an anchor whose value holds an alias of
itself is refused too (go-yaml: "anchor … value contains itself"), since nothing can walk
it to an end.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Final

import yaml

#: go-yaml's bounds (``allowedAliasRatio`` in decode.go): aliases may make up 99 % of the
#: nodes of a document of up to 400,000 decoded nodes, a share falling to 10 % at
#: 4,000,000; the check starts past 100 aliased and 1,000 decoded nodes
_RATIO_LOW: Final = 400_000
_RATIO_HIGH: Final = 4_000_000
_MIN_ALIASED: Final = 100
_MIN_DECODED: Final = 1_000


class ExcessiveAliasing(yaml.composer.ComposerError):
    """A document whose aliases expand past go-yaml's limit, or into themselves."""


def allowed_alias_ratio(decoded: int) -> float:
    """The share of a document's decoded nodes that may come from aliases (go-yaml's rule)."""
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def check_aliasing(root: yaml.Node) -> None:
    """``ExcessiveAliasing`` when ``root``, its aliases expanded, is too big for its size, or endless.

    Each distinct collection node is visited once (an alias is its anchor's own node
    object): its expanded size is one plus its children's, a scalar counting one. What the
    expansion adds over the distinct nodes is what aliases built. (An alias of a scalar
    counts as a node of its own: it adds one node, never more.)
    """
    if isinstance(root, yaml.ScalarNode):
        return
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    scalars = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        children = _children(node)
        if finished:
            open_nodes.discard(id(node))
            size = 1
            for child in children:
                if child.__class__ is _SCALAR:
                    size += 1
                    scalars += 1
                else:
                    size += sizes[id(child)]
            sizes[id(node)] = size
            continue
        if id(node) in sizes:
            continue
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if child.__class__ is _SCALAR or id(child) in sizes:
                continue
            if id(child) in open_nodes:
                raise ExcessiveAliasing(
                    None, None, "an anchor's value contains an alias of itself (it never ends)", child.start_mark
                )
            stack.append((child, False))
    decoded = sizes[id(root)]
    distinct = len(sizes) + scalars
    aliased = decoded - distinct
    if aliased > _MIN_ALIASED and decoded > _MIN_DECODED and aliased / decoded > allowed_alias_ratio(decoded):
        raise ExcessiveAliasing(
            None,
            None,
            f"document contains excessive aliasing: its aliases expand {distinct} nodes into {decoded} "
            "(Kubernetes' YAML decoder refuses it too); write the values out, or use fewer aliases",
            root.start_mark,
        )


_SCALAR: Final = yaml.ScalarNode


def _children(node: yaml.Node) -> list[yaml.Node]:
    if node.__class__ is yaml.SequenceNode:
        return node.value  # type: ignore[no-any-return]
    if node.__class__ is yaml.MappingNode:
        return [part for pair in node.value for part in pair]
    return []


#: where an anchor can be: ``&`` opening a node (after a space, a line's start or a flow
#: indicator), followed by its name; ``a=1&b=2`` in a string is none
_ANCHOR: Final = re.compile(r"(?:^|[\s\[\]{},])&[^\s\[\]{},]")


class _BoundedAliases:
    """Each composed document is checked by ``check_aliasing`` before it is constructed.

    A text with no anchor has no alias, and is not measured: the usual manifest (and a
    state as ``snapshot`` or kubectl write it) pays one scan of its text.
    """

    def __init__(self, stream: Any) -> None:
        text = stream.decode("utf-8", "replace") if isinstance(stream, bytes) else stream
        self._may_alias = ("&" in text and _ANCHOR.search(text) is not None) if isinstance(text, str) else True
        super().__init__(stream)  # type: ignore[call-arg]

    def get_node(self) -> Any:
        node = super().get_node()  # type: ignore[misc]
        if node is not None and self._may_alias:
            check_aliasing(node)
        return node

    def get_single_node(self) -> Any:
        node = super().get_single_node()  # type: ignore[misc]
        if node is not None and self._may_alias:
            check_aliasing(node)
        return node


class UnreadableValue(yaml.constructor.ConstructorError):
    """A well-formed scalar PyYAML cannot turn into a value (the YAML itself is valid)."""


class _KnownScalars:
    """The tag of a plain scalar, remembered by its text.

    PyYAML's resolver matches every plain scalar against its implicit patterns (int,
    float, bool, null, timestamp), a Python call with regular expressions per value,
    about half of what composing a document costs even when libyaml parses it. The tag
    of a plain scalar depends on its text alone (our loaders add no path resolvers), and
    a manifest's texts repeat (``name``, ``metadata``, ``"4"``): a text seen before is a
    lookup. At most ``_KNOWN_COUNT`` texts of at most ``_KNOWN_LENGTH`` characters are
    kept, so no input can grow the table.
    """

    _known: Final[dict[str, str]] = {}

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is _SCALAR and implicit[0]:
            tag = self._known.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)  # type: ignore[misc]
                if len(value) <= _KNOWN_LENGTH and len(self._known) < _KNOWN_COUNT:
                    self._known[value] = tag
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[misc,no-any-return]


_KNOWN_LENGTH: Final = 64
_KNOWN_COUNT: Final = 1 << 16


class _KubectlValues(yaml.constructor.SafeConstructor):
    """Values as kubectl reads them, whichever parser composed the nodes (see ``ManifestLoader``).

    A value whose constructor raises is found again by ``_MarkedValues``, which builds
    the document once more, watching each node: the usual document pays nothing for it
    (a wrapper around every node's construction cost a tenth of ``check``'s time).
    """

    def construct_document(self, node: yaml.Node) -> Any:
        try:
            return super().construct_document(node)
        except (ValueError, OverflowError):
            self.constructed_objects, self.recursive_objects, self.state_generators = {}, {}, []
            _MarkedValues().construct_document(node)  # raises UnreadableValue at the value's node
            raise  # pragma: no cover - the same nodes fail the same way


class _MarkedValues(_KubectlValues):
    """``_KubectlValues`` that names the node whose value cannot be built."""

    def construct_document(self, node: yaml.Node) -> Any:
        return yaml.constructor.SafeConstructor.construct_document(self, node)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise UnreadableValue(None, None, _unreadable(node, exc), node.start_mark) from None


class ManifestLoader(_BoundedAliases, _KnownScalars, _KubectlValues, yaml.SafeLoader):
    """PyYAML's safe loader, reading values as kubectl does and failing only with ``YAMLError``.

    - timestamps stay strings: yaml.v2, under kubectl, keeps every date-like scalar a
      string when it decodes into untyped maps ("for backward compatibility"), so an
      annotation ``when: 2001-12-14`` is the string the API server receives;
    - a value whose constructor raises (``int()`` past Python's 4300-digit limit, or
      anything else unforeseen) becomes a ``ConstructorError`` marked at its node;
    - aliases are bounded as go-yaml bounds them (``ExcessiveAliasing``).
    """


if yaml.__with_libyaml__:

    class FastManifestLoader(_BoundedAliases, _KnownScalars, _KubectlValues, yaml.CSafeLoader):
        """``ManifestLoader``'s values, parsed and composed by libyaml (C, not Python).

        Its nodes carry line marks too, so a finding still finds its line; its error
        texts are libyaml's wording. For big inputs: a state file of 5,000 Nodes.
        """

else:  # pragma: no cover - PyYAML wheels ship libyaml
    FastManifestLoader = ManifestLoader  # type: ignore[misc,assignment]


def _unreadable(node: yaml.Node, exc: Exception) -> str:
    text = str(node.value) if isinstance(node, yaml.ScalarNode) else ""
    if node.tag == "tag:yaml.org,2002:int":
        return (
            f"an integer of {len(text.lstrip('+-'))} digits, more than the {sys.get_int_max_str_digits()} "
            "that can be read (no Kubernetes field takes one); quote it if it is text"
        )
    shown = text if len(text) <= 40 else text[:40] + "..."
    return f"{node.tag.rpartition(':')[2]} value {shown!r} cannot be read ({exc}); quote it if it is text"


def _timestamp_as_text(loader: _KubectlValues, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]  # the tag is a scalar's


#: either loader class (``read_documents``' ``loader``)
LoaderClass = type[ManifestLoader] | type[FastManifestLoader]

# on the constructor both loaders share (the stubs expect a loader class here)
_KubectlValues.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)  # type: ignore[type-var]


def load_single(text: str) -> tuple[yaml.Node | None, Any]:
    """One document's node tree and value: by libyaml, and where libyaml refuses the text,
    by the Python parser, whose error (raised) says more and marks the line.

    libyaml reads a megabyte in a tenth of the Python parser's time, which a webhook
    with a 5 s timeout needs (Kueue's ConfigMap holds up to a megabyte). Aliases are
    bounded either way.
    """
    for loader_class in (FastManifestLoader, ManifestLoader):
        loader: Any = None
        try:
            loader = loader_class(text)  # the Python reader checks every character here
            node = loader.get_single_node()
            return node, loader.construct_document(node) if node is not None else None
        except yaml.YAMLError:
            if loader_class is ManifestLoader:
                raise
        finally:
            if loader is not None:
                loader.dispose()
    raise AssertionError("unreachable: the Python parser returns or raises")  # pragma: no cover
