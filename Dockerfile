# syntax=docker/dockerfile:1
# tpu-admission: the admission webhook server image.
#   docker build -t REGISTRY/tpu-admission:0.1.0 .
# Pure Python, as CI tests it: nothing is compiled here. Stage 1 installs the package
# and its dependencies into a virtualenv; stage 2 is a fresh slim base with only that
# virtualenv (no source tree, no pip).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook ./webhook
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install . \
 && /opt/venv/bin/pip uninstall -y pip setuptools

FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH
# The same base image as the build stage, so the virtualenv's interpreter path holds.
COPY --from=build /opt/venv /opt/venv
LABEL org.opencontainers.image.title="tpu-admission" \
      org.opencontainers.image.description="Admission webhook for JobSets on a Kueue-managed GKE TPU cluster" \
      org.opencontainers.image.licenses="Apache-2.0"
# Numeric, so runAsNonRoot can verify it without an /etc/passwd lookup; matches the
# Deployment's runAsUser. The root filesystem is read-only in the cluster.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["tpu-admission", "serve"]
CMD ["--host=0.0.0.0", "--cert-dir=/etc/tpu-admission/tls"]
