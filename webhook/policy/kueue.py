"""The policy's ``kueue:`` section: what the admin guard expects of Kueue's own objects.

RFC-0033's names and numbers for the queue model (4.1 Configuration, 4.2 and 4.6 objects)
as defaults, read by ``tpu-admission lint-queues`` (``webhook.admin``). The tiers, the tier
label, the TPU names and the mode are the policy's own keys, shared with the job rules.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

#: RFC-0033 4.2 分区树: block, the five partition geometries, the host
DYNAMIC_LEVELS = (
    "cloud.google.com/gce-topology-block",
    "cloud.google.com/gke-tpu-partition-4x4x4-id",
    "cloud.google.com/gke-tpu-partition-2x4x4-id",
    "cloud.google.com/gke-tpu-partition-2x2x4-id",
    "cloud.google.com/gke-tpu-partition-2x2x2-id",
    "cloud.google.com/gke-tpu-partition-2x2x1-id",
    "kubernetes.io/hostname",
)
#: RFC-0033 4.6 ①: a node pool (one static slice), then the host
STATIC_LEVELS = ("cloud.google.com/gke-nodepool", "kubernetes.io/hostname")


class KueuePolicy(BaseModel):
    """Kueue's objects as RFC-0033 sets them up (``lint-queues``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    #: where Kueue runs: its Configuration is this namespace's ConfigMap ``configMap``,
    #: under ``configKey``; its controller is the Deployment ``controllerDeployment``
    namespace: str = "kueue-system"
    config_map: str = "kueue-manager-config"
    config_key: str = "controller_manager_config.yaml"
    controller_deployment: str = "kueue-controller-manager"
    #: the WorkloadPriorityClasses that may exist, with their values (RFC-0033 4.2)
    priority_values: dict[str, int] = Field(
        default_factory=lambda: {"guaranteed": 1000, "best-effort": 100, "default": 10}
    )
    #: the Slice Provisioner's AdmissionCheck (dynamic mode): by controllerName, or by
    #: this name when the AdmissionChecks are not known
    slice_check_controller: str = "accelerator.gke.io/slice"
    slice_check_name: str = "tpu7x-slice"
    #: what a TPU podSet requests besides chips: the TPU resource group must cover them
    companion_resources: tuple[str, ...] = ("cpu", "memory", "ephemeral-storage")
    #: Kueue integrations RFC-0033 needs (4.1)
    required_frameworks: tuple[str, ...] = ("jobset.x-k8s.io/jobset", "batch/job", "deployment")
    #: the Topology levels a TPU flavor's Topology must have, per mode (4.2, 4.6 ①)
    static_topology_levels: tuple[str, ...] = STATIC_LEVELS
    dynamic_topology_levels: tuple[str, ...] = DYNAMIC_LEVELS
    #: the gate "免标签投递" needs, and the first Kueue minor that has it on by default
    priority_defaulting_gate: str = "WorkloadPriorityClassDefaulting"
    priority_defaulting_default_since: str = "v0.20"

    @field_validator("priority_defaulting_default_since")
    @classmethod
    def _is_minor(cls, value: str) -> str:
        parts = value.removeprefix("v").split(".")
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            raise ValueError("must be a Kueue minor version such as v0.20")
        return value
