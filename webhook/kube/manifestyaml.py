"""YAML read as kubectl reads it, for manifests and for the policy file alike."""

from __future__ import annotations

import sys
from typing import Any

import yaml


class UnreadableValue(yaml.constructor.ConstructorError):
    """A well-formed scalar PyYAML cannot turn into a value (the YAML itself is valid)."""


class _KubectlValues(yaml.constructor.SafeConstructor):
    """Values as kubectl reads them, whichever parser composed the nodes (see ``ManifestLoader``)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise UnreadableValue(None, None, _unreadable(node, exc), node.start_mark) from None


class ManifestLoader(_KubectlValues, yaml.SafeLoader):
    """PyYAML's safe loader, reading values as kubectl does and failing only with ``YAMLError``.

    - timestamps stay strings: yaml.v2, under kubectl, keeps every date-like scalar a
      string when it decodes into untyped maps ("for backward compatibility"), so an
      annotation ``when: 2001-12-14`` is the string the API server receives;
    - a value whose constructor raises (``int()`` past Python's 4300-digit limit, or
      anything else unforeseen) becomes a ``ConstructorError`` marked at its node.
    """


if yaml.__with_libyaml__:

    class FastManifestLoader(_KubectlValues, yaml.CSafeLoader):
        """``ManifestLoader``'s values, parsed and composed by libyaml (3-4x faster).

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


def _timestamp_as_text(loader: ManifestLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]  # the tag is a scalar's


#: either loader class (``read_documents``' ``loader``)
LoaderClass = type[ManifestLoader] | type[FastManifestLoader]

ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
FastManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
