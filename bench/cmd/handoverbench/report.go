package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// The targets of issue 5.
const (
	gracefulTarget = 50 * time.Millisecond  // graceful p99 below this
	crashSlack     = 100 * time.Millisecond // every crash failover within LOCK_TTL + this
)

func reportTo(w io.Writer, o options, results []result, elapsed time.Duration) {
	persistence := "appendonly no"
	if o.aof {
		persistence = "appendonly yes, appendfsync always"
	}
	fmt.Fprintf(w, "handoverbench: %d lockworker replicas per run, Redis with %s\n", o.replicas, persistence)
	for _, mode := range o.modes {
		for _, res := range results {
			if res.mode == mode {
				fmt.Fprintf(w, "  %-10s %s\n", mode, res.where)
				break
			}
		}
	}
	fmt.Fprintf(w, "settings: LOCK_TTL=%s RENEW_INTERVAL=%s RETRY_INTERVAL=%s, %d handovers per row, no jobs queued\n",
		o.ttl, o.renew, o.retry, o.rounds)
	fmt.Fprintln(w, "timed: supervisor's clock right before the signal → \"time\" of the new leader's log line to=working")
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmode\tnotices\tn\tmin\tp50\tp99\tmax\twoken by\ttarget\t")
	for _, res := range results {
		g := res.samples[graceful]
		row(tw, "graceful: SIGTERM → working", res.mode, onOff(res.notices), took(g), wokenBy(g), gracefulVerdict(took(g)))
	}
	for _, res := range results {
		c := res.samples[crash]
		row(tw, "crash: kill -9 → working", res.mode, onOff(res.notices), took(c), wokenBy(c), crashVerdict(took(c), o.ttl))
		var lease, after []time.Duration
		for _, s := range c {
			lease = append(lease, s.lease)
			after = append(after, s.took-s.lease)
		}
		row(tw, "  lease left at the kill", res.mode, onOff(res.notices), lease, "", "")
		row(tw, "  new leader after lease end", res.mode, onOff(res.notices), after, "", "")
	}
	for _, res := range results {
		failoverRows(tw, res)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintf(w, "targets: graceful p99 < %s; crash failover ≤ LOCK_TTL + %s = %s (every sample)\n",
		ms(gracefulTarget), ms(crashSlack), ms(o.ttl+crashSlack))
	fmt.Fprintf(w, "a killed leader's lease has between LOCK_TTL-RENEW_INTERVAL (%s) and LOCK_TTL (%s) left, so crash\n",
		ms(o.ttl-o.renew), ms(o.ttl))
	fmt.Fprintln(w, "failover ≈ lease left + the followers' reaction; \"lease left\" is the killed leader's last")
	fmt.Fprintln(w, "acquire/renew log line + LOCK_TTL - the kill (a round trip late at most)")
	fmt.Fprintln(w, "Redis failover: SENTINEL FAILOVER, or CLUSTER FAILOVER on the replica of the lock's slot, while the")
	fmt.Fprintln(w, "leader works through 20ms jobs; timed from the command to the replica answering ROLE as master, and")
	fmt.Fprintln(w, "to its committed counter first growing after that (polled every 2ms)")
	fmt.Fprintln(w, "percentiles are nearest-rank: with fewer than 100 samples p99 is the max")
	fmt.Fprintf(w, "took %s\n", elapsed.Round(time.Second))
}

// failoverRows reports res's forced Redis failovers, if any.
func failoverRows(w io.Writer, res result) {
	if len(res.failovers) == 0 {
		return
	}
	var promoted, commit, reaction []time.Duration
	lost := 0
	for _, s := range res.failovers {
		promoted = append(promoted, s.promoted)
		commit = append(commit, s.commit)
		reaction = append(reaction, s.commit-s.promoted)
		if s.refilled {
			lost++
		}
	}
	note := ""
	if lost > 0 {
		note = fmt.Sprintf("%d lost the queued jobs (one enqueued on the new master)", lost)
	}
	row(w, "Redis failover → replica is master", res.mode, onOff(res.notices), promoted, "", "")
	row(w, "Redis failover → next job committed", res.mode, onOff(res.notices), commit, "", note)
	row(w, "  replica is master → next commit", res.mode, onOff(res.notices), reaction, "", "")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func row(w io.Writer, name, mode, notices string, ds []time.Duration, woken, verdict string) {
	s := summarize(ds)
	fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
		name, mode, notices, s.n, ms(s.min), ms(s.p50), ms(s.p99), ms(s.max), woken, verdict)
}

func took(ss []sample) []time.Duration {
	var ds []time.Duration
	for _, s := range ss {
		ds = append(ds, s.took)
	}
	return ds
}

// wokenBy counts what moved each new leader out of waiting: a release
// notice or its retry timer.
func wokenBy(ss []sample) string {
	n := map[string]int{}
	for _, s := range ss {
		n[s.wokenBy]++
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s×%d", t, n[t]))
	}
	return strings.Join(parts, " ")
}

func gracefulVerdict(ds []time.Duration) string {
	if s := summarize(ds); s.p99 < gracefulTarget {
		return "met"
	}
	return "MISSED"
}

func crashVerdict(ds []time.Duration, ttl time.Duration) string {
	if s := summarize(ds); s.max <= ttl+crashSlack {
		return "met"
	}
	return "MISSED"
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
