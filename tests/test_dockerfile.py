"""The Dockerfile, checked statically (no Docker engine runs here): parsed with BuildKit's
own parser (the ``dockerfile`` package), then held to the image's promises."""

from __future__ import annotations

import re
from pathlib import Path

import dockerfile
import pytest

from webhook.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
BUILD_TOOLS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|make|cmake|cargo|rustc|python3?-dev|libffi-dev)\b")


def stages() -> list[list[dockerfile.Command]]:
    result: list[list[dockerfile.Command]] = []
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if command.cmd == "FROM":
            result.append([])
        if result:
            result[-1].append(command)
    return result


def final() -> list[dockerfile.Command]:
    return stages()[-1]


def test_multi_stage_with_a_slim_python_base() -> None:
    assert len(stages()) >= 2
    args = {
        c.value[0].split("=", 1)[0]: c.value[0].split("=", 1)[1]
        for c in dockerfile.parse_file(str(ROOT / "Dockerfile"))
        if c.cmd == "ARG" and "=" in c.value[0]
    }
    for stage in stages():
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], stage[0].value[0])
        assert re.fullmatch(r"python:3\.1[1-9][.\d]*-slim(-\w+)?", image), image


def test_no_stage_compiles_anything() -> None:
    """The image installs the pure-Python package CI tests: no compiler, no mypyc, no PGO."""
    text = "\n".join(c.original for stage in stages() for c in stage)
    assert not BUILD_TOOLS.search(text), BUILD_TOOLS.search(text)
    assert not re.search(r"mypyc|TPU_ADMISSION_(MYPYC|PGO)|build_ext|apt-get", text, re.I)
    assert not (ROOT / "setup.py").exists(), "pyproject.toml alone describes the build"


def test_final_stage_takes_only_the_virtualenv_from_the_build() -> None:
    copies = [c for c in final() if c.cmd == "COPY" and any(f.startswith("--from=") for f in c.flags)]
    assert [list(c.value) for c in copies] == [["/opt/venv", "/opt/venv"]]
    assert not [c for c in final() if c.cmd == "RUN"], "the runtime stage runs nothing: no pip, no source tree"


def test_runs_as_a_numeric_non_root_user() -> None:
    users = [c.value[0] for c in final() if c.cmd == "USER"]
    assert users, "the final stage must set USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) > 0
    assert not group or (group.isdigit() and int(group) > 0)
    # The Deployment's runAsUser is the same number.
    assert f"runAsUser: {user}" in (ROOT / "manifests" / "base" / "deployment.yaml").read_text()


def test_entrypoint_is_tpu_admission_serve() -> None:
    entrypoint = [c for c in final() if c.cmd == "ENTRYPOINT"][-1]
    assert entrypoint.json, "exec form, so SIGTERM reaches the server, not a shell"
    assert list(entrypoint.value[:2]) == ["tpu-admission", "serve"]
    cmd = [c for c in final() if c.cmd == "CMD"]
    flags = list(cmd[-1].value) if cmd else []
    args = build_parser().parse_args([*entrypoint.value[1:], *flags])
    assert args.host == "0.0.0.0"


def test_console_script_exists() -> None:
    assert 'tpu-admission = "webhook.cli.main:main"' in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize("path", ["requirements.lock", "pyproject.toml", "README.md", "webhook/"])
def test_build_context_keeps_what_the_build_copies(path: str) -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in lines and f"!{path}" in lines
    copied = " ".join(" ".join(c.value) for stage in stages() for c in stage if c.cmd == "COPY")
    assert path.rstrip("/") in copied
