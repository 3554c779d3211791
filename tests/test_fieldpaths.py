"""Field paths: how they render, and that the render cache keeps no long text."""

from __future__ import annotations

from webhook.kube.fieldpaths import LABELS, ROOT, _render
from webhook.kube.textcache import CACHED_CHARS


def test_paths_render_as_kubectl_writes_them() -> None:
    path = ROOT.child("spec", "replicatedJobs").index(0).child("template").key("a.b/c")
    assert str(path) == 'spec.replicatedJobs[0].template["a.b/c"]'
    assert str(ROOT) == "(object)"


def test_a_path_with_a_long_key_renders_in_full_and_is_not_kept() -> None:
    """A map key comes from the object: a long one is rendered every time, never cached."""
    key = "k" * (CACHED_CHARS + 1)
    before = _render.cache_info()
    assert str(LABELS.key(key)) == f'metadata.labels["{key}"]'
    after = _render.cache_info()
    assert (after.hits, after.misses, after.currsize) == (before.hits, before.misses, before.currsize)
    str(LABELS.key("short"))
    assert _render.cache_info().misses + _render.cache_info().hits > after.misses + after.hits
