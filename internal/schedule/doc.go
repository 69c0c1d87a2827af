// Package schedule is when a periodic job ticks: every fixed period, or
// at the times a cron expression names in a time zone (parsed by
// github.com/robfig/cron/v3's standard parser), and which ticks a leader
// that comes late enqueues (Times.Plan, by a schedule's CatchUp).
//
// It knows nothing of Redis or of jobs: package jobs stores schedules
// under their partitions and enqueues their ticks, fenced; this package
// only computes times, the same way on every replica and every command.
//
// # Guaranteed
//
//   - Ticks are whole milliseconds. Every ticks at the multiples of its
//     period since the Unix epoch (every 1h: on the hour, UTC), so every
//     replica computes the same ticks without a stored anchor.
//   - Cron ticks are computed in the schedule's zone (UTC by default),
//     with the zone database built into the binary (time/tzdata), so a
//     replica without a zoneinfo directory ticks as the others do.
//   - Plan never returns a tick later than now, never one before the
//     stored next tick, and never more than two: a leader that comes
//     back after a long gap catches up at most once (CatchUpOnce) or not
//     at all (CatchUpSkip).
//
// # Not guaranteed
//
//   - Ticks finer than a second: Every is at least MinEvery, and cron
//     expressions have minutes.
//   - A tick at a wall-clock time that a zone's daylight-saving change
//     skips or repeats is as robfig/cron computes it: a skipped time does
//     not tick that day.
package schedule
