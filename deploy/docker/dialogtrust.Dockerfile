# syntax=docker/dockerfile:1
# The dialogtrust command line (cmd/dialogtrust) as a small static image
# that runs as a non-root user.
# Build from the repository root (the context is the whole module):
#
#   docker build -f deploy/docker/dialogtrust.Dockerfile -t dialogtrust/dialogtrust .
#
# dialogtrust.Dockerfile.dockerignore (next to this file; BuildKit reads it instead of a
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
    go build -trimpath -ldflags="-s -w" -o /out/dialogtrust ./cmd/dialogtrust

# --- The HSM variant (target hsm) ---------------------------------------------------
# The same command built with cgo, for keys in a PKCS#11 token (keys.pkcs11): crypto11
# loads the HSM vendor's module with dlopen, which a static binary cannot do (it refuses
# keys.pkcs11 with pkcs11_unavailable). Build it with --target hsm and tag it -hsm (the
# Helm chart's hsmImage values must end in -hsm):
#
#   docker build -f deploy/docker/dialogtrust.Dockerfile --target hsm -t dialogtrust/dialogtrust:dev-hsm .
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
    go build -trimpath -ldflags="-s -w" -o /out/dialogtrust ./cmd/dialogtrust

# distroless/cc: glibc, libgcc and libstdc++ (which vendors' PKCS#11 modules, often C++,
# link against), OpenSSL's libraries, CA certificates, and no shell or package manager.
# The module itself is not in the image: the operator mounts it (docs/operator.md,
# "Keys in an HSM").
FROM gcr.io/distroless/cc-debian12:nonroot AS hsm
COPY --from=build-hsm /out/dialogtrust /usr/local/bin/dialogtrust
# Numeric, so that Kubernetes can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# Writable by the nonroot user: "wit request" writes its key (wit.key.jwk) here.
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/dialogtrust"]
CMD ["--help"]

# distroless/static: CA certificates, tzdata, /etc/passwd with nonroot, and no shell,
# package manager or libc.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dialogtrust /usr/local/bin/dialogtrust
# Numeric, so that Kubernetes can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# Writable by the nonroot user: "wit request" writes its key (wit.key.jwk) here.
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/dialogtrust"]
CMD ["--help"]
