package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The user every worker runs as: distroless's nonroot.
const nonroot = "65532"

// hardening checks every worker as configured (docker inspect) and as
// running (the kernel's view of its process in /proc, where the engine is
// local): user 65532:65532, read-only root, no capability, no new
// privileges, healthy. It returns how the process side was checked.
func (st *stack) hardening(ctx context.Context) (string, error) {
	var errs []error
	how := "/proc"
	for _, c := range st.workers {
		c, err := refresh(ctx, c)
		if err != nil {
			return "", err
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: "+format, append([]any{c}, args...)...))
		}
		if c.User != nonroot+":"+nonroot {
			bad("user %q, want %s:%s", c.User, nonroot, nonroot)
		}
		if !c.ReadOnly {
			bad("root filesystem is not read-only")
		}
		if !slices.Equal(c.CapDrop, []string{"ALL"}) {
			bad("cap_drop %v, want [ALL]", c.CapDrop)
		}
		if !slices.ContainsFunc(c.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "no-new-privileges") }) {
			bad("security_opt %v lacks no-new-privileges", c.SecurityOpt)
		}
		if c.Health != "healthy" {
			bad("health %q", c.Health)
		}
		p, err := readProc(c.Pid)
		if err != nil {
			// The engine is not on this host: ask it for the process's ids.
			how = "docker top (no /proc of the engine's host: capabilities as configured only)"
			if err := topIDs(ctx, c); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		all := func(ids string) bool { return ids == strings.Repeat(nonroot+" ", 3)+nonroot }
		switch {
		case !all(p.uid) || !all(p.gid):
			bad("process uids %q gids %q, want %s everywhere", p.uid, p.gid, nonroot)
		case strings.Trim(p.capEff, "0") != "":
			bad("effective capabilities %s, want none", p.capEff)
		case p.noNewPrivs != "1":
			bad("NoNewPrivs %q, want 1", p.noNewPrivs)
		case !p.rootRO:
			bad("/ is not mounted read-only")
		}
	}
	return how, errors.Join(errs...)
}

// topIDs checks the process's user and group with docker top.
func topIDs(ctx context.Context, c container) error {
	out, err := docker(ctx, "top", c.ID, "-o", "uid,gid")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), ":") != nonroot+":"+nonroot {
		return fmt.Errorf("%s: docker top says %q, want one process as %s:%s", c, out, nonroot, nonroot)
	}
	return nil
}
