package figures

import "time"

// Schedule is one schedule as `lockworker schedule list`, `lockworker
// status`, the dashboard and the metrics show it: what it is, where it
// lives, and its last and next ticks.
type Schedule struct {
	Name      string `json:"name"`
	Partition int    `json:"partition"`
	// Every is its period (a Go duration), or "" for a cron schedule,
	// whose expression is Cron, read in zone TZ ("" is UTC).
	Every string `json:"every,omitempty"`
	Cron  string `json:"cron,omitempty"`
	TZ    string `json:"tz,omitempty"`
	// Key is the ordering key of its ticks' jobs; "" for none.
	Key string `json:"key,omitempty"`
	// CatchUp is once or skip: what becomes of the ticks missed while no
	// replica could lead its partition.
	CatchUp      string    `json:"catchUp"`
	PayloadBytes int       `json:"payloadBytes"`
	CreatedAt    time.Time `json:"createdAt"`
	// LastTick is the scheduled time of the last tick enqueued; zero
	// (absent from the JSON) before the first.
	LastTick time.Time `json:"lastTick,omitzero"`
	// NextTick is when it ticks next; zero when it never ticks again.
	NextTick time.Time `json:"nextTick,omitzero"`
	// PeriodMs is the gap between consecutive ticks, in milliseconds: an
	// every schedule's period; for a cron schedule (whose gaps vary) the
	// gap from its last tick to the tick that follows it, or before the
	// first tick, from its next tick to the one after. A last tick older
	// than twice this, with the partition led, is a schedule that
	// stopped (the LockworkerScheduleLate alert).
	PeriodMs int64 `json:"periodMs"`
}
