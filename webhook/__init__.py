"""tpu-admission: an admission webhook for JobSets, Jobs and Deployments on a Kueue-managed GKE TPU cluster."""

__version__ = "0.1.0"
