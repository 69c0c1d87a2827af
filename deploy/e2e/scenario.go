package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// run is the whole scenario on a fresh stack: three healthy workers and
// one leader; their hardening; with Redlock, one Redis stopped under the
// leader; jobs enqueued through a graceful handover (docker stop) and a
// crash failover (docker kill -s KILL); every job committed, in order.
func (st *stack) run(ctx context.Context) error {
	if err := st.start(ctx); err != nil {
		return err
	}
	leader, err := st.steady(ctx)
	if err != nil {
		return err
	}
	st.res.leader = st.ids[leader.ID]
	st.progress("%d workers healthy in %s, %s leads", replicas, st.res.startup.Round(100*time.Millisecond), leader)
	if st.res.hardening, err = st.hardening(ctx); err != nil {
		return err
	}
	nodes, err := st.redisNodes(ctx)
	if err != nil {
		return err
	}
	if len(nodes) >= 3 {
		if err := st.redisNodeDown(ctx, leader, nodes[len(nodes)-1]); err != nil {
			return err
		}
		st.progress("%s stopped and started again: %s kept leading", nodes[len(nodes)-1].Service, leader)
	}
	changes := []struct {
		how string
		do  func(context.Context, container) (container, error)
	}{{"docker stop", st.handover}, {"docker kill -s KILL", st.failover}}
	for _, change := range changes {
		job, waiting, err := st.busy(ctx, leader)
		if err != nil {
			return err
		}
		st.res.inFlight = append(st.res.inFlight, job)
		st.progress("job %d of %d in flight, %d waiting: %s %s", job, len(st.jobs), waiting, change.how, leader)
		if leader, err = change.do(ctx, leader); err != nil {
			return err
		}
	}
	if err := st.enqueue(ctx, 2); err != nil {
		return err
	}
	if err := st.drain(ctx); err != nil {
		return err
	}
	if err := st.order(ctx); err != nil {
		return err
	}
	st.progress("%d jobs committed in enqueue order", len(st.jobs))
	return nil
}

func (st *stack) progress(format string, args ...any) {
	fmt.Fprintf(st.log, "compose-e2e: %s: %s: "+format+"\n",
		append([]any{st.res.file, time.Since(st.t0).Round(time.Second)}, args...)...)
}

// dumpLogs saves every container's whole log in a directory it names, and
// prints the end of each, for a failed run.
func (st *stack) dumpLogs(ctx context.Context) {
	cs, err := st.p.containers(ctx, "")
	if err != nil {
		fmt.Fprintf(st.log, "compose-e2e: cannot list the containers: %v\n", err)
		return
	}
	dir, err := os.MkdirTemp("", "compose-e2e-"+st.p.name+"-")
	if err != nil {
		fmt.Fprintf(st.log, "compose-e2e: %v\n", err)
		return
	}
	for _, c := range cs {
		out, _ := exec.CommandContext(ctx, "docker", "logs", c.ID).CombinedOutput()
		_ = os.WriteFile(filepath.Join(dir, c.String()+".log"), out, 0o644)
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		lines = lines[max(0, len(lines)-20):]
		fmt.Fprintf(st.log, "--- %s (%s, exit code %d), last %d lines:\n%s\n", c, c.Status, c.ExitCode, len(lines), strings.Join(lines, "\n"))
	}
	fmt.Fprintf(st.log, "compose-e2e: the containers' whole logs are in %s\n", dir)
}
