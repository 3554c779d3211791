"""The one YAML loader: aliases bounded as Kubernetes' YAML decoders bound them.

go-yaml (v2 ``decode.go`` and v3 ``decode.go``, under sigs.k8s.io/yaml) counts each node
it decodes and each it decodes inside an alias, and fails with "document contains
excessive aliasing" once more than 100 aliased and 1,000 decoded nodes are counted and
the aliased share passes ``allowedAliasRatio``: 99 % up to 400,000 decoded nodes, falling
linearly to 10 % at 4,000,000. Restated here as facts.
"""

from __future__ import annotations

import time

import pytest
import yaml

from webhook.kube.manifestyaml import ExcessiveAliasing, FastManifestLoader, ManifestLoader, allowed_alias_ratio

LOADERS = [ManifestLoader, FastManifestLoader]


def bomb(levels: int, fan_out: int = 10) -> str:
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]")
    return "\n".join([*lines, f"x: *a{levels}"]) + "\n"


@pytest.mark.parametrize(
    ("decoded", "ratio"),
    [(0, 0.99), (400_000, 0.99), (2_200_000, 0.545), (4_000_000, 0.10), (10**9, 0.10)],
)
def test_go_yamls_allowed_alias_ratio(decoded: int, ratio: float) -> None:
    assert allowed_alias_ratio(decoded) == pytest.approx(ratio)


@pytest.mark.parametrize("loader", LOADERS)
def test_a_billion_nodes_from_a_few_hundred_bytes_are_refused_at_once(loader: type[ManifestLoader]) -> None:
    text = bomb(9)
    assert len(text) < 600
    started = time.perf_counter()
    with pytest.raises(ExcessiveAliasing) as caught:
        yaml.load(text, Loader=loader)  # our safe loader
    assert time.perf_counter() - started < 0.5
    assert caught.value.problem is not None
    assert caught.value.problem.startswith("document contains excessive aliasing: its aliases expand 23 nodes into ")
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 0


@pytest.mark.parametrize("loader", LOADERS)
def test_aliases_within_go_yamls_bounds_are_read(loader: type[ManifestLoader]) -> None:
    """Two levels (111 aliased nodes of 124): under 1,000 decoded, go-yaml reads it; three (4,462) it refuses."""
    data = yaml.load(bomb(2), Loader=loader)
    assert data["x"] == [[["lol"]] * 10] * 10
    with pytest.raises(ExcessiveAliasing):
        yaml.load(bomb(3), Loader=loader)
    # the usual use: a shared block of labels, many times over in a big document
    text = "base: &base {a: 1, b: 2}\n" + "".join(f"k{i}: {{x: {i}, y: *base}}\n" for i in range(2000))
    assert yaml.load(text, Loader=loader)["k1999"] == {"x": 1999, "y": {"a": 1, "b": 2}}


@pytest.mark.parametrize("loader", LOADERS)
def test_an_anchor_that_contains_itself_is_refused(loader: type[ManifestLoader]) -> None:
    with pytest.raises(ExcessiveAliasing, match="an anchor's value contains an alias of itself"):
        yaml.load("a: &x [1, {b: *x}]\n", Loader=loader)


@pytest.mark.parametrize("loader", LOADERS)
def test_an_ampersand_in_a_value_is_no_anchor(loader: type[ManifestLoader]) -> None:
    assert yaml.load("url: https://x/?a=1&b=2\n", Loader=loader) == {"url": "https://x/?a=1&b=2"}
    assert loader("url: a=1&b=2")._may_alias is False
    assert loader("a: &x 1\nb: *x")._may_alias is True


@pytest.mark.parametrize("loader", LOADERS)
def test_remembered_scalar_tags_are_pyyamls_and_the_table_is_bounded(loader: type[ManifestLoader]) -> None:
    """The same text twice gets the same value as PyYAML's safe loader gives it once (dates aside: strings)."""
    texts = ["1", "1.5", "yes", "no", "~", "null", "0x1F", "1e3", ".inf", "true", "name", "4Gi", "-", "''", '"1"']
    document = "\n".join(f"k{i}: [{text}, {text}]" for i, text in enumerate(texts)) + "\n"
    expected = yaml.safe_load(document)
    assert yaml.load(document, Loader=loader) == expected
    assert [v[0] for v in expected.values()][:4] == [1, 1.5, True, False]
    many = "".join(f"- v{i}\n" for i in range(70_000)) + "- " + "x" * 100 + "\n"
    yaml.load(many, Loader=loader)
    known = loader._known  # type: ignore[attr-defined]
    assert len(known) <= 1 << 16 and all(len(text) <= 64 for text in known)
