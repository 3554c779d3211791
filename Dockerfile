# syntax=docker/dockerfile:1
# tpu-admission: the admission webhook server image.
#   docker build -t REGISTRY/tpu-admission:0.1.0 .
# Pure Python, as CI tests it: nothing is compiled here. Stage 1 installs the package
# and its dependencies into a virtualenv; stage 2 is a fresh slim base with only that
# virtualenv (no source tree, no pip).
#
# What is installed is requirements.lock: exact versions with their hashes, the same file
# CI installs before it tests (.ci/run). Regenerate it when pyproject.toml's dependencies
# change (the command is at its top); tests/test_lock.py fails while it is stale.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
# Every dependency and the build backend (setuptools) as the lock pins them, each file
# checked against its hashes, wheels only. A layer of its own: a code change reuses it.
COPY requirements.lock ./
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes --only-binary=:all: -r requirements.lock
# The package itself, built by that setuptools (no build isolation, no index: nothing
# more is fetched, and a dependency missing from the lock fails the build here).
COPY pyproject.toml README.md ./
COPY webhook ./webhook
RUN /opt/venv/bin/pip install --no-index --no-build-isolation . \
 && /opt/venv/bin/pip check \
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
