# The operator image: a slim Python runtime, the package and its pinned dependencies in a venv, a non-root user.
# PYTHON_BASE is any image with python3 (3.11) and its venv module on PATH; the default is Docker Hub's.
ARG PYTHON_BASE=python:3.11-slim

FROM ${PYTHON_BASE} AS build
WORKDIR /src
COPY setup.cfg pyproject.toml README.md ./
COPY mpioperator ./mpioperator
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir .

FROM ${PYTHON_BASE}
COPY --from=build /opt/venv /opt/venv
# 65532 is the conventional "nonroot" uid of distroless images; the manifests run as it too.
USER 65532:65532
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
EXPOSE 8080 8443
ENTRYPOINT ["mpi-operator"]
