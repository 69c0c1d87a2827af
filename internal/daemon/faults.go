//go:build faults

package daemon

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
)

// withFaults injects the faults named in LOCKWORKER_FAULTS (comma-separated)
// into a binary built with -tags faults, for the process-level tests of
// what no real handler does on demand. A release build has none (see
// nofaults.go).
//
//	handler-panic  the job handler panics on a payload that starts with "panic"
//	work-panic     the leader's work panics as it starts, every leadership
func withFaults(h jobs.Handler, work leader.Work) (jobs.Handler, leader.Work) {
	faults := strings.Split(os.Getenv("LOCKWORKER_FAULTS"), ",")
	if slices.Contains(faults, "handler-panic") {
		inner := h
		h = jobs.HandlerFunc(func(ctx context.Context, job jobs.Job, lease jobs.Lease) error {
			if strings.HasPrefix(string(job.Payload), "panic") {
				panic("injected handler panic on job " + job.ID)
			}
			return inner.Handle(ctx, job, lease)
		})
	}
	if slices.Contains(faults, "work-panic") {
		work = func(context.Context, leader.Lease) error { panic("injected work panic") }
	}
	return h, work
}
