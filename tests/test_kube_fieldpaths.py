"""Field paths: how they render, and that the rendering is the steps'."""

from __future__ import annotations

from webhook.kube.fieldpaths import LABELS, ROOT, MapKey


def test_paths_render_as_kubectl_writes_them() -> None:
    path = ROOT.child("spec", "replicatedJobs").index(0).child("template").key("a.b/c")
    assert str(path) == 'spec.replicatedJobs[0].template["a.b/c"]'
    assert str(ROOT) == "(object)"
    assert str(ROOT.index(2).child("a")) == "[2].a"
    assert path.steps == ("spec", "replicatedJobs", 0, "template", MapKey("a.b/c"))
    assert path.pointer() == "/spec/replicatedJobs/0/template/a.b~1c"


def test_a_path_with_a_long_key_renders_in_full() -> None:
    key = "k" * 300
    assert str(LABELS.key(key)) == f'metadata.labels["{key}"]'


def test_paths_are_equal_and_hashed_by_their_steps() -> None:
    one, two = LABELS.key("a"), ROOT.child("metadata").child("labels").key("a")
    assert one == two and hash(one) == hash(two) and {one: 1}[two] == 1
    assert one != LABELS.key("b") and ROOT.child("labels") != LABELS
