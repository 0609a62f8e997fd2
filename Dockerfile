# One image with both binaries: `kaas-broker` (the StatefulSet's brokers)
# and `kaas-operator` (the chart's Deployment).
#
# With a registry:   docker build -t kaas:0.1.0 .
# Without one:       scripts/build-image (builds the binaries on the host,
#                    imports a base made of what they link, and builds the
#                    `prebuilt` stage below with --pull=never).
#
# The runtime's base (below); an ARG used by FROM comes before the first.
ARG BASE=debian:bookworm-slim

# Build stage: the workspace's release build of just the two binaries
# (rdkafka is a test-only dependency, so no C toolchain beyond rustc's is
# needed), stripped.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kaas-broker -p kaas-operator \
        --bin kaas-broker --bin kaas-operator \
 && install -D -s -m 0755 target/release/kaas-broker /out/kaas-broker \
 && install -D -s -m 0755 target/release/kaas-operator /out/kaas-operator

# Runtime: nothing the binaries do not use. No shell is needed: broker pods
# run `kaas-broker serve --id-from-pod-name` and drain on SIGTERM
# themselves. TLS to the API server is rustls with the service account's
# CA, so no OpenSSL or CA bundle either. BASE must hold glibc (Debian 12's
# or newer); scripts/build-image makes one of just that.
FROM ${BASE} AS runtime
# Non-root; on a shared volume that root owns, give the brokers write
# access with KaasCluster spec.pod.securityContext (fsGroup/runAsUser).
USER 65532:65532
EXPOSE 9092 8080
CMD ["kaas-broker", "--help"]

# Binaries built on the host: the build context is a folder holding them
# (scripts/build-image).
FROM runtime AS prebuilt
COPY kaas-broker kaas-operator /usr/local/bin/

# The default: built from source above.
FROM runtime
COPY --from=build /out/kaas-broker /out/kaas-operator /usr/local/bin/
