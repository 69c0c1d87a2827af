# No "# syntax=" line: it makes BuildKit pull a frontend image, which an
# air-gapped site cannot; everything here is in the built-in frontend of
# BuildKit and of the legacy builder alike.

# The bases are build arguments. The defaults are the official images; an
# air-gapped site passes local stand-ins (deploy/standin-images.sh).
ARG GO_IMAGE=golang:1.26
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

# Run: no shell, no package manager, a non-root user (65532 is distroless's
# "nonroot").
FROM ${RUNTIME_IMAGE} AS runtime
USER 65532:65532
EXPOSE 3000
# SIGTERM: stop work, release the lock (the next leader starts at once),
# exit 0 within SHUTDOWN_TIMEOUT.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/lockworker", "healthcheck"]
ENTRYPOINT ["/lockworker"]

# The runtime with a binary built on the host (make build), for sites with
# no Go image: build it with --target prebuilt from a context that holds
# only the binary, named lockworker (deploy/standin-images.sh does). It
# stands before the Go stage because the legacy builder runs every stage up
# to its target; BuildKit skips it in a normal build, and the legacy
# builder copies the sources into it and throws it away.
FROM runtime AS prebuilt
COPY . /

# Build: a static binary, with exactly the Makefile's flags (make build).
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/lockworker ./cmd/lockworker

FROM runtime
COPY --from=build /out/lockworker /lockworker
