package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// maxJobs bounds how many jobs one run may enqueue.
const maxJobs = 40

// enqueue adds n jobs through a running worker, in order.
func (st *stack) enqueue(ctx context.Context, n int) error {
	live, err := st.live(ctx)
	if err != nil {
		return err
	}
	for range n {
		if len(st.jobs) >= maxJobs {
			return fmt.Errorf("enqueued %d jobs already; the leader does not take them", len(st.jobs))
		}
		id, err := st.p.enqueue(ctx, live[0], fmt.Sprintf("e2e job %d", len(st.jobs)+1))
		if err != nil {
			return err
		}
		st.jobs = append(st.jobs, id)
	}
	return nil
}

// busy enqueues two jobs, then waits until the leader has just begun one
// (its "Doing some heavy work..." line is less than half a WORK_DURATION
// old and not followed by "Work done"), enqueuing two more whenever none
// is waiting. A leader change right after finds that job in flight: the next
// leader must deliver it again, before any later one. This holds however
// slow a Compose exec is, where waiting for a backlog would not. It
// returns the job in flight (1-based) and how many wait behind it.
func (st *stack) busy(ctx context.Context, leader container) (job, waiting int, err error) {
	if err := st.enqueue(ctx, 2); err != nil {
		return 0, 0, err
	}
	index := func(id string) int {
		for i, j := range st.jobs {
			if j == id {
				return i
			}
		}
		return -1
	}
	err = waitFor(ctx, 90*time.Second, leader.String()+" beginning a job", func() (bool, string, error) {
		highest, current, done := -1, delivery{}, false
		for _, c := range st.workers {
			lines, err := containerLog(ctx, c)
			if err != nil {
				return false, "", err
			}
			ds, err := deliveries(st.ids[c.ID], lines)
			if err != nil {
				return false, "", err
			}
			for _, d := range ds {
				highest = max(highest, index(d.jobID))
			}
			if c.ID == leader.ID && len(ds) > 0 {
				current = ds[len(ds)-1]
				done = slices.ContainsFunc(lines, func(l logLine) bool {
					return l.msg == "Work done" && l.attrs["jobId"] == current.jobID && !l.at.Before(current.at)
				})
			}
		}
		job, waiting = index(current.jobID)+1, len(st.jobs)-1-highest
		seen := fmt.Sprintf("job %d of %d begun %s ago, done %v", job, len(st.jobs), time.Since(current.at).Round(time.Millisecond), done)
		if job > 0 && !done && time.Since(current.at) < st.s.work/2 {
			return true, seen, nil
		}
		if waiting == 0 {
			// Two: the first may begin, unseen, while the exec returns;
			// the second waits behind it, and its beginning is seen.
			return false, seen, st.enqueue(ctx, 2)
		}
		return false, seen, nil
	})
	return job, waiting, err
}

// drain waits until every job enqueued is committed and none is pending
// or dead-lettered.
func (st *stack) drain(ctx context.Context) error {
	bound := time.Duration(len(st.jobs))*2*st.s.work + 30*time.Second
	want := int64(len(st.jobs))
	return waitFor(ctx, bound, fmt.Sprintf("all %d jobs committed", want), func() (bool, string, error) {
		s, err := st.statusVia(ctx)
		if err != nil {
			return false, "", err
		}
		if s.DeadLettered > 0 || s.Committed > want {
			return false, "", fmt.Errorf("status: %d committed, %d dead-lettered; %d enqueued", s.Committed, s.DeadLettered, want)
		}
		return s.Committed == want && s.Pending == 0, fmt.Sprintf("committed %d, pending %d", s.Committed, s.Pending), nil
	})
}

// order reads every worker's whole log, stopped and killed ones too: each
// line still carries the worker's own workerId, and the job deliveries,
// merged, follow the enqueue order across at least three leaderships.
func (st *stack) order(ctx context.Context) error {
	var all []delivery
	for _, c := range st.workers {
		id, lines, err := workerLog(ctx, c)
		if err != nil {
			return err
		}
		if id != st.ids[c.ID] {
			return fmt.Errorf("%s logs workerId %s now, %s at start", c, id, st.ids[c.ID])
		}
		ds, err := deliveries(id, lines)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		all = append(all, ds...)
	}
	r, err := checkOrder(st.jobs, all)
	st.res.order = r
	if err != nil {
		return err
	}
	if len(r.tokens) < replicas {
		return fmt.Errorf("jobs ran under tokens %v only: the leader changes did not happen with jobs pending", r.tokens)
	}
	return redelivered(st.jobs, st.res.inFlight, all)
}

// redelivered checks that each job in flight at a leader change was
// delivered under two tokens at least: the old leader's and the next's.
func redelivered(jobs []string, inFlight []int, ds []delivery) error {
	for _, n := range inFlight {
		tokens := map[int64]bool{}
		for _, d := range ds {
			if d.jobID == jobs[n-1] {
				tokens[d.token] = true
			}
		}
		if len(tokens) < 2 {
			return fmt.Errorf("job %d was in flight at a leader change but was delivered under %d token(s) only", n, len(tokens))
		}
	}
	return nil
}
