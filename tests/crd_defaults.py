"""The API server's defaulting of custom resources, done from the CRDs themselves.

A Kueue object written by hand (the simulator tests' builders) leaves out what its CRD
defaults: a ClusterQueue's preemption policies, flavor fungibility, queueing strategy and
stop policy, a Workload's ``active`` and podSet ``count``. Kueue's code reads those fields
as the API server stored them, so before such an object is handed to the oracle it gets
the defaults its CRD's ``openAPIV3Schema`` declares, as the API server's structural
defaulting applies them: an absent property with a ``default`` takes a copy of it, then
every present property (the defaulted ones too) is defaulted by its own schema; array
items by ``items``, map values by ``additionalProperties``. Nothing is restated here: the
values come from the CRDs the Go modules ship (``crd_modules``).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import yaml
from crd_modules import crd_files


class NoSchema(KeyError):
    """No CRD of the pinned modules defines the object's group and kind."""


@functools.cache
def _crds() -> dict[tuple[str, str], dict[str, Any]]:
    """Every CRD the modules ship, by (group, kind)."""
    out = {}
    for path in crd_files():
        crd = yaml.safe_load(path.read_text())
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        out[(spec["group"], spec["names"]["kind"])] = crd
    return out


def schema_of(api_version: str, kind: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``kind`` at ``api_version``'s version, or at the CRD's storage
    version when ``api_version`` names none it serves (what an object as stored is)."""
    group, _, version = api_version.rpartition("/")
    crd = _crds().get((group, kind))
    if crd is None:
        raise NoSchema(f"no CRD of the pinned modules defines {kind} in {group or 'the core group'}")
    versions = crd["spec"]["versions"]
    named = [v for v in versions if v["name"] == version] or [v for v in versions if v.get("storage")]
    schema: dict[str, Any] = named[0]["schema"]["openAPIV3Schema"]
    return schema


def default_value(value: Any, schema: dict[str, Any]) -> None:
    """Apply ``schema``'s defaults to ``value`` in place."""
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties") or {}
        for name, prop in properties.items():
            if "default" in prop and value.get(name) is None and not (name in value and prop.get("nullable")):
                value[name] = copy.deepcopy(prop["default"])
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                default_value(item, properties[name])
            elif isinstance(extra, dict):
                default_value(item, extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            default_value(item, schema["items"])


def defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` as the API server would store it: its CRD's defaults applied. A List's
    items are defaulted one by one; an object of a kind no CRD of the modules defines (a core
    kind) is returned unchanged."""
    out = copy.deepcopy(obj)
    kind = str(out.get("kind", ""))
    if isinstance(out.get("items"), list) and kind.endswith("List"):
        out["items"] = [
            defaulted({"apiVersion": out.get("apiVersion", ""), "kind": kind[:-4], **i}) for i in out["items"]
        ]
        return out
    try:
        schema = schema_of(str(out.get("apiVersion", "")), kind)
    except NoSchema:
        return out
    default_value(out, schema)
    return out
