# The operator image: a slim Python runtime, the package and its pinned dependencies, a non-root user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY setup.cfg pyproject.toml README.md ./
COPY mpioperator ./mpioperator
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# 65532 is the conventional "nonroot" uid of distroless images; the manifests run as it too.
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
EXPOSE 8080 8443
ENTRYPOINT ["mpi-operator"]
