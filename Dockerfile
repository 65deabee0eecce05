# fsctl in a container: `docker compose up` runs it as the reference checkout server (`fsctl serve`).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# static, so it runs on distroless without libc
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/fsctl ./cmd/fsctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fsctl /usr/local/bin/fsctl
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/fsctl"]
CMD ["serve", "--addr", ":8080"]
