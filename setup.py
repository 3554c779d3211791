"""Optional mypyc build of the decision path (engine, workload, rules).

``pip install .`` builds pure Python, as everywhere. With ``TPU_ADMISSION_MYPYC=1``
the modules below are compiled to C extensions, which cut the decision's CPU time by
about a quarter (README, Benchmark). mypyc type-checks them first, so the build
environment needs mypy, types-PyYAML and the package's dependencies, and no build
isolation: ``pip wheel --no-build-isolation``, as the Dockerfile does.

``TPU_ADMISSION_PGO`` adds a profile-guided build on top (GCC): ``generate:DIR`` builds
the modules instrumented to write their profile into DIR as they run, ``use:DIR`` builds
them again laid out and optimised for that profile. The Dockerfile builds, trains with
``bench/pgo_train.py`` (the decision path over the fixture corpus) and rebuilds; the
compiled decision then costs ~5-10% less (README, Benchmark).

The compiled modules behave as the pure ones; to run the test suite against them:
``TPU_ADMISSION_MYPYC=1 python setup.py build_ext --inplace && PYTHONPATH=. pytest``
(then delete the ``*.so`` files, or every later run uses them).
"""

from __future__ import annotations

import os

from setuptools import setup

#: the modules on every request's decision path that mypyc compiles (mypy --strict clean,
#: no msgspec structs or pydantic models defined in them). Their module-level constants are
#: ``Final``: mypyc keeps those in C statics, where any other global is a dict lookup by name
#: at every use (~0.7 µs of a hot dev-tier decision, before they were marked).
COMPILED = [
    "webhook/engine/decision.py",
    "webhook/objects/fastbuild.py",
    "webhook/kube/fieldpaths.py",
    "webhook/policy/findings.py",
    "webhook/objects/kinds.py",
    "webhook/serving/metrics.py",
    "webhook/objects/readers.py",
    "webhook/engine/patches.py",
    "webhook/kube/quantity.py",
    "webhook/kube/resources.py",
    "webhook/kube/textcache.py",
    "webhook/policy/tiers.py",
    "webhook/kube/topology.py",
    "webhook/objects/workload.py",
    "webhook/rules/__init__.py",
    "webhook/rules/forbidden.py",
    "webhook/rules/labels.py",
    "webhook/rules/placement.py",
    "webhook/rules/dynamic.py",
    "webhook/rules/static.py",
    "webhook/rules/shape.py",
]


def _pgo_flags(setting: str) -> tuple[list[str], list[str]]:
    """Compile and link flags for ``TPU_ADMISSION_PGO`` (``generate:DIR`` or ``use:DIR``)."""
    mode, _, directory = setting.partition(":")
    if not directory:
        raise SystemExit(f"TPU_ADMISSION_PGO={setting!r}: expected generate:DIR or use:DIR")
    if mode == "generate":
        return [f"-fprofile-generate={directory}", "-fprofile-update=single"], [f"-fprofile-generate={directory}"]
    if mode == "use":
        # -fprofile-correction: the training run is one process, but tolerate a torn count.
        return [f"-fprofile-use={directory}", "-fprofile-correction", "-Wno-missing-profile"], []
    raise SystemExit(f"TPU_ADMISSION_PGO={setting!r}: expected generate:DIR or use:DIR")


ext_modules = []
if os.environ.get("TPU_ADMISSION_MYPYC") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3")
    pgo = os.environ.get("TPU_ADMISSION_PGO")
    if pgo:
        compile_flags, link_flags = _pgo_flags(pgo)
        for extension in ext_modules:
            extension.extra_compile_args = [*(extension.extra_compile_args or []), *compile_flags]
            extension.extra_link_args = [*(extension.extra_link_args or []), *link_flags]

setup(ext_modules=ext_modules)
