package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// command runs name with args and env (nil: this process's) and returns
// its stdout; a failure carries the end of its stderr.
func command(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

func docker(ctx context.Context, args ...string) (string, error) {
	return command(ctx, nil, "docker", args...)
}

// container is what the e2e reads of one container (docker inspect).
type container struct {
	ID          string
	Name        string
	Service     string
	Number      int // Compose's container-number, for exec --index
	Running     bool
	Status      string
	ExitCode    int
	Pid         int
	Health      string
	Restarts    int
	User        string
	ReadOnly    bool
	CapDrop     []string
	SecurityOpt []string
	Volumes     []string // names of the volumes mounted, anonymous ones too
}

func (c container) String() string { return strings.TrimPrefix(c.Name, "/") }

type inspected struct {
	ID           string `json:"Id"`
	Name         string
	RestartCount int
	State        struct {
		Status   string
		Running  bool
		ExitCode int
		Pid      int
		Health   *struct{ Status string }
	}
	Config struct {
		User   string
		Labels map[string]string
	}
	HostConfig struct {
		ReadonlyRootfs bool
		CapDrop        []string
		SecurityOpt    []string
	}
	Mounts []struct{ Type, Name string }
}

// inspect reads the containers, in the order given.
func inspect(ctx context.Context, ids ...string) ([]container, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := docker(ctx, append([]string{"inspect", "--type", "container"}, ids...)...)
	if err != nil {
		return nil, err
	}
	var raw []inspected
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("docker inspect: %w", err)
	}
	cs := make([]container, 0, len(raw))
	for _, r := range raw {
		n, _ := strconv.Atoi(r.Config.Labels["com.docker.compose.container-number"])
		c := container{
			ID: r.ID, Name: r.Name, Service: r.Config.Labels["com.docker.compose.service"], Number: n,
			Running: r.State.Running, Status: r.State.Status, ExitCode: r.State.ExitCode, Pid: r.State.Pid,
			Restarts: r.RestartCount, User: r.Config.User, ReadOnly: r.HostConfig.ReadonlyRootfs,
			CapDrop: r.HostConfig.CapDrop, SecurityOpt: r.HostConfig.SecurityOpt,
		}
		if r.State.Health != nil {
			c.Health = r.State.Health.Status
		}
		for _, m := range r.Mounts {
			if m.Type == "volume" {
				c.Volumes = append(c.Volumes, m.Name)
			}
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// refresh re-reads one container.
func refresh(ctx context.Context, c container) (container, error) {
	cs, err := inspect(ctx, c.ID)
	if err != nil {
		return container{}, err
	}
	return cs[0], nil
}

// containerLog is a container's whole log, parsed; every line must be one
// of the daemon's.
func containerLog(ctx context.Context, c container) ([]logLine, error) {
	cmd := exec.CommandContext(ctx, "docker", "logs", c.ID)
	out, err := cmd.CombinedOutput() // the daemon logs to stderr
	if err != nil {
		return nil, fmt.Errorf("docker logs %s: %w: %s", c, err, out)
	}
	lines, err := parseLog(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	return lines, nil
}

// procStatus is what the kernel says of a container's main process: its
// identity and privileges, read from /proc on this host.
type procStatus struct {
	uid, gid   string // real, effective, saved, fs
	capEff     string
	noNewPrivs string
	rootRO     bool // "/" is mounted read-only
}

// readProc reads /proc/<pid>; it fails where the engine runs elsewhere
// (a VM, a remote host).
func readProc(pid int) (procStatus, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStatus{}, err
	}
	var p procStatus
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.Join(strings.Fields(v), " ")
		switch k {
		case "Uid":
			p.uid = v
		case "Gid":
			p.gid = v
		case "CapEff":
			p.capEff = v
		case "NoNewPrivs":
			p.noNewPrivs = v
		}
	}
	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mounts", pid))
	if err != nil {
		return procStatus{}, err
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[1] == "/" {
			p.rootRO = slices.Contains(strings.Split(f[3], ","), "ro")
		}
	}
	return p, nil
}
