# fsctl in a container: `docker compose up` runs it as the reference checkout server (`fsctl serve`).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build's identity (fsctl version, /readyz, fsctl_build_info). .git stays out of the context
# (.dockerignore), so it comes in as build args:
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) --build-arg BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
ARG VERSION=unknown
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
# static, so it runs on distroless without libc
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${BUILD_DATE}" \
    -o /out/fsctl ./cmd/fsctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fsctl /usr/local/bin/fsctl
USER nonroot:nonroot
EXPOSE 8080
# distroless has no shell or curl: the binary checks the server itself (GET /healthz, exit 0 or 1)
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 CMD ["/usr/local/bin/fsctl", "health", "--timeout", "2s"]
ENTRYPOINT ["/usr/local/bin/fsctl"]
# Give it FSCTL_JWT_SECRET (and FSCTL_ADMIN_TOKEN for /admin/v1): on :8080 serve refuses the
# development ones (docker-compose.yml passes --insecure-dev-secrets, its port on loopback only).
CMD ["serve", "--addr", ":8080"]
