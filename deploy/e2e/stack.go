package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// stack is one compose file brought up with --scale worker=3.
type stack struct {
	p       *project
	s       settings
	log     io.Writer
	workers []container       // the three, as started
	ids     map[string]string // container ID → its workerId
	jobs    []string          // job IDs, in enqueue order
	res     *result
	t0      time.Time // when the run began, for progress lines
}

const replicas = 3

// waitFor calls check every 200ms until it is done, fails, or bound has
// passed; the error names what was awaited and what was last seen.
func waitFor(ctx context.Context, bound time.Duration, what string, check func() (done bool, seen string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		done, seen, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s (last seen: %s)", what, bound, seen)
		case <-tick.C:
		}
	}
}

// start runs `up -d --no-build --scale worker=3` and waits until every
// container is running and healthy.
func (st *stack) start(ctx context.Context) error {
	t0 := time.Now()
	if _, err := st.p.compose(ctx, "up", "-d", "--no-build", "--scale", fmt.Sprintf("worker=%d", replicas)); err != nil {
		return err
	}
	err := waitFor(ctx, 90*time.Second, "every container running and healthy", func() (bool, string, error) {
		cs, err := st.p.containers(ctx, "")
		if err != nil {
			return false, "", err
		}
		var seen []string
		healthy, workers := 0, 0
		for _, c := range cs {
			seen = append(seen, fmt.Sprintf("%s %s/%s", c, c.Status, c.Health))
			if c.Running && c.Health == "healthy" {
				healthy++
			}
			if c.Service == "worker" {
				workers++
			}
		}
		return workers == replicas && healthy == len(cs), strings.Join(seen, ", "), nil
	})
	if err != nil {
		return err
	}
	if st.workers, err = st.p.containers(ctx, "worker"); err != nil {
		return err
	}
	st.res.startup = time.Since(t0)
	return st.identify(ctx)
}

// identify reads each worker's workerId from its log: every line carries
// it, and no two workers share one.
func (st *stack) identify(ctx context.Context) error {
	st.ids = map[string]string{}
	seen := map[string]string{}
	for _, c := range st.workers {
		id, _, err := workerLog(ctx, c)
		if err != nil {
			return err
		}
		if other, dup := seen[id]; dup {
			return fmt.Errorf("%s and %s both log workerId %s", other, c, id)
		}
		seen[id], st.ids[c.ID] = c.String(), id
	}
	return nil
}

// workerLog is a worker's whole log and the workerId every line of it
// carries.
func workerLog(ctx context.Context, c container) (string, []logLine, error) {
	lines, err := containerLog(ctx, c)
	if err != nil {
		return "", nil, err
	}
	id, err := workerID(lines)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", c, err)
	}
	return id, lines, nil
}

// live is the workers still running.
func (st *stack) live(ctx context.Context) ([]container, error) {
	var live []container
	for _, c := range st.workers {
		c, err := refresh(ctx, c)
		if err != nil {
			return nil, err
		}
		if c.Running {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("no worker is running")
	}
	return live, nil
}

// statusVia runs `lockworker status --json` in a running worker.
func (st *stack) statusVia(ctx context.Context) (statusReport, error) {
	live, err := st.live(ctx)
	if err != nil {
		return statusReport{}, err
	}
	return st.p.status(ctx, live[0])
}

// steady waits until exactly one running worker leads: status names it,
// its log's last transition entered working or renew_lock, and every other
// running worker's entered waiting_to_acquire_lock or acquiring_lock.
func (st *stack) steady(ctx context.Context) (container, error) {
	var leader container
	err := waitFor(ctx, 30*time.Second, "exactly one leader", func() (bool, string, error) {
		live, err := st.live(ctx)
		if err != nil {
			return false, "", err
		}
		s, err := st.p.status(ctx, live[0])
		if err != nil {
			return false, "", err
		}
		var leaders, states []string
		for _, c := range live {
			lines, err := containerLog(ctx, c)
			if err != nil {
				return false, "", err
			}
			state := lastState(lines)
			states = append(states, c.String()+" "+state)
			switch state {
			case machine.Working.String(), machine.RenewLock.String():
				leaders = append(leaders, st.ids[c.ID])
				leader = c
			case machine.WaitingToAcquireLock.String(), machine.AcquiringLock.String():
			default:
				return false, strings.Join(states, ", "), nil
			}
		}
		seen := fmt.Sprintf("status holder %q token %d; %s", s.Holder, s.Token, strings.Join(states, ", "))
		return s.Held && len(leaders) == 1 && leaders[0] == s.Holder, seen, nil
	})
	return leader, err
}

// newLeader waits until a worker other than old logs acquiring_lock →
// working at or after since, and returns it with that line.
func (st *stack) newLeader(ctx context.Context, old container, since time.Time, bound time.Duration) (container, logLine, error) {
	var won container
	var line logLine
	err := waitFor(ctx, bound, "a new leader after "+old.String(), func() (bool, string, error) {
		live, err := st.live(ctx)
		if err != nil {
			return false, "", err
		}
		var states []string
		for _, c := range slices.DeleteFunc(live, func(c container) bool { return c.ID == old.ID }) {
			lines, err := containerLog(ctx, c)
			if err != nil {
				return false, "", err
			}
			states = append(states, c.String()+" "+lastState(lines))
			for _, l := range lines {
				if !l.at.Before(since) && l.isTransition(machine.AcquiringLock, machine.Working) &&
					(line.msg == "" || l.at.Before(line.at)) {
					won, line = c, l
				}
			}
		}
		return line.msg != "", strings.Join(states, ", "), nil
	})
	return won, line, err
}
