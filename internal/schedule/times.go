package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones resolve alike on every replica (see doc.go)

	"github.com/robfig/cron/v3"
)

// MinEvery is the shortest period of an Every schedule; MaxEvery the
// longest.
const (
	MinEvery = time.Second
	MaxEvery = 366 * 24 * time.Hour
)

// When is when a schedule ticks: every Every, or at the times Cron names
// in zone TZ. Exactly one of Every and Cron is set.
type When struct {
	// Every ticks at every multiple of it since the Unix epoch: MinEvery to
	// MaxEvery, whole milliseconds.
	Every time.Duration
	// Cron is a standard cron expression: five fields (minute, hour, day
	// of month, month, day of week) or a descriptor such as @daily
	// (@every is Every's; the zone is TZ's, not a CRON_TZ= prefix's).
	Cron string
	// TZ is the IANA zone Cron is read in, such as Europe/Paris; "" is
	// UTC. Only with Cron.
	TZ string
}

// String is how people read it: "every 1m0s", "cron 0 2 * * * (Europe/Paris)".
func (w When) String() string {
	switch {
	case w.Every > 0:
		return "every " + w.Every.String()
	case w.TZ != "":
		return "cron " + w.Cron + " (" + w.TZ + ")"
	}
	return "cron " + w.Cron
}

// ErrInvalid is the class of every refusal of a When, a CatchUp or a name:
// errors.Is(err, ErrInvalid) holds for them.
var ErrInvalid = errors.New("schedule: invalid")

type invalid string

func (e invalid) Error() string      { return "schedule: " + string(e) }
func (invalid) Is(target error) bool { return target == ErrInvalid }

func bad(format string, args ...any) error { return invalid(fmt.Sprintf(format, args...)) }

// parser is robfig/cron's standard parser (ParseStandard's): five fields
// or a descriptor.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Times is a parsed When: it says when the ticks are.
type Times struct {
	every time.Duration      // > 0: Every
	spec  *cron.SpecSchedule // else: Cron, in its zone
}

// Parse checks w and returns its times. Its errors wrap ErrInvalid.
func (w When) Parse() (Times, error) {
	switch {
	case w.Every != 0 && w.Cron != "":
		return Times{}, bad("give every or cron, not both")
	case w.Every != 0:
		return w.parseEvery()
	case strings.TrimSpace(w.Cron) == "":
		return Times{}, bad("give every or cron")
	}
	return w.parseCron()
}

func (w When) parseEvery() (Times, error) {
	switch {
	case w.TZ != "":
		return Times{}, bad("a zone goes with cron, not every (every ticks on multiples of its period since the Unix epoch)")
	case w.Every < MinEvery || w.Every > MaxEvery:
		return Times{}, bad("every must be between %s and %s, got %s", MinEvery, MaxEvery, w.Every)
	case w.Every%time.Millisecond != 0:
		return Times{}, bad("every must be whole milliseconds, got %s", w.Every)
	}
	return Times{every: w.Every}, nil
}

func (w When) parseCron() (Times, error) {
	expr := strings.TrimSpace(w.Cron)
	switch {
	case strings.HasPrefix(expr, "@every"):
		return Times{}, bad("cron %q: use every for a fixed period", w.Cron)
	case strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ="):
		return Times{}, bad("cron %q: give the zone apart (tz), not in the expression", w.Cron)
	}
	loc := time.UTC
	if w.TZ != "" {
		l, err := time.LoadLocation(w.TZ)
		if err != nil || w.TZ == "Local" {
			return Times{}, bad("tz %q is no IANA time zone (such as Europe/Paris or UTC)", w.TZ)
		}
		loc = l
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return Times{}, bad("cron %q: %v", w.Cron, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return Times{}, bad("cron %q: not a cron expression", w.Cron)
	}
	spec.Location = loc
	t := Times{spec: spec}
	if t.Next(time.Now()).IsZero() {
		return Times{}, bad("cron %q never ticks", w.Cron)
	}
	return t, nil
}

// Next is the first tick after t, to the millisecond; the zero time when
// a cron expression has none within five years.
func (t Times) Next(after time.Time) time.Time {
	if t.every > 0 {
		e := t.every.Milliseconds()
		return time.UnixMilli((floorDiv(after.UnixMilli(), e) + 1) * e).UTC()
	}
	n := t.spec.Next(after)
	if n.IsZero() {
		return n
	}
	return time.UnixMilli(n.UnixMilli()).UTC()
}

// Period is the time between the first tick after t and the one after
// it: an Every's period, or a cron expression's gap there (zero when it
// has none).
func (t Times) Period(after time.Time) time.Duration {
	a := t.Next(after)
	if a.IsZero() {
		return 0
	}
	b := t.Next(a)
	if b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// latest is the last tick at or before at and at or after floor; zero
// when there is none. For a cron expression (which has no "previous") it
// looks back over a window that doubles until it holds a tick, then walks
// forward: a few calls of Next, however long ago floor is.
func (t Times) latest(at, floor time.Time) time.Time {
	if at.Before(floor) {
		return time.Time{}
	}
	if t.every > 0 {
		e := t.every.Milliseconds()
		x := time.UnixMilli(floorDiv(at.UnixMilli(), e) * e).UTC()
		if x.Before(floor) {
			return time.Time{}
		}
		return x
	}
	for w := time.Minute; ; w *= 2 {
		from := at.Add(-w)
		clipped := !from.After(floor.Add(-time.Millisecond)) // the window reaches floor
		if clipped {
			from = floor.Add(-time.Millisecond) // Next(from) may be floor itself
		}
		if x := t.Next(from); !x.IsZero() && !x.After(at) {
			for {
				y := t.Next(x)
				if y.IsZero() || y.After(at) {
					return x
				}
				x = y
			}
		}
		if clipped {
			return time.Time{}
		}
	}
}

// CatchUp is what a schedule does with the ticks it missed: the ticks
// that fell due while no replica could enqueue them, each followed by
// another tick that is also due by the time one can.
type CatchUp int

const (
	// CatchUpOnce enqueues one tick for all the missed ones: the latest,
	// with its scheduled time, before the current one.
	CatchUpOnce CatchUp = iota
	// CatchUpSkip enqueues none of them: only the current tick runs.
	CatchUpSkip
)

func (c CatchUp) String() string {
	switch c {
	case CatchUpOnce:
		return "once"
	case CatchUpSkip:
		return "skip"
	}
	return "CatchUp(" + strconv.Itoa(int(c)) + ")"
}

// ParseCatchUp reads once or skip.
func ParseCatchUp(s string) (CatchUp, error) {
	for _, c := range []CatchUp{CatchUpOnce, CatchUpSkip} {
		if s == c.String() {
			return c, nil
		}
	}
	return 0, bad("catch-up must be once or skip, got %q", s)
}

// Plan is what a leader enqueues for a schedule whose stored next tick
// has come: Ticks, in order (the missed tick caught up, if any, then the
// current one), and the next tick to store.
type Plan struct {
	Ticks []time.Time
	Next  time.Time
}

// Plan is what to enqueue at now for a schedule whose next tick is next
// (a tick these Times computed). The current tick is the latest one due
// (at or before now, at or after next): it runs however late, since its
// successor is not due yet. The ticks between next and it were missed:
// with CatchUpOnce the latest of them runs once before it, with
// CatchUpSkip none does. Nothing is due before next: Plan{Next: next}.
func (t Times) Plan(next, now time.Time, c CatchUp) Plan {
	cur := t.latest(now, next)
	if cur.IsZero() {
		if next.After(now) {
			return Plan{Next: next}
		}
		return Plan{Next: t.Next(now)} // next was no tick of these Times
	}
	var p Plan
	if c == CatchUpOnce {
		if missed := t.latest(cur.Add(-time.Millisecond), next); !missed.IsZero() {
			p.Ticks = append(p.Ticks, missed)
		}
	}
	p.Ticks = append(p.Ticks, cur)
	p.Next = t.Next(cur)
	return p
}

// MaxName is the longest schedule name, in bytes.
const MaxName = 200

// CheckName checks a schedule's name: 1 to MaxName bytes of letters,
// digits and . _ : - (it travels in a job's header, a URL path and an
// environment variable).
func CheckName(name string) error {
	if name == "" || len(name) > MaxName {
		return bad("a name has 1 to %d bytes, got %d", MaxName, len(name))
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)
		if !ok {
			return bad("name %q: only letters, digits and . _ : - are allowed", name)
		}
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
