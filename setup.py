"""Optional mypyc build of the decision path (engine, workload, rules).

``pip install .`` builds pure Python, as everywhere. With ``TPU_ADMISSION_MYPYC=1``
the modules below are compiled to C extensions, which cut the decision's CPU time by
about a quarter (README, Benchmark). mypyc type-checks them first, so the build
environment needs mypy, types-PyYAML and the package's dependencies, and no build
isolation: ``pip wheel --no-build-isolation``, as the Dockerfile does.

The compiled modules behave as the pure ones; to run the test suite against them:
``TPU_ADMISSION_MYPYC=1 python setup.py build_ext --inplace && PYTHONPATH=. pytest``
(then delete the ``*.so`` files, or every later run uses them).
"""

from __future__ import annotations

import os

from setuptools import setup

#: the modules on every request's decision path that mypyc compiles (mypy --strict clean,
#: no msgspec structs or pydantic models defined in them)
COMPILED = [
    "webhook/engine.py",
    "webhook/fastbuild.py",
    "webhook/fieldpaths.py",
    "webhook/findings.py",
    "webhook/kinds.py",
    "webhook/objects.py",
    "webhook/patches.py",
    "webhook/quantity.py",
    "webhook/resources.py",
    "webhook/textcache.py",
    "webhook/tiers.py",
    "webhook/topology.py",
    "webhook/workload.py",
    "webhook/rules/__init__.py",
    "webhook/rules/forbidden.py",
    "webhook/rules/labels.py",
    "webhook/rules/placement.py",
    "webhook/rules/shape.py",
]

ext_modules = []
if os.environ.get("TPU_ADMISSION_MYPYC") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3")

setup(ext_modules=ext_modules)
