# One image with both binaries: `kaas-broker` (the StatefulSet's brokers)
# and `kaas-operator` (the chart's Deployment).
#
#   docker build -t kaas:0.1.0 .
#
# Build stage: the workspace's release build of just the two binaries
# (rdkafka is a test-only dependency, so no C toolchain beyond rustc's is
# needed).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kaas-broker -p kaas-operator \
        --bin kaas-broker --bin kaas-operator \
 && install -D -m 0755 target/release/kaas-broker /out/kaas-broker \
 && install -D -m 0755 target/release/kaas-operator /out/kaas-operator

# Runtime: Debian slim (the broker pod needs no shell: it runs
# `kaas-broker serve --id-from-pod-name`, and drains on SIGTERM itself;
# issue #13 makes the image smaller). TLS to the API server is rustls with
# the service account's CA, so no OpenSSL or CA bundle is needed.
FROM debian:bookworm-slim
COPY --from=build /out/kaas-broker /out/kaas-operator /usr/local/bin/
# Non-root by default; on a shared volume that root owns, give the brokers
# write access with KaasCluster spec.pod.securityContext (fsGroup/runAsUser).
USER 65532:65532
EXPOSE 9092 8080
CMD ["kaas-broker", "--help"]
