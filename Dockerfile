# syntax=docker/dockerfile:1

# Build: a static binary, with exactly the Makefile's flags (make build).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/lockworker ./cmd/lockworker

# Run: no shell, no package manager, a non-root user (65532 is distroless's
# "nonroot").
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lockworker /lockworker
USER 65532:65532
EXPOSE 3000
# SIGTERM: stop work, release the lock (the next leader starts at once),
# exit 0 within SHUTDOWN_TIMEOUT.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/lockworker", "healthcheck"]
ENTRYPOINT ["/lockworker"]
