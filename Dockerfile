# syntax=docker/dockerfile:1
# The pizza-apiserver image: `docker build -t pizza-apiserver:0.1.0 .` (BuildKit, the default builder
# since Docker 23). Kubernetes manifests: deploy/ (kubectl apply -k deploy/). The image also holds the
# `pizza-controller` console script (deploy/controller/).
ARG PYTHON_IMAGE=python:3.11-slim

# Build stage: one wheel for the project and one per dependency, so the runtime stage installs offline
# and carries no build tooling or sources.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml ./
# The packages pyproject.toml ships ([tool.setuptools.packages.find] include).
COPY apis/ apis/
COPY controller/ controller/
COPY registry/ registry/
COPY server/ server/
COPY storage/ storage/
RUN pip wheel --wheel-dir=/wheels .

FROM ${PYTHON_IMAGE} AS runtime
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
# A fixed numeric user: Kubernetes can only enforce runAsNonRoot for a numeric USER, and
# deploy/deployment.yaml runs as the same uid/gid.
RUN groupadd --system --gid 10001 pizza \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /var/lib/pizza-apiserver --shell /usr/sbin/nologin pizza \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/pizza-apiserver
# The wheels are bind-mounted, not copied, so they leave no layer behind. pip compiles the bytecode
# here, as root: at run time the root filesystem may be read-only.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --root-user-action=ignore --no-index --find-links=/wheels pizza-apiserver
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /var/lib/pizza-apiserver
EXPOSE 8443
ENTRYPOINT ["pizza-apiserver"]
# Defaults for a container (Kubernetes `args` replace them): listen on all interfaces, keep the
# generated certificates and the embedded storage in the data directory (mount a volume there, or add
# --etcd-servers). For the aggregator also pass --serving-cert-dns-names=<service>.<namespace>.svc.
CMD ["--bind-address=0.0.0.0", "--secure-port=8443", "--data-dir=/var/lib/pizza-apiserver"]
