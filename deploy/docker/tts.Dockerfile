# syntax=docker/dockerfile:1
# The Transaction Token Service (cmd/tts) as a small static image
# that runs as a non-root user.
# Build from the repository root (the context is the whole module):
#
#   docker build -f deploy/docker/tts.Dockerfile -t dialogtrust/tts .
#
# tts.Dockerfile.dockerignore (next to this file; BuildKit reads it instead of a
# .dockerignore at the root) keeps .git, build output and deploy/ out of the context.

# The builder runs on the build machine's platform and cross-compiles for the target
# (docker buildx build --platform linux/amd64,linux/arm64): no emulation needed.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
# Modules first: a source change then reuses the downloaded modules layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO_ENABLED=0: a static binary, since the final image has no libc.
# -trimpath: no paths of the build machine in the binary (reproducible builds).
# -s -w: no symbol table or DWARF; smaller, and stack traces keep function names.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/tts ./cmd/tts
# The data directory (keys.data_dir), owned by the runtime user, so that a volume
# mounted there starts out writable by it. The final image has no shell to mkdir.
RUN mkdir -p /out/data

# --- The HSM variant (target hsm) ---------------------------------------------------
# The same command built with cgo, for keys in a PKCS#11 token (keys.pkcs11): crypto11
# loads the HSM vendor's module with dlopen, which a static binary cannot do (it refuses
# keys.pkcs11 with pkcs11_unavailable). Build it with --target hsm and tag it -hsm (the
# Helm chart's hsmImage values must end in -hsm):
#
#   docker build -f deploy/docker/tts.Dockerfile --target hsm -t dialogtrust/tts:dev-hsm .
#
# The default target (the last stage, below) stays the static image; BuildKit builds
# only the stages a target needs.

# No --platform=$BUILDPLATFORM: cgo cross-compiling would need a C cross toolchain, so
# this builder runs on the target's platform (emulated for another architecture). Its
# Debian release (bookworm) is the final image's (debian12): the binary needs no newer
# glibc than the one it runs with.
FROM golang:1.26-bookworm AS build-hsm
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO_ENABLED=1: linked against glibc, so that the module can be loaded at run time.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 \
    go build -trimpath -ldflags="-s -w" -o /out/tts ./cmd/tts
# The data directory, as in the static image.
RUN mkdir -p /out/data

# distroless/cc: glibc, libgcc and libstdc++ (which vendors' PKCS#11 modules, often C++,
# link against), OpenSSL's libraries, CA certificates, and no shell or package manager.
# The module itself is not in the image: the operator mounts it (docs/operator.md,
# "Keys in an HSM").
FROM gcr.io/distroless/cc-debian12:nonroot AS hsm
COPY --from=build-hsm /out/tts /usr/local/bin/tts
COPY --from=build-hsm --chown=65532:65532 /out/data /var/lib/dialogtrust
# Numeric, so that Kubernetes can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# The listen port of the deployment configurations (deploy/compose, deploy/k8s).
EXPOSE 8081
ENTRYPOINT ["/usr/local/bin/tts"]
# The configuration is mounted here; the embedded development default would listen on
# the container's loopback only, so it is never what a container should run.
CMD ["--config", "/etc/dialogtrust/tts.yaml"]

# distroless/static: CA certificates, tzdata, /etc/passwd with nonroot, and no shell,
# package manager or libc.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tts /usr/local/bin/tts
COPY --from=build --chown=65532:65532 /out/data /var/lib/dialogtrust
# Numeric, so that Kubernetes can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# The listen port of the deployment configurations (deploy/compose, deploy/k8s).
EXPOSE 8081
ENTRYPOINT ["/usr/local/bin/tts"]
# The configuration is mounted here; the embedded development default would listen on
# the container's loopback only, so it is never what a container should run.
CMD ["--config", "/etc/dialogtrust/tts.yaml"]
