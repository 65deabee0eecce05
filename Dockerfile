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
ENTRYPOINT ["/usr/local/bin/fsctl"]
CMD ["serve", "--addr", ":8080"]
