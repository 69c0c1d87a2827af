package jobs

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/schedule"
)

// Schedule is a periodic job: at each tick of When, its partition's
// leader enqueues a job with Key and Payload (Job.Schedule is Name,
// Job.DueAt the tick's time), exactly once per tick: the tick's job and
// the schedule's next tick are written in one fenced step, and only while
// the schedule's next tick is still the one the leader read (a resent
// step, a racing leader or a change of leader enqueues it once). Ticks
// missed while no replica could lead the partition are caught up at most
// once, or skipped (CatchUp; schedule.Times.Plan).
//
// A schedule lives in one partition: its key's, or its name's without a
// key, so its ticks join their key's order.
type Schedule struct {
	// Name names it, fleet-wide (schedule.CheckName).
	Name string
	schedule.When
	// Key is the ordering key of its ticks' jobs ("" none: each tick is
	// a keyless job).
	Key     string
	Payload []byte
	CatchUp schedule.CatchUp
	// CreatedAt is when it was added.
	CreatedAt time.Time
}

// scheduleRecord is a Schedule as J:schedules holds it (JSON).
type scheduleRecord struct {
	Every     string `json:"every,omitempty"`
	Cron      string `json:"cron,omitempty"`
	TZ        string `json:"tz,omitempty"`
	Key       string `json:"key,omitempty"`
	Payload   []byte `json:"payload"`
	CatchUp   string `json:"catchUp"`
	CreatedAt int64  `json:"createdAt"`
}

func (s Schedule) record() scheduleRecord {
	r := scheduleRecord{Cron: s.Cron, TZ: s.TZ, Key: s.Key, Payload: s.Payload, CatchUp: s.CatchUp.String(),
		CreatedAt: s.CreatedAt.UnixMilli()}
	if s.Every > 0 {
		r.Every = s.Every.String()
	}
	return r
}

// decodeSchedule reads the J:schedules value of schedule name.
func decodeSchedule(name, v string) (Schedule, error) {
	var r scheduleRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return Schedule{}, fmt.Errorf("jobs: schedule %s: %w", name, err)
	}
	s := Schedule{Name: name, When: schedule.When{Cron: r.Cron, TZ: r.TZ}, Key: r.Key, Payload: r.Payload,
		CreatedAt: time.UnixMilli(r.CreatedAt)}
	var err error
	if r.Every != "" {
		if s.Every, err = time.ParseDuration(r.Every); err != nil {
			return Schedule{}, fmt.Errorf("jobs: schedule %s: every %q: %w", name, r.Every, err)
		}
	}
	if s.CatchUp, err = schedule.ParseCatchUp(r.CatchUp); err != nil {
		return Schedule{}, fmt.Errorf("jobs: schedule %s: %w", name, err)
	}
	return s, nil
}

// CheckSchedule checks a schedule someone gave: its name, its times, its
// key and payload as an enqueue's (CheckItem), its catch-up. It returns
// its times; its errors wrap ErrInvalidInput.
func CheckSchedule(s Schedule) (schedule.Times, error) {
	if err := schedule.CheckName(s.Name); err != nil {
		return schedule.Times{}, inputError("jobs: " + trim(err))
	}
	t, err := s.When.Parse()
	if err != nil {
		return schedule.Times{}, inputError("jobs: " + trim(err))
	}
	if s.CatchUp != schedule.CatchUpOnce && s.CatchUp != schedule.CatchUpSkip {
		return schedule.Times{}, inputError(fmt.Sprintf("jobs: catch-up must be once or skip, got %v", s.CatchUp))
	}
	if err := CheckItem(Item{Key: s.Key, Payload: s.Payload}); err != nil {
		return schedule.Times{}, err
	}
	return t, nil
}

// ErrScheduleExists is AddSchedule's answer for a name already in use.
var ErrScheduleExists = errors.New("jobs: a schedule of that name exists")

// ErrNoSchedule is RemoveSchedule's answer for a name no schedule has.
var ErrNoSchedule = errors.New("jobs: no schedule of that name")

// AddSchedule stores s in this queue (CheckSchedule first), its first
// tick the first after now, and wakes the leader. ErrScheduleExists
// when the name is taken here. It needs no leadership; Router.AddSchedule
// picks the partition.
func (q *Queue) AddSchedule(ctx context.Context, s Schedule) error {
	t, err := CheckSchedule(s)
	if err != nil {
		return err
	}
	now := q.cfg.Now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	spec, err := json.Marshal(s.record())
	if err != nil {
		return fmt.Errorf("jobs: schedule %s: %w", s.Name, err)
	}
	added, err := q.runNoticed(ctx, scheduleAddScript, q.scheduleAddKeys(),
		[]any{s.Name, spec, t.Next(now).UnixMilli()}, "schedule").Int()
	switch {
	case err != nil:
		return fmt.Errorf("jobs: add schedule %s: %w", s.Name, err)
	case added == 0:
		return fmt.Errorf("jobs: add schedule %s: %w", s.Name, ErrScheduleExists)
	}
	return nil
}

// RemoveSchedule deletes the schedule name from this queue: no tick of it
// is enqueued after this returns (a leader's step that had read it finds
// its next tick gone). Its tick jobs already enqueued stay. ErrNoSchedule
// when there is none here.
func (q *Queue) RemoveSchedule(ctx context.Context, name string) error {
	removed, err := scheduleRemoveScript.Run(ctx, q.cfg.Client, q.scheduleRemoveKeys(), name).Int()
	switch {
	case err != nil:
		return fmt.Errorf("jobs: remove schedule %s: %w", name, err)
	case removed == 0:
		return fmt.Errorf("jobs: remove schedule %s: %w", name, ErrNoSchedule)
	}
	return nil
}

// scheduleAddKeys is schedule_add.lua's KEYS, in its header's order.
func (q *Queue) scheduleAddKeys() []string { return []string{q.schedules, q.schedNext} }

// scheduleRemoveKeys is schedule_remove.lua's KEYS, in its header's order.
func (q *Queue) scheduleRemoveKeys() []string { return []string{q.schedules, q.schedNext, q.schedLast} }

// Schedules lists this queue's schedules, by name, with their last and
// next ticks.
func (q *Queue) Schedules(ctx context.Context) ([]figures.Schedule, error) {
	var r scheduleReads
	_, err := q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		r = q.readSchedules(ctx, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: schedules: %w", err)
	}
	return q.schedulesOf(r)
}

// scheduleReads are the replies of readSchedules.
type scheduleReads struct {
	specs, last *redis.MapStringStringCmd
	next        *redis.ZSliceCmd
}

// readSchedules queues on p the reads of this queue's schedules.
func (q *Queue) readSchedules(ctx context.Context, p redis.Pipeliner) scheduleReads {
	return scheduleReads{specs: p.HGetAll(ctx, q.schedules), next: p.ZRangeWithScores(ctx, q.schedNext, 0, -1),
		last: p.HGetAll(ctx, q.schedLast)}
}

// schedulesOf is this queue's schedules from the replies of
// readSchedules, by name.
func (q *Queue) schedulesOf(r scheduleReads) ([]figures.Schedule, error) {
	specs, next, last := r.specs, r.next, r.last
	nexts := map[string]int64{}
	for _, z := range next.Val() {
		nexts[fmt.Sprint(z.Member)] = int64(z.Score)
	}
	out := make([]figures.Schedule, 0, len(specs.Val()))
	for name, v := range specs.Val() {
		s, err := decodeSchedule(name, v)
		if err != nil {
			return nil, err
		}
		out = append(out, q.figures(s, last.Val()[name], nexts[name]))
	}
	slices.SortFunc(out, func(a, b figures.Schedule) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// figures is schedule s as listed: with its last tick (unix ms as text,
// "" for none) and its next (0 for none).
func (q *Queue) figures(s Schedule, last string, next int64) figures.Schedule {
	f := figures.Schedule{Name: s.Name, Partition: q.cfg.Partition, Cron: s.Cron, TZ: s.TZ, Key: s.Key,
		CatchUp: s.CatchUp.String(), PayloadBytes: len(s.Payload), CreatedAt: s.CreatedAt.UTC()}
	if s.Every > 0 {
		f.Every = s.Every.String()
	}
	if ms := millisTime(last); !ms.IsZero() {
		f.LastTick = ms.UTC()
	}
	if next > 0 {
		f.NextTick = time.UnixMilli(next).UTC()
	}
	if t, err := s.When.Parse(); err == nil {
		// The gap that follows the last tick: the one the schedule is in
		// now (a weekday cron's Friday tick is followed by 72 h, not by
		// the 24 h from Monday on). Before the first tick, the one that
		// follows the next.
		from := cmp.Or(f.LastTick, f.NextTick, q.cfg.Now())
		f.PeriodMs = t.Period(from.Add(-time.Millisecond)).Milliseconds()
	}
	return f
}

// tickID is the ID of schedule name's job for the tick at: a ULID whose
// time is the tick's and whose randomness is the name's hash, so a tick
// enqueued twice would show as one ID twice (the chaos checker looks).
func tickID(name string, at time.Time) string {
	sum := sha256.Sum256([]byte(name))
	id, err := ulid.New(uint64(at.UnixMilli()), bytes.NewReader(sum[:10]))
	if err != nil { // a time beyond ULID's range: no such tick is stored
		return ulid.Make().String()
	}
	return id.String()
}

// tick is what this queue's leader sends, at now, for the due schedule
// d: the ticks its plan enqueues and its next tick. A spec it cannot read
// (written by hand?) enqueues nothing and is looked at again in a minute;
// the error says why.
func (q *Queue) tick(d dueSchedule, now time.Time) (ticks, error) {
	t := ticks{name: d.name, seen: d.next, next: now.Add(time.Minute)}
	s, err := decodeSchedule(d.name, d.spec)
	if err != nil {
		return t, err
	}
	times, err := s.When.Parse()
	if err != nil {
		return t, fmt.Errorf("jobs: schedule %s: %w", d.name, err)
	}
	plan := times.Plan(d.next, now, s.CatchUp)
	t.next = plan.Next
	for _, at := range plan.Ticks {
		if !at.After(d.last) {
			continue // enqueued already (the script checks too)
		}
		id := tickID(d.name, at)
		entry := encodeEntry(id, now.UnixMilli(), entryMeta{due: at.UnixMilli(), schedule: d.name}, s.Key, s.Payload)
		t.jobs = append(t.jobs, tickJob{at: at, member: q.member(s.Key, id), entry: entry})
	}
	return t, nil
}

// SchedulePartition is the partition a schedule lives in: its key's, or
// its name's without a key.
func (r *Router) SchedulePartition(s Schedule) int { return r.Partition(cmp.Or(s.Key, s.Name), "") }

// AddSchedule stores s in its partition (SchedulePartition), unless a
// schedule of that name exists in any partition (ErrScheduleExists).
// Two adds of one name with different keys at the same instant may both
// succeed; RemoveSchedule removes both.
func (r *Router) AddSchedule(ctx context.Context, s Schedule) error {
	if _, err := CheckSchedule(s); err != nil {
		return err
	}
	p := r.SchedulePartition(s)
	if len(r.queues) > 1 {
		cmds := make([]*redis.BoolCmd, len(r.queues))
		_, err := r.client.Pipelined(ctx, func(pp redis.Pipeliner) error {
			for i, q := range r.queues {
				cmds[i] = pp.HExists(ctx, q.schedules, s.Name)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("jobs: add schedule %s: %w", s.Name, err)
		}
		for i, c := range cmds {
			if c.Val() && i != p {
				return fmt.Errorf("jobs: add schedule %s: %w (in partition %d)", s.Name, ErrScheduleExists, i)
			}
		}
	}
	return r.queues[p].AddSchedule(ctx, s)
}

// RemoveSchedule removes the schedule name from every partition that
// has it; ErrNoSchedule when none does.
func (r *Router) RemoveSchedule(ctx context.Context, name string) error {
	removed := false
	for _, q := range r.queues {
		err := q.RemoveSchedule(ctx, name)
		switch {
		case err == nil:
			removed = true
		case !errors.Is(err, ErrNoSchedule):
			return err
		}
	}
	if !removed {
		return fmt.Errorf("jobs: remove schedule %s: %w", name, ErrNoSchedule)
	}
	return nil
}

// Schedules lists every partition's schedules, by name: one pipeline
// over them all (the dashboard, /status and every metrics scrape read
// them).
func (r *Router) Schedules(ctx context.Context) ([]figures.Schedule, error) {
	reads := make([]scheduleReads, len(r.queues))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range r.queues {
			reads[i] = q.readSchedules(ctx, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: schedules: %w", err)
	}
	var all []figures.Schedule
	for i, q := range r.queues {
		s, err := q.schedulesOf(reads[i])
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	slices.SortStableFunc(all, func(a, b figures.Schedule) int { return cmp.Compare(a.Name, b.Name) })
	return all, nil
}
