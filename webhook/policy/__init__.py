"""The configuration the admins set: the policy model, tiers, and the finding every rule reports."""
