# The project's image, from Debian bookworm packages only. The build stage runs the unit tests
# (the integration tests need a control plane: scripts/test runs them).
#   docker build -t eoc-operator .
FROM debian:bookworm AS build
COPY scripts/bootstrap /src/scripts/bootstrap
RUN /src/scripts/bootstrap --build-only
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build \
 && ctest --test-dir /build -L unit --output-on-failure

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libcpprest2.10 libyaml-cpp0.7 libssl3 \
      libprometheus-cpp-core1.0 libspdlog1.10 libfmt9 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/controller/eoc-controller /usr/local/bin/eoc-controller
COPY --from=build /build/demo/eoc-kube-tour /usr/local/bin/eoc-kube-tour
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/eoc-controller"]
