# The controller's image: built from Debian bookworm packages, run from nothing but the binary, its
# shared libraries, the CA bundle and a passwd file (no shell, no package manager), as user 65532.
#   scripts/image build                     # here: buildah, no container engine (the README)
#   docker build -t eoc-operator .          # elsewhere
# The build steps are scripts/image-build's, which runs outside a container as well.
FROM debian:bookworm AS build
COPY scripts/bootstrap /src/scripts/bootstrap
RUN /src/scripts/bootstrap --image
COPY . /src
# CCACHE_DIR: scripts/image mounts a cache there; without one it is an empty folder.
RUN CCACHE_DIR=/ccache CCACHE_MAXSIZE=2G /src/scripts/image-build /src /rootfs

FROM scratch
# scripts/image passes these: the project's version (CMakeLists.txt), the commit, the repository.
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=unknown
COPY --from=build /rootfs/ /
USER 65532:65532
# The pick endpoint, /metrics, and /healthz and /readyz (eoc-controller --help).
EXPOSE 8090 8080 8081
ENTRYPOINT ["/usr/local/bin/eoc-controller"]
LABEL org.opencontainers.image.title="eoc-operator" \
      org.opencontainers.image.description="Energy- and carbon-aware routing and autoscaling for LLM inference pools on Kubernetes" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
