// Package benchkit holds what the bench commands that run real replicas
// share: building the daemon, reading a child's output line by line,
// reading a redis-server's own figures (INFO cpu and commandstats), and
// printing a table of repeated figures with medians, ranges and targets.
package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// BuildDaemon builds the parent module's lockworker into dir. The bench
// module's replace directive says where the parent's source is.
func BuildDaemon(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/lockworker/lockworker").Output()
	if err != nil {
		return "", fmt.Errorf("find the lockworker module (run inside the bench module, or pass -bin): %w", err)
	}
	bin := filepath.Join(dir, "lockworker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lockworker")
	cmd.Dir = strings.TrimSpace(string(out))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/lockworker: %w\n%s", err, out)
	}
	return bin, nil
}

// LineWriter splits one child's output into lines and hands each, without
// its newline, to Line; a write may end mid-line, so the rest waits for
// the next write. It never blocks on a reader beyond Line itself: a slow
// benchmark must not slow the child's logging, or it would shift the very
// timestamps it reads.
type LineWriter struct {
	Line func(line []byte)

	mu      sync.Mutex
	partial []byte
}

func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rest := append(w.partial, p...)
	for {
		line, after, found := bytes.Cut(rest, []byte("\n"))
		if !found {
			break
		}
		w.Line(line)
		rest = after
	}
	w.partial = append(w.partial[:0], rest...)
	return len(p), nil
}
