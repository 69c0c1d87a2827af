package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one row of the table.
type result struct {
	c contender
	f figures
}

// scenarioResult is one block of the table.
type scenarioResult struct {
	sc   scenario
	rows []result
}

// report is everything the run prints.
type report struct {
	machine  string
	settings []string
	blocks   []scenarioResult
	idle     []idleCost
}

// bestPeer is the peer with the most ops/s in a block; ok is false when the
// block has none.
func (b scenarioResult) bestPeer() (r result, ok bool) {
	for _, row := range b.rows {
		if row.c.peer && (!ok || row.f.opsPerSec > r.f.opsPerSec) {
			r, ok = row, true
		}
	}
	return r, ok
}

func (b scenarioResult) find(c contender) (result, bool) {
	for _, row := range b.rows {
		if row.c.name == c.name {
			return row, true
		}
	}
	return result{}, false
}

// rtt is the raw PING p50 of the first block: one round trip.
func (r report) rtt() time.Duration {
	for _, b := range r.blocks {
		if p, ok := b.find(rawPing); ok {
			return p.f.p50
		}
	}
	return 0
}

func (r report) write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s\n\n", r.machine)
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	line := func(cells ...string) {
		fmt.Fprintf(tw, "| %s |\n", strings.Join(cells, "\t| "))
	}
	line("scenario", "lib", "ops/s (reps min–max)", "p50", "p99", "Redis CPU/op", "ops/s ÷ best peer", "ops/s ÷ raw", "p50 ÷ RTT", "notes")
	line("---", "---", "--:", "--:", "--:", "--:", "--:", "--:", "--:", "---")
	rtt := r.rtt()
	for _, blk := range r.blocks {
		best, hasPeer := blk.bestPeer()
		raw, hasRaw := blk.find(rawCycle)
		for _, row := range blk.rows {
			f := row.f
			vsPeer, vsRaw, vsRTT := "—", "—", "—"
			if hasPeer && best.f.opsPerSec > 0 {
				vsPeer = fmt.Sprintf("%.2f", f.opsPerSec/best.f.opsPerSec)
			}
			if hasRaw && raw.f.opsPerSec > 0 {
				vsRaw = fmt.Sprintf("%.2f", f.opsPerSec/raw.f.opsPerSec)
			}
			if rtt > 0 {
				vsRTT = fmt.Sprintf("%.1f", float64(f.p50)/float64(rtt))
			}
			line(blk.sc.name, row.c.name, fmt.Sprintf("%.0f (%.0f–%.0f)", f.opsPerSec, f.opsMin, f.opsMax), formatDuration(f.p50), formatDuration(f.p99),
				formatDuration(f.serverPerOp), vsPeer, vsRaw, vsRTT, notes(blk.sc, row))
		}
	}
	for _, c := range r.idle {
		line(fmt.Sprintf("idle %s, %s", c.role, strings.Join(idleTiming, " ")), "lockworker (binary)",
			"—", "—", "—", "—", "—", "—", "—", c.describe())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, s := range r.settings {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString(r.verdicts())
	_, err := io.WriteString(w, b.String())
	return err
}

// notes carries what the columns cannot: fairness when contended, what a
// baseline is.
func notes(sc scenario, row result) string {
	switch {
	case row.c.name == rawPing.name:
		return "one round trip: the RTT"
	case sc.contended:
		f := row.f
		return fmt.Sprintf("latency = wait to win; Jain %.3f; wins per client min %.0f max %.0f; %.1f tries per win",
			f.jain, f.minWins, f.maxWins, f.attemptsPerWin)
	case row.c.raw:
		return "2 plain commands, not a safe lock: the floor"
	}
	return ""
}

// verdicts says, per block, how lockworker compares with the best peer
// and, where it is slower, why.
func (r report) verdicts() string {
	var b strings.Builder
	for _, blk := range r.blocks {
		best, ok := blk.bestPeer()
		lw, found := blk.find(lockworkerLib)
		if !ok || !found || best.f.opsPerSec == 0 {
			continue
		}
		ratio := lw.f.opsPerSec / best.f.opsPerSec
		cpu := ""
		if best.f.serverPerOp > 0 {
			cpu = fmt.Sprintf(", with %.2f× its Redis CPU per op", float64(lw.f.serverPerOp)/float64(best.f.serverPerOp))
		}
		// Overlapping ranges mean the repetitions cannot tell the two apart.
		noise := ""
		if lw.f.opsMax >= best.f.opsPerSec || best.f.opsMin <= lw.f.opsPerSec {
			noise = " The repetitions' ranges overlap the other's median: the gap is within this run's noise."
		}
		switch {
		case ratio < 0.95:
			fmt.Fprintf(&b, "- %s: lockworker does %.0f%% of %s's ops/s%s.%s Why it can be slower: %s\n",
				blk.sc.name, 100*ratio, best.c.name, cpu, noise, blk.sc.why)
		case ratio > 1.05:
			fmt.Fprintf(&b, "- %s: lockworker does %.0f%% of %s's ops/s%s.%s\n", blk.sc.name, 100*ratio, best.c.name, cpu, noise)
		default:
			fmt.Fprintf(&b, "- %s: lockworker is within 5%% of %s's ops/s%s.\n", blk.sc.name, best.c.name, cpu)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nlockworker against the best peer:\n" + b.String()
}

// formatDuration prints µs below a millisecond, ms above.
func formatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
