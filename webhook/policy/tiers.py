"""Which tier a request belongs to, first match wins."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from webhook.kube.typos import did_you_mean
from webhook.policy.config import Policy


class TierResolution(msgspec.Struct):
    tier: str | None
    #: why the namespace is unmanaged with a warning (unknown tier), else ``None``
    warning: str | None = None


def resolve_tier(
    policy: Policy,
    namespace: str,
    *,
    override: str | None = None,
    path_tier: str | None = None,
    namespace_labels: Mapping[str, str] | None = None,
) -> TierResolution:
    """Override (CLI ``--tier``) > request path > namespace labels > config map > unknown.

    Labels that are known but carry no tier label make the namespace unmanaged without
    a warning; knowing nothing at all is unmanaged *with* a warning (unknown is not
    "no tier").
    """
    explicit = override or path_tier
    if explicit is not None:
        return _known(policy, explicit, "")
    if namespace_labels is not None:
        value = namespace_labels.get(policy.tier_label)
        if value is None:
            return TierResolution(None)
        return _known(policy, value, f" (label {policy.tier_label} on namespace {namespace!r})")
    mapped = policy.namespace_tiers.get(namespace)
    if mapped is not None:
        return TierResolution(mapped)
    meant = did_you_mean(namespace, policy.namespace_tiers)
    return TierResolution(
        None,
        f"the tier of namespace {namespace!r} could not be determined (no tier in the request "
        "path, namespace labels unknown, not in namespaceTiers); admitted without checks"
        + (f"; did you mean {meant!r}?" if meant is not None else ""),
    )


def _known(policy: Policy, tier: str, where: str) -> TierResolution:
    if tier in policy.tiers:
        return TierResolution(tier)
    meant = did_you_mean(tier, policy.tiers)
    return TierResolution(
        None,
        f"tier {tier!r}{where} is not configured (known: {', '.join(policy.tiers)}); admitted without checks"
        + (f"; did you mean {meant!r}?" if meant is not None else ""),
    )
