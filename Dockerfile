# oidc-discovery as a container: built on Debian 12, run on debian:12-slim
# with only the runtime libraries, as an unprivileged user.
#
#   docker build -t oidc-discovery --build-arg OIDC_BUILD_COMMIT="$(git rev-parse --short=12 HEAD)" .
#   docker run --rm -p 8080:8080 -v /etc/kubernetes/pki/sa.pub:/keys/sa.pub:ro \
#     oidc-discovery serve --service-account-issuer https://oidc.example.com \
#     --service-account-key-file /keys/sa.pub --listen 0.0.0.0:8080 --admin-listen 0.0.0.0:9090

FROM debian:12 AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        build-essential cmake pkg-config libh2o-dev libh2o-evloop-dev libssl-dev libcurl4-openssl-dev \
        libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .git is not in the context (.dockerignore): --version and oidc_build_info
# name this commit, e.g. --build-arg OIDC_BUILD_COMMIT=$(git rev-parse --short=12 HEAD).
ARG OIDC_BUILD_COMMIT=
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DOIDC_TESTS=OFF -DOIDC_BUILD_COMMIT="${OIDC_BUILD_COMMIT}" \
    && cmake --build /build -j"$(nproc)" \
    && cmake --install /build --prefix /usr/local --strip

FROM debian:12-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libh2o-evloop0.13 libssl3 libcurl4 libnghttp2-14 libprotobuf-c1 \
        ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 oidc \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin oidc
COPY --from=build /usr/local/bin/oidc-discovery /usr/local/bin/oidc-discovery
# The external signer's module (libnghttp2-14 and libprotobuf-c1 above are
# its libraries), loaded only for --external-signer-listen.
COPY --from=build /usr/local/lib/oidc-discovery/ /usr/local/lib/oidc-discovery/
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/oidc-discovery"]
CMD ["--help"]
