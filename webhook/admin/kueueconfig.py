"""Kueue's Configuration as Kueue reads it at start: strictly decoded, then validated.

Kueue (v0.19.2) reads ``controller_manager_config.yaml`` once, at start, with a strict
decoder (``pkg/config/config.go``, ``fromFile``: ``serializer.EnableStrict``): an unknown
or duplicated field is an error and the controller exits, so a typo in the ConfigMap
crash-loops Kueue at its next restart (RFC-0033 4.1: the ConfigMap is not hot-reloaded,
a ``rollout restart`` applies it). It then validates the values (``pkg/config/
validation.go``, ``Validate`` and ``LoadAndValidateFeatureGates``). This module restates
both as tables, in our own words:

- ``SCHEMA``: the fields of ``config.kueue.x-k8s.io/v1beta2`` ``Configuration``
  (``apis/config/v1beta2/configuration_types.go``, with the inlined ``ControllerManager``
  and component-base's ``LeaderElectionConfiguration``) and the JSON type each decodes
  into; a value of another type fails decoding as an unknown field does;
- ``REMOVED``: fields of v1beta1 that v1beta2 no longer has, with what replaced them;
- ``FRAMEWORKS``: the integration names Kueue registers (``pkg/controller/jobs/*``,
  ``FrameworkName``);
- ``FEATURE_GATES``: the gate names Kueue knows (``pkg/features/kube_features.go``);
- ``PREEMPTION_STRATEGY_SETS``: the fair-sharing strategy lists it accepts;
- the value checks of ``Validate`` that a GitOps change can break (below, one function
  each, as Kueue splits them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from webhook.kube.fieldpaths import ROOT, FieldPath
from webhook.kube.quantity import quantity_or_none, shown
from webhook.kube.scheduling import selector_matches
from webhook.kube.typos import did_you_mean

# Field types: a JSON type name, ("list", T), ("map", T), or a struct (dict of fields).
Type = Any
SELECTOR: Final[dict[str, Type]] = {
    "matchLabels": ("map", "str"),
    "matchExpressions": ("list", {"key": "str", "operator": "str", "values": ("list", "str")}),
}
_EXEC_CONFIG: Final = "any"  # client-go's ExecConfig: validated by Kueue only for MultiKueue
_ACCESS_PROVIDER: Final[dict[str, Type]] = {"name": "str", "execConfig": _EXEC_CONFIG}

SCHEMA: Final[dict[str, Type]] = {
    "apiVersion": "str",
    "kind": "str",
    "namespace": "str",
    # ControllerManager, inlined
    "webhook": {"port": "int", "host": "str", "certDir": "str"},
    "leaderElection": {
        "leaderElect": "bool",
        "leaseDuration": "duration",
        "renewDeadline": "duration",
        "retryPeriod": "duration",
        "resourceLock": "str",
        "resourceName": "str",
        "resourceNamespace": "str",
    },
    "metrics": {
        "bindAddress": "str",
        "enableClusterQueueResources": "bool",
        "customLabels": (
            "list",
            {
                "name": "str",
                "sourceLabelKey": "str",
                "sourceAnnotationKey": "str",
                "sourceKind": "str",
                "trackedValues": ("list", "str"),
            },
        ),
        "localQueueMetrics": {"enable": "bool", "localQueueSelector": SELECTOR},
    },
    "health": {"healthProbeBindAddress": "str", "readinessEndpointName": "str", "livenessEndpointName": "str"},
    "pprofBindAddress": "str",
    "controller": {"groupKindConcurrency": ("map", "int"), "cacheSyncTimeout": "int"},
    "tls": {"minVersion": "str", "cipherSuites": ("list", "str"), "curvePreferences": ("list", "int")},
    # Configuration's own
    "manageJobsWithoutQueueName": "bool",
    "managedJobsNamespaceSelector": SELECTOR,
    "internalCertManagement": {"enable": "bool", "webhookServiceName": "str", "webhookSecretName": "str"},
    "waitForPodsReady": {
        "timeout": "duration",
        "blockAdmission": "bool",
        "requeuingStrategy": {
            "timestamp": "str",
            "backoffLimitCount": "int",
            "backoffBaseSeconds": "int",
            "backoffMaxSeconds": "int",
        },
        "recoveryTimeout": "duration",
    },
    "clientConnection": {"qps": "float", "burst": "int"},
    "integrations": {
        "frameworks": ("list", "str"),
        "externalFrameworks": ("list", "str"),
        "labelKeysToCopy": ("list", "str"),
    },
    "multiKueue": {
        "gcInterval": "duration",
        "origin": "str",
        "workerLostTimeout": "duration",
        "dispatcherName": "str",
        "externalFrameworks": ("list", {"name": "str"}),
        "clusterProfile": {
            "accessProviders": ("list", _ACCESS_PROVIDER),
            "credentialsProviders": ("list", _ACCESS_PROVIDER),
        },
        "incrementalDispatcherConfig": {"stepSize": "int"},
    },
    "fairSharing": {"preemptionStrategies": ("list", "str")},
    "admissionFairSharing": {
        "usageHalfLifeTime": "duration",
        "usageSamplingInterval": "duration",
        "resourceWeights": ("map", "float"),
    },
    "resources": {
        "quotaCheckStrategy": "str",
        "excludeResourcePrefixes": ("list", "str"),
        "transformations": (
            "list",
            {"input": "str", "strategy": "str", "multiplyBy": "str", "outputs": ("map", "quantity")},
        ),
        "deviceClassMappings": (
            "list",
            {"name": "str", "deviceClassNames": ("list", "str"), "sources": ("list", "any")},
        ),
    },
    "featureGates": ("map", "bool"),
    "objectRetentionPolicies": {"workloads": {"afterFinished": "duration", "afterDeactivatedByKueue": "duration"}},
    "visibilityServer": {"bindAddress": "str", "bindPort": "int"},
}

#: v1beta1 fields v1beta2 dropped (``apis/config/v1beta1`` against ``v1beta2``), with what to do
REMOVED: Final[dict[tuple[str, ...], str]] = {
    ("fairSharing", "enable"): "v1beta1 only: in v1beta2 the fairSharing block being there turns fair sharing on",
    ("waitForPodsReady", "enable"): "v1beta1 only: in v1beta2 the waitForPodsReady block being there turns it on",
    ("integrations", "podOptions"): "v1beta1 only: v1beta2 scopes the pod integrations with "
    "managedJobsNamespaceSelector",
    ("queueVisibility",): "v1beta1 only: v1beta2 serves pending workloads through the visibility API "
    "(VisibilityOnDemand)",
}

FRAMEWORKS: Final = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/jaxjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "pod",
    "deployment",
    "statefulset",
    "ray.io/raycluster",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "sparkoperator.k8s.io/sparkapplication",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
)

_GATE_NAMES: Final = """
    PartialAdmission FlavorFungibility VisibilityOnDemand DisableWaitForPodsReady PrioritySortingWithinCohort
    FairSharingPreemptWithinNominal FairSharingPrioritizeNonBorrowing MultiKueue TopologyAwareScheduling
    LocalQueueMetrics TASProfileMixed HierarchicalCohorts AdmissionFairSharing ObjectRetentionPolicies
    TASFailedNodeReplacement ElasticJobsViaWorkloadSlices ElasticJobsViaWorkloadSlicesWithTAS
    TASFailedNodeReplacementFailFast TASReplaceNodeOnPodTermination SkipReassignmentForPodOwnedWorkloads
    TASReplaceNodeDueToNotReadyOverFixedTime ManagedJobsNamespaceSelectorAlwaysRespected TASBalancedPlacement
    TASAssignmentsEncodingByHostnamePrefix KueueDRAIntegration KueueDRAIntegrationExtendedResource
    QuotaCheckStrategy KueueDRARejectWorkloadsWhenDRADisabled KueueDRAIntegrationPartitionableDevices
    KueueDRAIntegrationConsumableCapacity MultiKueueAdaptersForCustomJobs WorkloadRequestUseMergePatch
    MultiKueueAllowInsecureKubeconfigs MultiKueueKubeConfigPathValidation ReclaimablePods
    PropagateBatchJobLabelsToWorkload MultiKueueClusterProfile FailureRecoveryPolicy
    SkipFinalizersForPodsSuspendedByParent MultiKueueWaitForWorkloadAdmitted MultiKueueRedoAdmissionOnEvictionInWorker
    TLSOptions RemoveFinalizersWithStrictPatch TASReplaceNodeOnNodeTaints AssignQueueLabelsForPods
    TASMultiLayerTopology SchedulingEquivalenceHashing SchedulerLongRequeueInterval
    SchedulerTimestampPreemptionBuffer CustomMetricLabels SparkApplicationIntegration
    MultiKueueOrchestratedPreemption PriorityBoost AdmissionGatedBy ShortWorkloadNames
    FastQuotaReleaseInPodIntegration RejectUpdatesToCQWithInvalidOnFlavors FinishOrphanedWorkloads
    MultiKueueIncrementalDispatcherConfig MultiKueueIncrementalDispatcherRespectConfigOrder ConcurrentAdmission
    MetricForWorkloadCreationLatency TASRespectNodeAffinityPreferred MultiKueueManagerQuotaAutomation
    WorkloadIdentifierAnnotations WorkloadPriorityClassDefaulting MetricsForCohorts
    CleanupProvisioningRequestsOnEviction TASHandleOverlappingFlavors UnadmittedWorkloadsObservability
    TASRecomputeAssignmentWithinSchedulingCycle UnadmittedWorkloadsExplicitStatus
    DeferRayServiceFinalizationForRedisCleanup TASCacheNodeMatchResults TASCachingRemainingResources
    TASCacheTopologyTree SchedulerLibraryIntegration VectorizedResourceRequests
    WorkloadValidateResourcesAreNonNegative TASValidateWorkloadSliceSize WorkloadValidationForPodSetMetadata
    PrioritizePreemptorWorkloads LWSImmutableGroupSize FlavorFungibilityPreserveScanProgress
    SkipAncestorCheckForDeletedWorkloads MultiKueueRemoteSpecSync RecomputeAssignmentUponPreemptionTargetsOverlap
    PodIntegrationValidateGroupOwner ValidateRayAndSparkJobUpdates"""
FEATURE_GATES: Final = frozenset(_GATE_NAMES.split())

PREEMPTION_STRATEGY_SETS: Final = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)
REQUEUING_TIMESTAMPS: Final = ("Creation", "Eviction")
TRANSFORMATION_STRATEGIES: Final = ("Retain", "Replace")
QUOTA_CHECK_STRATEGIES: Final = ("BlockUndeclared", "IgnoreUndeclared")
#: the namespace Kueue runs in when the Configuration names none (``defaults.go``)
DEFAULT_NAMESPACE: Final = "kueue-system"

# Go's time.ParseDuration: a sequence of decimal numbers with units, an optional sign, or "0"
_DURATION: Final = re.compile(r"^[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)$")
_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART: Final = re.compile(r"((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(ns|us|µs|μs|ms|s|m|h)")


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason Kueue would not start with this Configuration."""

    path: FieldPath
    #: the rule's wording: unknown-field, removed-field, duplicate, wrong-type, invalid
    wording: str
    detail: str


def seconds(text: str) -> float | None:
    """A Go duration (``10m``, ``1h30m``, ``-5s``) in seconds; ``None`` when it is not one."""
    if not _DURATION.fullmatch(text):
        return None
    sign = -1.0 if text.startswith("-") else 1.0
    return sign * sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(text))


# ---------------------------------------------------------------- strict decoding


#: unknown names given a "did you mean" per Configuration: each costs a comparison with
#: every known name, and a megabyte of ConfigMap holds tens of thousands of names, while
#: an answer shows a few dozen findings (``server.maxFindings``)
HINTED: Final = 100


class _Hints:
    """How many more unknown names may be given a "did you mean" (``HINTED``)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = HINTED

    def meant(self, word: str, known: Iterable[str]) -> str | None:
        if self.left <= 0:
            return None
        self.left -= 1
        return did_you_mean(word, known)


def decode(config: Mapping[str, Any]) -> list[Problem]:
    """Every field the strict decoder refuses: unknown (or removed), or of the wrong type."""
    return list(_walk(config, SCHEMA, ROOT, (), _Hints()))


def duplicates(node: yaml.Node | None, path: FieldPath = ROOT) -> Iterator[Problem]:
    """Keys written twice in one mapping: YAML keeps the last, Kueue's strict decoder refuses them."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(getattr(key, "value", ""))
            if name in seen:
                yield Problem(path.child(name), "duplicate", "")
            seen.add(name)
            yield from duplicates(value, path.child(name))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from duplicates(item, path.index(index))


def _walk(value: Any, schema: Type, path: FieldPath, names: tuple[str, ...], hints: _Hints) -> Iterator[Problem]:
    if schema == "any" or value is None:  # null decodes into any field as its zero value
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            yield Problem(path, "wrong-type", f"must be an object, not {_json_type(value)}")
            return
        for key, item in value.items():
            key = str(key)
            child = path.child(key)
            if key not in schema:
                removed = REMOVED.get((*names, key))
                if removed is not None:
                    yield Problem(child, "removed-field", removed)
                else:
                    meant = hints.meant(key, schema)
                    yield Problem(child, "unknown-field", f"did you mean {meant!r}?" if meant else "")
                continue
            yield from _walk(item, schema[key], child, (*names, key), hints)
        return
    if isinstance(schema, tuple):
        container, inner = schema
        if container == "list":
            if not isinstance(value, list):
                yield Problem(path, "wrong-type", f"must be a list, not {_json_type(value)}")
                return
            for index, item in enumerate(value):
                yield from _walk(item, inner, path.index(index), names, hints)
        else:
            if not isinstance(value, dict):
                yield Problem(path, "wrong-type", f"must be a map, not {_json_type(value)}")
                return
            for key, item in value.items():
                yield from _walk(item, inner, path.key(str(key)), names, hints)
        return
    problem = _scalar(value, schema)
    if problem:
        yield Problem(path, "wrong-type", problem)


def _scalar(value: Any, kind: str) -> str:
    if kind == "bool":
        return "" if isinstance(value, bool) else f"must be true or false, not {_json_type(value)} {shown(value)}"
    if kind == "str":
        return "" if isinstance(value, str) else f"must be a string, not {_json_type(value)} {shown(value)}"
    if kind == "int":
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            return f"must be an integer, not {_json_type(value)} {shown(value)}"
        return ""
    if kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return "" if ok else f"must be a number, not {_json_type(value)} {shown(value)}"
    if kind == "duration":
        if not isinstance(value, str):
            return f"must be a duration string such as 10m, not {_json_type(value)} {shown(value)}"
        return "" if seconds(value) is not None else f"{shown(value)} is not a duration (such as 10m, 90s or 1h30m)"
    if kind == "quantity":
        return "" if quantity_or_none(value) is not None else f"{shown(value)} is not a quantity"
    return ""


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# ---------------------------------------------------------------- validation


def _get(config: Mapping[str, Any], *keys: str) -> Any:
    value: Any = config
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def validate(config: Mapping[str, Any], cli_gates: str | None) -> list[Problem]:
    """The value checks of Kueue's start-up validation a GitOps change can break.

    ``cli_gates`` is the controller's ``--feature-gates`` value when its Deployment is
    known (``None`` otherwise).
    """
    problems: list[Problem] = []
    for check in (
        _api_version,
        _wait_for_pods_ready,
        _integrations,
        _fair_sharing,
        _admission_fair_sharing,
        _transformations,
        _quota_check_strategy,
        _namespace_selector,
        _retention,
        _visibility_server,
        _multi_kueue,
    ):
        problems += check(config)
    problems += _feature_gates(config, cli_gates)
    return problems


def _api_version(config: Mapping[str, Any]) -> list[Problem]:
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if not isinstance(kind, str) or not kind:
        return [Problem(ROOT.child("kind"), "invalid", "is missing: the decoder needs kind: Configuration")]
    if not isinstance(api_version, str) or not api_version:
        return [Problem(ROOT.child("apiVersion"), "invalid", "is missing: use config.kueue.x-k8s.io/v1beta2")]
    if kind != "Configuration" or api_version.rpartition("/")[0] != "config.kueue.x-k8s.io":
        return [Problem(ROOT.child("kind"), "invalid", f"{api_version} {kind} is not Kueue's Configuration")]
    return []


def _negative(config: Mapping[str, Any], *keys: str) -> list[Problem]:
    value = _get(config, *keys)
    if isinstance(value, str) and (amount := seconds(value)) is not None and amount < 0:
        return [Problem(FieldPath(keys), "invalid", f"{value} must not be negative")]
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return [Problem(FieldPath(keys), "invalid", f"{value} must not be negative")]
    return []


def _wait_for_pods_ready(config: Mapping[str, Any]) -> list[Problem]:
    if not isinstance(config.get("waitForPodsReady"), dict):
        return []
    problems = _negative(config, "waitForPodsReady", "timeout") + _negative(
        config, "waitForPodsReady", "recoveryTimeout"
    )
    timestamp = _get(config, "waitForPodsReady", "requeuingStrategy", "timestamp")
    if timestamp is not None and timestamp not in REQUEUING_TIMESTAMPS:
        problems.append(
            Problem(
                FieldPath(("waitForPodsReady", "requeuingStrategy", "timestamp")),
                "invalid",
                f"{shown(timestamp)} is not one of {', '.join(REQUEUING_TIMESTAMPS)}",
            )
        )
    for key in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
        problems += _negative(config, "waitForPodsReady", "requeuingStrategy", key)
    return problems


def frameworks(config: Mapping[str, Any]) -> list[str]:
    """The integrations Kueue enables: as listed, or its default (batch/job) when none are."""
    listed = _get(config, "integrations", "frameworks")
    if isinstance(listed, list) and listed:
        return [str(item) for item in listed]
    return ["batch/job"]


def _integrations(config: Mapping[str, Any]) -> list[Problem]:
    listed = _get(config, "integrations", "frameworks")
    problems: list[Problem] = []
    seen: set[str] = set()
    path = FieldPath(("integrations", "frameworks"))
    hints = _Hints()
    for index, name in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(name, str):
            continue
        if name not in FRAMEWORKS:
            meant = hints.meant(name, FRAMEWORKS)
            hint = f" (did you mean {meant!r}?)" if meant else ""
            problems.append(
                Problem(path.index(index), "invalid", f"{shown(name)} is not an integration Kueue has{hint}")
            )
        elif name in seen:
            problems.append(Problem(path.index(index), "invalid", f"{shown(name)} is listed twice"))
        seen.add(name)
    external = _get(config, "integrations", "externalFrameworks")
    for index, name in enumerate(external if isinstance(external, list) else []):
        if isinstance(name, str) and name.count(".") < 2:
            problems.append(
                Problem(
                    FieldPath(("integrations", "externalFrameworks", index)),
                    "invalid",
                    f"{shown(name)} is not of the form Kind.version.group.com",
                )
            )
    return problems


def _fair_sharing(config: Mapping[str, Any]) -> list[Problem]:
    block = config.get("fairSharing")
    if not isinstance(block, dict):
        return []
    strategies = block.get("preemptionStrategies")
    path = FieldPath(("fairSharing", "preemptionStrategies"))
    if not isinstance(strategies, list) or not strategies:
        return [Problem(path, "invalid", "must be set when fairSharing is (Kueue has no default for it)")]
    if tuple(strategies) not in PREEMPTION_STRATEGY_SETS:
        allowed = " or ".join("[" + ", ".join(s) + "]" for s in PREEMPTION_STRATEGY_SETS)
        return [Problem(path, "invalid", f"[{', '.join(map(str, strategies))}] is not one of {allowed}")]
    return []


def _admission_fair_sharing(config: Mapping[str, Any]) -> list[Problem]:
    if not isinstance(config.get("admissionFairSharing"), dict):
        return []
    problems = _negative(config, "admissionFairSharing", "usageHalfLifeTime")
    interval = _get(config, "admissionFairSharing", "usageSamplingInterval")
    if isinstance(interval, str) and (amount := seconds(interval)) is not None and amount < 0:
        problems.append(
            Problem(FieldPath(("admissionFairSharing", "usageSamplingInterval")), "invalid", "must be more than 0")
        )
    weights = _get(config, "admissionFairSharing", "resourceWeights")
    for name, weight in weights.items() if isinstance(weights, dict) else []:
        if isinstance(weight, int | float) and weight < 0:
            problems.append(
                Problem(
                    FieldPath(("admissionFairSharing", "resourceWeights")).key(str(name)),
                    "invalid",
                    f"{weight} must not be negative",
                )
            )
    return problems


def _transformations(config: Mapping[str, Any]) -> list[Problem]:
    listed = _get(config, "resources", "transformations")
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, item in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(item, dict):
            continue
        path = FieldPath(("resources", "transformations", index))
        strategy = item.get("strategy", "Retain")
        if strategy not in TRANSFORMATION_STRATEGIES:
            problems.append(Problem(path.child("strategy"), "invalid", f"{shown(strategy)} is not Retain or Replace"))
        name = str(item.get("input"))
        if name in seen:
            problems.append(Problem(path.child("input"), "invalid", f"{shown(name)} is transformed twice"))
        seen.add(name)
    return problems


def _quota_check_strategy(config: Mapping[str, Any]) -> list[Problem]:
    # checked by Kueue only behind its QuotaCheckStrategy gate; an unknown value is a typo either way
    strategy = _get(config, "resources", "quotaCheckStrategy")
    if strategy is not None and strategy not in QUOTA_CHECK_STRATEGIES:
        return [
            Problem(
                FieldPath(("resources", "quotaCheckStrategy")),
                "invalid",
                f"{shown(strategy)} is not one of {', '.join(QUOTA_CHECK_STRATEGIES)}",
            )
        ]
    return []


_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def _namespace_selector(config: Mapping[str, Any]) -> list[Problem]:
    selector = config.get("managedJobsNamespaceSelector")
    path = ROOT.child("managedJobsNamespaceSelector")
    if not isinstance(selector, dict):
        if "pod" in frameworks(config) and selector is None and "managedJobsNamespaceSelector" in config:
            return [Problem(path, "invalid", "cannot be empty when the pod integration is enabled")]
        return []
    problems: list[Problem] = []
    expressions = selector.get("matchExpressions")
    for index, expression in enumerate(expressions if isinstance(expressions, list) else []):
        if not isinstance(expression, dict):
            continue
        operator, values = expression.get("operator"), expression.get("values") or []
        where = path.child("matchExpressions").index(index)
        if operator not in _OPERATORS:
            problems.append(
                Problem(where.child("operator"), "invalid", f"{shown(operator)} is not one of {', '.join(_OPERATORS)}")
            )
        elif operator in ("In", "NotIn") and not values:
            problems.append(Problem(where.child("values"), "invalid", f"must be set for operator {operator}"))
        elif operator in ("Exists", "DoesNotExist") and values:
            problems.append(Problem(where.child("values"), "invalid", f"must be empty for operator {operator}"))
    if problems:
        return problems
    namespace = config.get("namespace") if isinstance(config.get("namespace"), str) else DEFAULT_NAMESPACE
    for protected in ("kube-system", namespace or DEFAULT_NAMESPACE):
        if selector_matches(selector, {"kubernetes.io/metadata.name": protected}):
            problems.append(
                Problem(path, "invalid", f"matches the {protected!r} namespace, which Kueue refuses to manage")
            )
    return problems


def _retention(config: Mapping[str, Any]) -> list[Problem]:
    return _negative(config, "objectRetentionPolicies", "workloads", "afterFinished") + _negative(
        config, "objectRetentionPolicies", "workloads", "afterDeactivatedByKueue"
    )


def _visibility_server(config: Mapping[str, Any]) -> list[Problem]:
    port = _get(config, "visibilityServer", "bindPort")
    if isinstance(port, int) and not isinstance(port, bool) and not 1 <= port <= 65535:
        return [Problem(FieldPath(("visibilityServer", "bindPort")), "invalid", f"{port} is not a port (1-65535)")]
    return []


def _multi_kueue(config: Mapping[str, Any]) -> list[Problem]:
    if not isinstance(config.get("multiKueue"), dict):
        return []
    return _negative(config, "multiKueue", "gcInterval") + _negative(config, "multiKueue", "workerLostTimeout")


# ---------------------------------------------------------------- feature gates


def parse_gates(text: str) -> dict[str, str]:
    """``A=true,B=false`` as the controller's ``--feature-gates`` flag holds it."""
    gates: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        gates[name.strip()] = value.strip()
    return gates


def cli_gates(args: list[str]) -> str | None:
    """The ``--feature-gates`` value among a container's command and args, if set."""
    found: str | None = None
    for index, arg in enumerate(args):
        if arg.startswith("--feature-gates="):
            found = arg.partition("=")[2]
        elif arg == "--feature-gates" and index + 1 < len(args):
            found = args[index + 1]
    return found


def _feature_gates(config: Mapping[str, Any], cli: str | None) -> list[Problem]:
    path = ROOT.child("featureGates")
    in_config = config.get("featureGates")
    problems: list[Problem] = []
    if cli is not None and cli.strip() and isinstance(in_config, dict):
        problems.append(
            Problem(
                path,
                "invalid",
                "is set while the controller's Deployment also passes --feature-gates (gates in both places)",
            )
        )
    hints = _Hints()
    for name in in_config if isinstance(in_config, dict) else {}:
        if str(name) not in FEATURE_GATES:
            meant = hints.meant(str(name), FEATURE_GATES)
            hint = f" (did you mean {meant!r}?)" if meant else ""
            problems.append(
                Problem(path.key(str(name)), "invalid", f"{shown(name)} is not a feature gate Kueue has{hint}")
            )
    return problems


def gate_enabled(config: Mapping[str, Any], cli: str | None, gate: str) -> bool:
    """Whether ``gate`` is turned on: in ``--feature-gates`` when given, else in ``featureGates``."""
    if cli is not None and cli.strip():
        return parse_gates(cli).get(gate, "").lower() == "true"
    in_config = config.get("featureGates")
    return isinstance(in_config, dict) and in_config.get(gate) is True


def version_below(image: str, minor: str) -> bool | None:
    """Whether the image's tag (``…/kueue:v0.19.2``) is a Kueue release before ``minor`` (``v0.20``)."""
    tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
    match = re.match(r"^v?(\d+)\.(\d+)", tag)
    wanted = re.match(r"^v?(\d+)\.(\d+)$", minor)
    if match is None or wanted is None:
        return None
    have = (int(match.group(1)), int(match.group(2)))
    return have < (int(wanted.group(1)), int(wanted.group(2)))
