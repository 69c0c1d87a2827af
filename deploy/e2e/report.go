package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// result is what one compose file's run found.
type result struct {
	file, project string
	startup       time.Duration
	leader        string // the first leader's workerId
	hardening     string // how the processes were checked
	handover      handoverSample
	failover      failoverSample
	order         orderReport
	inFlight      []int            // the jobs (1-based) in flight at the leader changes
	redisNode     *redisNodeSample // Redlock files only
	parts         *partitionResult // the partitioned run only
}

// header is the run's context, printed above the results.
type header struct {
	compose, engine, images string
	settings                settings
	elapsed                 time.Duration
}

func report(w io.Writer, h header, results []result) {
	fmt.Fprintf(w, "\ncompose-e2e: PASS in %s\n", h.elapsed.Round(time.Second))
	fmt.Fprintf(w, "  compose %s, engine %s, images: %s\n", h.compose, h.engine, h.images)
	fmt.Fprintf(w, "  settings (--env-file): %s\n", h.settings)
	for _, r := range results {
		if r.parts != nil {
			reportPartitions(w, r)
			continue
		}
		fmt.Fprintf(w, "\n%s (project %s)\n", r.file, r.project)
		fmt.Fprintf(w, "  start      %d workers healthy in %s; one leader (%s), the others waiting\n",
			replicas, r.startup.Round(100*time.Millisecond), r.leader)
		fmt.Fprintf(w, "  hardening  %s:%s, read-only root, no capabilities, no-new-privileges, healthy (checked in docker inspect and %s)\n",
			nonroot, nonroot, r.hardening)
		if n := r.redisNode; n != nil {
			fmt.Fprintf(w, "  redis down %s stopped: the leader kept leading through %d renewals over %s (> LOCK_TTL), token %d\n",
				n.node, n.renewals, ms(n.span), n.token)
		}
		h := r.handover
		fmt.Fprintf(w, "  handover   docker stop %s → %s leads %s after SIGTERM reached the leader (%s after the release, %s after `docker stop` was called); exit code 0\n",
			h.from, h.to, ms(h.signal), ms(h.release), ms(h.cli))
		f := r.failover
		fmt.Fprintf(w, "  failover   docker kill -s KILL %s → %s leads %s after `docker kill` was called: lease left %s, new leader %s after the lease ended; exit code %d\n",
			f.from, f.to, ms(f.took), ms(f.leaseLeft), ms(f.took-f.leaseLeft), f.exitCode)
		o := r.order
		fmt.Fprintf(w, "  jobs       %d enqueued, all committed, delivered in enqueue order under tokens %s; jobs %v were in flight at the changes and delivered again by the next leader\n",
			o.jobs, tokens(o.tokens), r.inFlight)
		fmt.Fprintf(w, "  teardown   down -v: no container, network or volume left\n")
	}
}

func reportPartitions(w io.Writer, r result) {
	p := r.parts
	fmt.Fprintf(w, "\n%s with PARTITIONS=%d (project %s)\n", r.file, p.partitions, r.project)
	fmt.Fprintf(w, "  start      %d workers healthy in %s; the %d partitions shared to within one: %s\n",
		replicas, r.startup.Round(100*time.Millisecond), p.partitions, p.shares[0])
	fmt.Fprintf(w, "  handover   docker stop %s → its partitions %v each led by another worker, the last %s after `docker stop` was called; exit code 0; then %s\n",
		p.stop.from, p.stop.parts, ms(p.stop.worst), p.shares[1])
	fmt.Fprintf(w, "  failover   docker kill -s KILL %s → its partitions %v each led by the last worker, the last %s after `docker kill` was called (not before LOCK_TTL - RENEW_INTERVAL); exit code %d\n",
		p.kill.from, p.kill.parts, ms(p.kill.worst), p.kill.exitCode)
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(p.tokens)) {
		keys = append(keys, fmt.Sprintf("%s: %s", k, tokens(p.tokens[k])))
	}
	fmt.Fprintf(w, "  jobs       %d enqueued with --key-field over %d keys (one per partition), all committed, each key's delivered in enqueue order; tokens by key (each its partition's) %s\n",
		p.jobs, p.keys, strings.Join(keys, "; "))
	fmt.Fprintf(w, "  teardown   down -v: no container, network or volume left\n")
}

// ms prints a duration in whole milliseconds: log lines carry their time
// to the millisecond.
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

func tokens(ts []int64) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = fmt.Sprint(t)
	}
	return strings.Join(s, " → ")
}
