package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// officialImages are what a normal build pulls: the Dockerfile's base
// images (its ARG defaults) and the Redis image the compose files run.
func officialImages(root string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		return nil, err
	}
	var images []string
	for _, arg := range []string{"GO_IMAGE", "RUNTIME_IMAGE"} {
		m := regexp.MustCompile(`(?m)^ARG ` + arg + `=(\S+)$`).FindSubmatch(b)
		if m == nil {
			return nil, fmt.Errorf("no ARG %s=<default image> in the Dockerfile", arg)
		}
		images = append(images, string(m[1]))
	}
	return append(images, redisImage), nil
}

// The images the compose files name.
const (
	workerImage = "lockworker:local"
	redisImage  = "redis:7-alpine"
)

// prepareImages makes workerImage (from the current sources) and
// redisImage. mode "official" pulls the official bases and builds with the
// Dockerfile's defaults; "standin" runs deploy/standin-images.sh, which
// needs no registry; "auto" is official when the registry answers (the
// runtime base, a few MB, pulls within 30s) and standin otherwise. It
// returns what it did.
func prepareImages(ctx context.Context, root, mode string, log io.Writer) (string, error) {
	if mode == "auto" || mode == "official" {
		images, err := officialImages(root)
		if err != nil {
			return "", err
		}
		reachable, pullErr := pullAll(ctx, images)
		switch {
		case pullErr == nil:
			return "official images " + fmt.Sprint(images), build(ctx, root, log)
		case reachable || mode == "official":
			return "", pullErr
		}
		fmt.Fprintf(log, "compose-e2e: no registry (%v): building local stand-ins\n", firstLine(pullErr))
	}
	if mode != "auto" && mode != "standin" {
		return "", fmt.Errorf("-images must be auto, official or standin, got %q", mode)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy", "standin-images.sh"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("deploy/standin-images.sh: %w", err)
	}
	return "local stand-ins (deploy/standin-images.sh)", nil
}

// pullAll pulls the images; reachable is false when the first pull, of
// the runtime base, failed within 30s.
func pullAll(ctx context.Context, images []string) (reachable bool, err error) {
	probe, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = docker(probe, "pull", "-q", images[1])
	cancel()
	if err != nil {
		return false, err
	}
	for _, img := range images {
		if _, err := docker(ctx, "pull", "-q", img); err != nil {
			return true, err
		}
	}
	return true, nil
}

// build builds workerImage with the Dockerfile's defaults, as
// `docker compose build` does.
func build(ctx context.Context, root string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "docker", "build", "-t", workerImage, root)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker build -t %s %s: %w", workerImage, root, err)
	}
	return nil
}

func firstLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
