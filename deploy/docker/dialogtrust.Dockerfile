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
