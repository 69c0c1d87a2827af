package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// composeTool is how this machine runs Compose: the v2 plugin
// (docker compose) when the CLI has it, else v1 (docker-compose).
type composeTool struct {
	argv    []string
	version string
}

func (t composeTool) String() string { return strings.Join(t.argv, " ") + " " + t.version }

// detectCompose finds Compose; override ("docker compose" or
// "docker-compose") skips the search.
func detectCompose(ctx context.Context, override string) (composeTool, error) {
	candidates := [][]string{{"docker", "compose"}, {"docker-compose"}}
	if override != "" {
		candidates = [][]string{strings.Fields(override)}
	}
	var errs []error
	for _, argv := range candidates {
		out, err := command(ctx, nil, argv[0], append(argv[1:], "version", "--short")...)
		if err == nil {
			return composeTool{argv: argv, version: strings.TrimSpace(out)}, nil
		}
		errs = append(errs, err)
	}
	return composeTool{}, fmt.Errorf("no Compose found: %w", errors.Join(errs...))
}

// project is one run of one compose file under a project name of its own,
// so two runs, or a leftover of an earlier one, never collide.
type project struct {
	tool    composeTool
	name    string
	file    string   // the compose file, as shipped
	envFile string   // the settings, .env style
	env     []string // Compose's environment: ours, without the settings' variables
	volumes map[string]bool
}

// newProject writes the settings to an env file in dir and names the
// project lwe2e-<random>.
func newProject(tool composeTool, file, dir string, s settings) (*project, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	envFile := filepath.Join(dir, "e2e-"+hex.EncodeToString(b)+".env")
	if err := os.WriteFile(envFile, []byte(s.envFile()), 0o600); err != nil {
		return nil, err
	}
	// A variable set in Compose's own environment beats the env file: drop
	// the ones the settings name, so the run is the same in every shell.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return s.has(k) || k == "COMPOSE_PROJECT_NAME" || k == "COMPOSE_FILE"
	})
	return &project{tool: tool, name: "lwe2e-" + hex.EncodeToString(b), file: file, envFile: envFile,
		env: env, volumes: map[string]bool{}}, nil
}

// compose runs a Compose command on the project's file.
func (p *project) compose(ctx context.Context, args ...string) (string, error) {
	argv := append(slices.Clone(p.tool.argv[1:]), "--env-file", p.envFile, "-p", p.name, "-f", p.file)
	return command(ctx, p.env, p.tool.argv[0], append(argv, args...)...)
}

// containers lists the project's containers of service ("" for all),
// stopped ones too, ordered by service and number.
func (p *project) containers(ctx context.Context, service string) ([]container, error) {
	args := []string{"ps", "-a", "-q", "--no-trunc", "--filter", "label=com.docker.compose.project=" + p.name}
	if service != "" {
		args = append(args, "--filter", "label=com.docker.compose.service="+service)
	}
	out, err := docker(ctx, args...)
	if err != nil {
		return nil, err
	}
	cs, err := inspect(ctx, strings.Fields(out)...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cs, func(a, b container) int {
		if c := strings.Compare(a.Service, b.Service); c != 0 {
			return c
		}
		return a.Number - b.Number
	})
	for _, c := range cs {
		for _, v := range c.Volumes {
			p.volumes[v] = true
		}
	}
	return cs, nil
}

// exec runs a command in container c, the way a user does:
// docker compose exec --index N service ...
func (p *project) exec(ctx context.Context, c container, args ...string) (string, error) {
	return p.compose(ctx, append([]string{"exec", "-T", "--index=" + strconv.Itoa(c.Number), c.Service}, args...)...)
}

// execStdin is exec with stdin.
func (p *project) execStdin(ctx context.Context, c container, stdin string, args ...string) (string, error) {
	argv := append(slices.Clone(p.tool.argv[1:]), "--env-file", p.envFile, "-p", p.name, "-f", p.file,
		"exec", "-T", "--index="+strconv.Itoa(c.Number), c.Service)
	cmd := exec.CommandContext(ctx, p.tool.argv[0], append(argv, args...)...)
	cmd.Env, cmd.Stdin = p.env, strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %v: %w: %s", p.tool.argv[0], args, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// statusReport is `lockworker status --json`.
type statusReport struct {
	Held         bool   `json:"held"`
	Holder       string `json:"holder"`
	Token        int64  `json:"token"`
	LeaseLeftMs  int64  `json:"leaseLeftMs"`
	Epoch        int64  `json:"epoch"`
	Pending      int64  `json:"pending"`
	Committed    int64  `json:"committed"`
	DeadLettered int64  `json:"deadLettered"`
}

func (p *project) status(ctx context.Context, via container) (statusReport, error) {
	out, err := p.exec(ctx, via, "/lockworker", "status", "--json")
	if err != nil {
		return statusReport{}, err
	}
	var s statusReport
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return statusReport{}, fmt.Errorf("status --json: %w: %q", err, out)
	}
	return s, nil
}

// enqueue adds one job and returns its ID.
func (p *project) enqueue(ctx context.Context, via container, payload string) (string, error) {
	out, err := p.exec(ctx, via, "/lockworker", "enqueue", payload)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out)
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("enqueue printed %q, want one job ID", out)
	}
	return id, nil
}

// down removes the project's containers, networks and volumes, then checks
// that none is left (by the project's label, and every volume a container
// of it mounted) and removes the env file. What down left is an error, and
// is removed by force.
func (p *project) down(ctx context.Context) error {
	_, downErr := p.compose(ctx, "down", "-v", "--remove-orphans", "-t", "20")
	left, err := p.leftovers(ctx)
	if err != nil {
		return errors.Join(downErr, err)
	}
	_ = os.Remove(p.envFile)
	if len(left) == 0 {
		return downErr
	}
	var names []string
	for _, l := range left {
		names = append(names, l[0]+" "+l[1])
		switch l[0] {
		case "container":
			_, _ = docker(ctx, "rm", "-f", "-v", l[1])
		default:
			_, _ = docker(ctx, l[0], "rm", l[1])
		}
	}
	return errors.Join(downErr, fmt.Errorf("left behind after down (now removed by force): %s", strings.Join(names, ", ")))
}

// leftovers lists what of the project still exists, as (kind, ID) pairs,
// containers first so they are removed before their networks and volumes.
func (p *project) leftovers(ctx context.Context) ([][2]string, error) {
	var left [][2]string
	label := "label=com.docker.compose.project=" + p.name
	for _, kind := range []string{"container", "network", "volume"} {
		args := []string{kind, "ls", "-q", "--filter", label}
		if kind == "container" {
			args = []string{"ps", "-a", "-q", "--filter", label}
		}
		out, err := docker(ctx, args...)
		if err != nil {
			return nil, err
		}
		for _, id := range strings.Fields(out) {
			left = append(left, [2]string{kind, id})
		}
	}
	for v := range p.volumes {
		if _, err := docker(ctx, "volume", "inspect", v); err == nil && !slices.Contains(left, [2]string{"volume", v}) {
			left = append(left, [2]string{"volume", v})
		}
	}
	return left, nil
}
