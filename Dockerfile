# syntax=docker/dockerfile:1
# tpu-admission: the admission webhook server image.
#   docker build -t REGISTRY/tpu-admission:0.1.0 .
# Stage 1 builds wheels for the package and its dependencies (build tools live here
# only); stage 2 installs those wheels into a virtualenv on a fresh slim base.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY webhook ./webhook
# Dependencies as wheels, also installed here: mypyc type-checks the code against them.
RUN pip wheel --wheel-dir /wheels . \
 && rm /wheels/tpu_admission-*.whl \
 && pip install /wheels/*.whl "setuptools>=68" "mypy>=1.10" types-PyYAML
# The package with its decision path compiled by mypyc (setup.py), profile-guided: an
# instrumented build is installed here, bench/pgo_train.py runs the decision path over
# the fixture corpus, and the wheel is built again from that profile. No build
# isolation, so the build sees mypy and the dependencies installed above.
COPY bench/pgo_train.py ./bench/
COPY tests/fixtures ./tests/fixtures
RUN TPU_ADMISSION_MYPYC=1 TPU_ADMISSION_PGO=generate:/pgo pip install --no-build-isolation --no-deps . \
 && python bench/pgo_train.py \
 && rm -rf build \
 && TPU_ADMISSION_MYPYC=1 TPU_ADMISSION_PGO=use:/pgo pip wheel --no-build-isolation --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE} AS runtime
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH
COPY --from=build /wheels /wheels
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-index --find-links=/wheels tpu-admission \
 && rm -rf /wheels \
 && /opt/venv/bin/pip uninstall -y pip setuptools
LABEL org.opencontainers.image.title="tpu-admission" \
      org.opencontainers.image.description="Admission webhook for JobSets on a Kueue-managed GKE TPU cluster" \
      org.opencontainers.image.licenses="Apache-2.0"
# Numeric, so runAsNonRoot can verify it without an /etc/passwd lookup; matches the
# Deployment's runAsUser. The root filesystem is read-only in the cluster.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["tpu-admission", "serve"]
CMD ["--host=0.0.0.0", "--cert-dir=/etc/tpu-admission/tls"]
