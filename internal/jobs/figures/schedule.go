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
	// PeriodMs is the time between its next tick and the one after, in
	// milliseconds (a cron schedule's varies): a last tick older than
	// twice this, with the partition led, is a schedule that stopped.
	PeriodMs int64 `json:"periodMs"`
}
