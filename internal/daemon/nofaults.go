//go:build !faults

package daemon

import (
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
)

// withFaults changes nothing: fault injection exists only in binaries built
// with -tags faults, for tests (see faults.go).
func withFaults(h jobs.Handler, work leader.Work) (jobs.Handler, leader.Work) { return h, work }
