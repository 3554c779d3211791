"""Policy config: one YAML file, every number and name of RFC-0033 as a default.

The model is strict (unknown keys are errors, types are not coerced from strings where
that would hide a typo) because a webhook that silently ignores ``subslicing: false``
enforces the wrong policy on every submission. ``load_policy`` turns pydantic's errors
into one line per bad key, naming the key as it is spelled in the file.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from difflib import get_close_matches
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from webhook.kube.manifestyaml import ManifestLoader
from webhook.kube.topology import Topology, TopologyError, parse_topology
from webhook.policy.findings import Action
from webhook.policy.kueue import KueuePolicy

Mode = Literal["static", "dynamic"]


class ConfigError(Exception):
    """The policy config cannot be used; the message names the file and key."""


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class TierPolicy(_Model):
    """What one namespace tier requires and injects."""

    queue_name_pattern: str | None = None
    default_queue: str | None = None
    default_priority_class: str | None = None
    allowed_priority_classes: tuple[str, ...] = ()
    #: without a default queue: a Job or Deployment with no queue label and no TPU runs
    #: outside Kueue as a system component would, and is admitted unjudged (RFC-0033's Kueue configuration)
    allow_unqueued_cpu_workloads: bool = False

    @field_validator("queue_name_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _default_priority_is_allowed(self) -> TierPolicy:
        default = self.default_priority_class
        if default is not None and default not in self.allowed_priority_classes:
            raise ValueError(f"defaultPriorityClass {default!r} must be one of allowedPriorityClasses")
        return self


def _rfc_tiers() -> dict[str, TierPolicy]:
    return {
        "production": TierPolicy(
            queue_name_pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?-queue$",
            allowed_priority_classes=("guaranteed", "best-effort"),
            allow_unqueued_cpu_workloads=True,
        ),
        "dev": TierPolicy(
            default_queue="default",
            default_priority_class="default",
            allowed_priority_classes=("default",),
        ),
    }


class TpuPolicy(_Model):
    """Names and numbers of the TPU hardware (tpu7x, 4 chips per host)."""

    resource_name: str = "google.com/tpu"
    accelerator_label: str = "cloud.google.com/gke-tpu-accelerator"
    accelerator_value: str = "tpu7x"
    topology_label: str = "cloud.google.com/gke-tpu-topology"
    slice_topology_annotation: str = "cloud.google.com/gke-tpu-slice-topology"
    chips_per_host: int = Field(default=4, gt=0)


class SuperSlicePolicy(_Model):
    """RFC-0033's super-slice whitelist (GA)."""

    dimension_multiple: int = Field(default=4, gt=0)
    min_topology: str = "4x4x4"
    max_chips: int = Field(default=9216, gt=0)
    sub_block_chips: int = Field(default=64, gt=0)
    max_sub_blocks: int = Field(default=32, gt=0)

    @field_validator("min_topology")
    @classmethod
    def _is_topology(cls, value: str) -> str:
        _topology(value)
        return value


#: The largest AdmissionReview a real API server sends. etcd stores at most 1.5 MiB per
#: object (``--max-request-bytes``; a CRD object is stored as JSON), and an UPDATE review
#: carries the object and the old object, so two of them plus 64 KiB for the envelope
#: (userInfo with its groups, options) covers every review the API server can send.
REVIEW_BYTES = 2 * 1536 * 1024 + 64 * 1024


class ServerPolicy(_Model):
    """Settings of the HTTPS server (not of the rules)."""

    max_body_bytes: int = Field(default=REVIEW_BYTES, gt=0)
    #: deadlines of one connection: TLS handshake, request headers, request body
    handshake_timeout_seconds: float = Field(default=10.0, gt=0)
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    body_timeout_seconds: float = Field(default=10.0, gt=0)
    #: an idle keep-alive connection is closed after this long (uvicorn's default)
    keep_alive_seconds: float = Field(default=5.0, gt=0)
    #: request line plus headers; an AdmissionReview request's are well under 8 KiB
    max_header_bytes: int = Field(default=64 * 1024, gt=0)
    #: open sockets at once, TLS handshakes included; the API server keeps a handful per
    #: replica. ``serve`` raises the soft open-files limit to fit them (plus 64) or refuses to start
    max_connections: int = Field(default=1000, gt=0)
    service_dns_names: tuple[str, ...] = (
        "tpu-admission",
        "tpu-admission.tpu-admission",
        "tpu-admission.tpu-admission.svc",
    )


class ClusterPolicy(_Model):
    """How the server's watch cache talks to the API server."""

    page_size: int = Field(default=500, gt=0)
    #: shortest server-side timeout of one watch request (each asks for a random one up to
    #: twice this, as client-go does); the loop then re-watches from where it was
    watch_seconds: int = Field(default=300, gt=0)
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    backoff_initial_seconds: float = Field(default=0.5, gt=0)
    backoff_max_seconds: float = Field(default=30.0, gt=0)
    #: a kind whose watch has been broken longer than this is unknown, not "as it was"
    stale_after_seconds: float = Field(default=120.0, gt=0)
    #: how often the API server sends a watch bookmark (its watch cache: about once a
    #: minute); a kind that heard nothing for twice this is unknown until it hears again
    bookmark_interval_seconds: float = Field(default=60.0, gt=0)


class LimitsPolicy(_Model):
    """How much of one object the webhook judges: every decision stays short, whatever is sent.

    The defaults are far above any real JobSet (Kueue admits at most 18 podSets per
    Workload; real pods have a handful of containers), so they only stop hostile or
    broken input, which is then refused as ``jobset-malformed`` without being walked.
    """

    max_replicated_jobs: int = Field(default=256, gt=0)
    #: containers and init containers of all pod templates of one object, together
    max_containers: int = Field(default=1024, gt=0)
    #: lines in the deny message and in the warnings; the rest is "... and N more"
    max_findings: int = Field(default=25, gt=0)
    #: one line of the answer (a finding quoting a huge value) is cut to this many characters
    max_line_chars: int = Field(default=2048, ge=200)


class QueuePermission(_Model):
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


class PolicyException(_Model):
    """An admin's approved exception: these rules only warn for the matching objects.

    ``namespaces`` and ``names`` are shell-style globs (``llm-pretrain-*``); left out,
    they match everything. The reason is required because it is what the submitter
    reads in the warning, and what the next admin reads in the policy.
    """

    rules: tuple[str, ...] = Field(min_length=1)
    namespaces: tuple[str, ...] | None = None
    names: tuple[str, ...] | None = None
    reason: str

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        _check_rule_ids(value, info)
        return value

    @field_validator("namespaces", "names")
    @classmethod
    def _no_empty_globs(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or any(not item for item in value)):
            raise ValueError("leave the key out to match everything; an empty list or pattern matches nothing")
        return value

    @field_validator("reason")
    @classmethod
    def _reason_says_something(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("say why the exception was granted (the submitter reads it in the warning)")
        return value.strip()

    def matches(self, namespace: str, name: str) -> bool:
        return (self.namespaces is None or any(fnmatchcase(namespace, glob) for glob in self.namespaces)) and (
            self.names is None or any(fnmatchcase(name, glob) for glob in self.names)
        )


class Policy(_Model):
    """The whole policy. Defaults are RFC-0033's values."""

    mode: Mode = "static"
    tier_label: str = "scheduling.antgroup.com/kueue-tier"
    queue_label: str = "kueue.x-k8s.io/queue-name"
    priority_label: str = "kueue.x-k8s.io/priority-class"
    tiers: dict[str, TierPolicy] = Field(default_factory=_rfc_tiers)
    namespace_tiers: dict[str, str] = Field(
        default_factory=lambda: {"kubemaker": "production", "default": "dev", "falcon-jobs": "dev"}
    )
    guaranteed_priority_class: str = "guaranteed"
    tpu: TpuPolicy = Field(default_factory=TpuPolicy)
    super_slice: SuperSlicePolicy = Field(default_factory=SuperSlicePolicy)
    sub_slicing: bool = True
    sub_slice_topologies: tuple[str, ...] = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
    static_topologies: tuple[str, ...] = ("4x4x4", "4x4x8", "4x8x8", "8x8x8")
    #: the TAS topology level of one static slice (RFC-0033: a node pool)
    static_slice_level: str = "cloud.google.com/gke-nodepool"
    slice_name_budget: int = Field(default=59, gt=0)
    slice_name_hash_length: int = Field(default=5, ge=0)
    suspend_allowed_users: tuple[str, ...] = ("system:serviceaccount:kueue-system:kueue-controller-manager",)
    #: who creates a JobSet's Jobs: the JobSet controller's service account (JobSet's release
    #: manifests: ``jobset-controller-manager`` in ``jobset-system``). A Job whose controller
    #: reference is a JobSet is exempt only when one of these users sends it: anyone may
    #: write an owner reference, nobody else can be this user.
    jobset_controller_users: tuple[str, ...] = ("system:serviceaccount:jobset-system:jobset-controller-manager",)
    queue_permissions: dict[str, QueuePermission] = Field(default_factory=dict)
    rules: dict[str, Action] = Field(default_factory=dict)
    #: per-object escape hatch: matching findings of these rules become warnings
    exceptions: tuple[PolicyException, ...] = ()
    server: ServerPolicy = Field(default_factory=ServerPolicy)
    limits: LimitsPolicy = Field(default_factory=LimitsPolicy)
    cluster: ClusterPolicy = Field(default_factory=ClusterPolicy)
    #: Kueue's own objects as the admin guard expects them (``lint-queues``)
    kueue: KueuePolicy = Field(default_factory=KueuePolicy)
    #: ``warn``: the validating call of a CREATE the rules admit carries one ``[simulate]`` line (what
    #: Kueue would do with the job now, ``webhook.simulate``); ``off``: no simulation. It never denies.
    simulate: Literal["warn", "off"] = "warn"

    @field_validator("tiers")
    @classmethod
    def _tier_names_are_path_segments(cls, value: dict[str, TierPolicy]) -> dict[str, TierPolicy]:
        # The tier travels as a segment of the webhook's service path, which
        # the API server only accepts as a DNS-1123 subdomain.
        for name in value:
            if not _DNS1123_SUBDOMAIN.match(name):
                raise ValueError(f"tier name {name!r} is not a DNS-1123 subdomain")
        return value

    @field_validator("sub_slice_topologies", "static_topologies")
    @classmethod
    def _are_topologies(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            _topology(item)
        return value

    @field_validator("rules", "simulate", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads an unquoted ``off`` as false; that is what people write.
        if isinstance(value, dict):
            return {key: "off" if item is False else item for key, item in value.items()}
        return "off" if value is False else value

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: dict[str, Action], info: ValidationInfo) -> dict[str, Action]:
        _check_rule_ids(value, info)
        return value

    @model_validator(mode="after")
    def _namespace_tiers_exist(self) -> Policy:
        for namespace, tier in self.namespace_tiers.items():
            if tier not in self.tiers:
                raise ValueError(
                    f"namespaceTiers.{namespace}: tier {tier!r} is not one of tiers ({', '.join(self.tiers)})"
                )
        return self

    def action_for(self, rule_id: str, default: Action) -> Action:
        return self.rules.get(rule_id, default)

    def exception_for(self, rule_id: str, namespace: str, name: str) -> PolicyException | None:
        """The first exception that covers this rule for this object, if any."""
        for exception in self.exceptions:
            if rule_id in exception.rules and exception.matches(namespace, name):
                return exception
        return None

    @cached_property
    def static_topology_set(self) -> frozenset[str]:
        return frozenset(self.static_topologies)


_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _topology(text: str) -> Topology:
    try:
        return parse_topology(text)
    except TopologyError as exc:
        raise ValueError(str(exc)) from exc


def _describe(errors: list[Any]) -> str:
    lines = []
    for error in errors:
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; keys are camelCase)"
        lines.append(f"  {key}: {message}")
    return "\n".join(lines)


def _check_rule_ids(ids: Iterable[str], info: ValidationInfo) -> None:
    """Rule IDs must be the catalog's: the loader passes them as ``rule_ids`` in the context.

    The catalog sits above this module (its rules read the policy), so it hands its IDs
    down rather than being imported here. A policy built in code, without the loader,
    is not checked.
    """
    known: Collection[str] | None = (info.context or {}).get("rule_ids")
    if known is None:
        return
    unknown = sorted(set(ids) - set(known))
    if unknown:
        hints = [
            f"{rule!r}: did you mean {close[0]!r}?" for rule in unknown if (close := get_close_matches(rule, known, 1))
        ]
        hint = f" ({'; '.join(hints)})" if hints else ""
        raise ValueError(f"unknown rule id(s) {', '.join(unknown)}{hint}; known: {', '.join(known)}")


def policy_from_mapping(data: Any, source: str = "config", rule_ids: Collection[str] | None = None) -> Policy:
    """Validate a policy document; ``rule_ids`` (the catalog's) checks every rule ID it names."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the policy config must be a YAML mapping, got {type(data).__name__}")
    try:
        return Policy.model_validate(data, context={"rule_ids": rule_ids})
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid policy config:\n{_describe(exc.errors())}") from None


def load_policy(path: str | Path | None, rule_ids: Collection[str] | None = None) -> Policy:
    """Read and validate the policy file; ``None`` gives the embedded default."""
    if path is None:
        return Policy()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the policy config: {exc.strerror}") from None
    try:
        # read as manifests are: a value PyYAML cannot build (a 5000-digit integer) is a YAMLError too
        data = yaml.load(text, Loader=ManifestLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: the policy config is not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: the policy config is nested too deeply to read") from None
    return policy_from_mapping(data, str(path), rule_ids)
