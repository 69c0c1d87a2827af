// Command fencedstore is a fenced store to copy: a small service that
// takes lockworker's jobs over HTTP (JOB_HANDLER=http) and keeps its own
// fence. It applies a job's write only when the request's fencing token
// is at least the highest token it has applied (Kleppmann's rule), and
// answers 409 to a lower one, which makes the stale leader give its
// leadership up. The check, the fence's raise and the write happen under
// one mutex (and, with -data, are saved in one file replaced by rename),
// so nothing comes between them.
//
//	fencedstore -addr :8080 [-data store.json]
//
// FENCEDSTORE_TOKEN, when set, is the bearer token callers must present
// (lockworker's JOB_URL_TOKEN). See README.md for the same rule in SQL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fencedstore:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fencedstore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", ":8080", "address to listen on")
	file := fs.String("data", "", "file that keeps the records and the fence across restarts (default: memory only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	store, err := Open(*file)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(store, getenv("FENCEDSTORE_TOKEN"), log), ReadHeaderTimeout: 10 * time.Second}
	log.Info("fencedstore listening", "addr", ln.Addr().String(), "data", *file, "fences", store.Snapshot().Fences)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
