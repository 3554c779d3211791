"""The policy config: RFC-0033 defaults, strict validation, errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.policy.config import ConfigError, Policy
from webhook.rules.catalog import load_policy, policy_from_mapping


def test_defaults_are_rfc_0033() -> None:
    policy = Policy()
    assert policy.mode == "static"
    assert policy.tier_label == "scheduling.antgroup.com/kueue-tier"
    assert policy.tiers["production"].allowed_priority_classes == ("guaranteed", "best-effort")
    assert policy.tiers["production"].default_queue is None
    assert policy.tiers["dev"].default_queue == "default"
    assert policy.tiers["dev"].default_priority_class == "default"
    assert policy.namespace_tiers == {"kubemaker": "production", "default": "dev", "falcon-jobs": "dev"}
    assert policy.tpu.accelerator_value == "tpu7x" and policy.tpu.chips_per_host == 4
    assert policy.super_slice.max_chips == 9216 and policy.super_slice.max_sub_blocks == 32
    assert policy.sub_slice_topologies == ("2x2x1", "2x2x2", "2x2x4", "2x4x4") and policy.sub_slicing
    assert policy.static_topologies == ("4x4x4", "4x4x8", "4x8x8", "8x8x8")
    assert policy.slice_name_budget == 59
    assert policy.suspend_allowed_users == ("system:serviceaccount:kueue-system:kueue-controller-manager",)


def test_load_none_and_empty_file_give_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_policy(None) == Policy() == load_policy(empty)


def test_a_full_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "mode: dynamic\nsubSlicing: false\nsliceNameBudget: 54\n"
        "tiers:\n  production:\n    queueNamePattern: '^[a-z]+-queue$'\n    allowedPriorityClasses: [guaranteed]\n"
        "namespaceTiers: {kubemaker: production}\n"
        "rules: {slice-topology-ignored: deny, tpu-request-invalid: off}\n"
    )
    policy = load_policy(path)
    assert policy.mode == "dynamic" and not policy.sub_slicing and policy.slice_name_budget == 54
    assert list(policy.tiers) == ["production"]
    assert policy.rules["tpu-request-invalid"] == "off"


def test_simulate_off_is_read_as_written_unquoted(tmp_path: Path) -> None:
    """README's ``simulate: off`` is YAML 1.1's false when unquoted: it means off, as in ``rules``."""
    path = tmp_path / "policy.yaml"
    path.write_text("simulate: off\n")
    assert load_policy(path).simulate == "off"
    path.write_text("simulate: 'off'\n")
    assert load_policy(path).simulate == "off"
    path.write_text("simulate: on\n")
    with pytest.raises(ConfigError, match="simulate: Input should be 'warn' or 'off'"):
        load_policy(path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"subslicing": False}, "subslicing: unknown key"),
        ({"mode": "elastic"}, "mode: Input should be 'static' or 'dynamic'"),
        ({"sliceNameBudget": -1}, "sliceNameBudget: Input should be greater than 0"),
        ({"tpu": {"chipsPerHost": "four"}}, "tpu.chipsPerHost: Input should be a valid integer"),
        ({"rules": {"no-such-rule": "deny"}}, "unknown rule id(s) no-such-rule"),
        (
            {"rules": {"suspend-forbidden": "maybe"}},
            "rules.suspend-forbidden: Input should be 'deny', 'warn' or 'off'",
        ),
        ({"staticTopologies": ["4x4"]}, "staticTopologies: '4x4' is not of the form AxBxC"),
        ({"tiers": {"Prod_Tier": {}}}, "is not a DNS-1123 subdomain"),
        (
            {"tiers": {"dev": {"queueNamePattern": "("}}},
            "tiers.dev.queueNamePattern: not a valid regular expression",
        ),
        ({"tiers": {"dev": {"defaultPriorityClass": "x"}}}, "defaultPriorityClass 'x' must be one of"),
        (
            {"namespaceTiers": {"kubemaker": "gold"}},
            "namespaceTiers.kubemaker: tier 'gold' is not one of tiers",
        ),
        (
            {"exceptions": [{"rules": ["slice-topology-invalidd"], "reason": "x"}]},
            "exceptions.0.rules: unknown rule id(s) slice-topology-invalidd",
        ),
        ({"exceptions": [{"rules": ["suspend-forbidden"]}]}, "exceptions.0.reason: Field required"),
        ({"exceptions": [{"rules": ["suspend-forbidden"], "reason": "  "}]}, "exceptions.0.reason: say why"),
        ({"exceptions": [{"rules": [], "reason": "x"}]}, "exceptions.0.rules: Tuple should have at least 1 item"),
        (
            {"exceptions": [{"rules": ["suspend-forbidden"], "names": [], "reason": "x"}]},
            "exceptions.0.names: leave the key out to match everything",
        ),
        ({"exceptions": [{"rule": ["suspend-forbidden"], "reason": "x"}]}, "exceptions.0.rule: unknown key"),
    ],
)
def test_bad_values_name_the_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        policy_from_mapping(data, "policy.yaml")
    assert message in str(error.value)
    assert str(error.value).startswith("policy.yaml: invalid policy config")


def test_unreadable_and_non_mapping_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the policy config"):
        load_policy(tmp_path / "absent.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- mode\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_policy(listed)
    broken = tmp_path / "broken.yaml"
    broken.write_text("mode: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_policy(broken)


def test_exceptions_load_with_globs(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "exceptions:\n"
        "  - rules: [slice-topology-invalid]    # rule IDs\n"
        "    namespaces: [kubemaker]\n"
        "    names: [llm-pretrain-*]\n"
        "    reason: capacity test approved by the platform team\n"
        "  - rules: [suspend-forbidden]\n"
        "    reason: ' everywhere, for the migration '\n"
    )
    policy = load_policy(path)
    first, everywhere = policy.exceptions
    assert first.rules == ("slice-topology-invalid",) and first.names == ("llm-pretrain-*",)
    assert everywhere.namespaces is None and everywhere.reason == "everywhere, for the migration"
    assert policy.exception_for("slice-topology-invalid", "kubemaker", "llm-pretrain-a3f8") is first
    assert policy.exception_for("slice-topology-invalid", "kubemaker", "other") is None
    assert policy.exception_for("slice-topology-invalid", "kubemaker-2", "llm-pretrain-a3f8") is None
    assert policy.exception_for("suspend-forbidden", "anything", "at-all") is everywhere
    assert policy.exception_for("tpu-request-invalid", "kubemaker", "llm-pretrain-a3f8") is None


def test_a_value_pyyaml_cannot_build_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("server:\n  maxConnections: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match="an integer of 5000 digits"):
        load_policy(path)
