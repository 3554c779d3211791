"""Where the upstream JobSet and Kueue CRDs come from: the Go modules ``tests/crds/go.mod``
pins (each ships its generated CRDs under ``config/components/crd/bases``), or the folder
``$TPU_ADMISSION_CRDS`` names. Read by the unit tests' ``upstream_crd`` and by the end-to-end
control plane, which applies them all.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

#: the Go module that pins the JobSet and Kueue releases whose CRDs the tests read (nothing
#: in it is built: ``go mod download`` fetches the modules, which carry their CRDs)
CRD_MODULE = Path(__file__).resolve().parent / "crds"
#: a CRD file's prefix -> the module that ships it under ``config/components/crd/bases``
CRD_SOURCES = {"jobset.x-k8s.io_": "sigs.k8s.io/jobset", "kueue.x-k8s.io_": "sigs.k8s.io/kueue"}
#: ``$TPU_ADMISSION_CRDS``, when set: a folder of CRD files read instead of the modules
CRDS_OVERRIDE = os.environ.get("TPU_ADMISSION_CRDS")


class CrdsUnavailable(Exception):
    """The modules cannot be had (no ``go``, or the download failed); the message says which."""


@functools.cache
def crd_module_dirs() -> dict[str, Path]:
    """Each pinned module's folder in Go's module cache (downloaded, and checked against
    ``go.sum``, on first use)."""
    go = shutil.which("go")
    if go is None:
        raise CrdsUnavailable("go is not installed (the CRDs come from the Go modules tests/crds/go.mod pins)")
    done = subprocess.run(
        [go, "mod", "download", "-json", *CRD_SOURCES.values()],
        cwd=CRD_MODULE,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    decoder, text, found = json.JSONDecoder(), done.stdout, {}
    index = 0
    while index < len(text):
        if text[index].isspace():
            index += 1
            continue
        module, index = decoder.raw_decode(text, index)
        if module.get("Error") or not module.get("Dir"):
            raise CrdsUnavailable(f"go mod download {module.get('Path')}: {module.get('Error')}")
        found[module["Path"]] = Path(module["Dir"])
    if done.returncode != 0 or set(found) != set(CRD_SOURCES.values()):
        raise CrdsUnavailable(f"go mod download in {CRD_MODULE} failed: {done.stderr.strip()}")
    return found


def crd_path(file_name: str) -> Path:
    """Where one upstream CRD file is read from: ``$TPU_ADMISSION_CRDS``, else its module."""
    if CRDS_OVERRIDE:
        return Path(CRDS_OVERRIDE) / file_name
    (module,) = [m for prefix, m in CRD_SOURCES.items() if file_name.startswith(prefix)]
    return crd_module_dirs()[module] / "config" / "components" / "crd" / "bases" / file_name


def crd_files() -> list[Path]:
    """Every CRD file the modules ship (or the override folder holds), JobSet's then Kueue's."""
    if CRDS_OVERRIDE:
        return sorted(p for p in Path(CRDS_OVERRIDE).glob("*.yaml") if not p.name.startswith("README"))
    return [
        path
        for module in CRD_SOURCES.values()
        for path in sorted((crd_module_dirs()[module] / "config" / "components" / "crd" / "bases").glob("*.yaml"))
    ]
