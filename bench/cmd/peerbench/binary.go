package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildLockworker builds the parent module's cmd/lockworker into dir and
// returns its path. The parent is found through the bench module's replace
// directive, so this works from anywhere inside the bench module.
func buildLockworker(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/lockworker/lockworker").Output()
	if err != nil {
		return "", fmt.Errorf("find the lockworker module (run inside the bench module, or pass -bin): %w", err)
	}
	root := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "lockworker")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lockworker")
	build.Dir = root
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/lockworker in %s: %w", root, err)
	}
	return bin, nil
}
