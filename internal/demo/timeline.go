package demo

import (
	"cmp"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"
)

// event is one line of the timeline the demo prints at the end.
type event struct {
	at   time.Duration
	what string
}

func (d *demo) mark(format string, args ...any) { d.markAt(time.Now(), format, args...) }

// markAt records an event seen at t, which may be before the last one
// marked (a poll finds out after the fact).
func (d *demo) markAt(t time.Time, format string, args ...any) {
	d.timeline = append(d.timeline, event{at: t.Sub(d.start), what: fmt.Sprintf(format, args...)})
}

func (d *demo) printTimeline(handover, failover time.Duration, tokens ...int64) {
	d.say("timeline (seconds since the demo started)")
	d.printEvents()
	d.say("")
	d.say("handover after SIGTERM: %-8s (the leader released the lock and published a notice)", ms(handover))
	d.say("failover after kill -9: %-8s (bounded by LOCK_TTL=%s: nobody can take a lease that may be live)", ms(failover), demoTTL)
	d.say("fencing tokens: %d → %d → %d (each new leader's token is higher, so a late write by an old one is rejected)", tokens[0], tokens[1], tokens[2])
}

// printEvents prints the timeline's events.
func (d *demo) printEvents() {
	slices.SortStableFunc(d.timeline, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	for _, e := range d.timeline {
		fmt.Fprintf(tw, "  %7.3fs\t%s\n", e.at.Seconds(), e.what)
	}
	_ = tw.Flush()
}

func ms(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(10 * time.Millisecond).String()
}
