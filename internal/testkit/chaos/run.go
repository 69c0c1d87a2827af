package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/schedule"
	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// Config configures a Run.
type Config struct {
	Cluster ClusterConfig
	// Seed drives every random choice of the run (which fault, which
	// target, how long an outage lasts). Timing still varies from run to
	// run; the seed makes the sequence of faults repeatable.
	Seed uint64
	// Faults is how many faults to inject, dealt from a shuffled deck of
	// Kinds (each kind once per len(Kinds) faults). Default 50.
	Faults int
	// Kinds are the faults to draw from. Default: all of Kinds.
	Kinds []Kind
	// Unfenced switches the store's fencing off (see fencecheck.Config).
	Unfenced bool
	// Backlog is how many jobs are kept queued in each partition while
	// faults are injected, so every leader always has work. Default 16
	// without partitions, 4 with.
	Backlog int
	// KeysPer is how many ordering keys each partition's jobs cycle
	// through (with one partition, one job in five has no key: the
	// serial queue). Default 6.
	KeysPer int
	// MaxAttempts is the replicas' JOB_MAX_ATTEMPTS: how soon a poisoned
	// job parks its key. Default 5.
	MaxAttempts int
	// ScheduleFor, when set, makes the run a schedule run: no job is
	// enqueued, the schedule alone (every second) runs for this long
	// while faults of Kinds (default ScheduleKinds) are dealt one after
	// another; Faults is then ignored.
	ScheduleFor time.Duration
	// FaultEvery, when set, spaces the faults: after a fault healed and a
	// leader worked again, the next waits until FaultEvery has passed
	// since the last began. Default 0: one right after another.
	FaultEvery time.Duration
	// Logf, if set, is told of each fault.
	Logf func(format string, args ...any)
}

// KindStats are the figures for one kind of fault.
type KindStats struct {
	// Count faults were injected, OnLeader of them on the leader.
	Count, OnLeader int
	// Worst and Total time from a heal until a leader's write was accepted.
	Worst, Total time.Duration
}

// Summary is the outcome of a run.
type Summary struct {
	Seed   uint64
	Faults int
	// Partitions is PARTITIONS, Keys the ordering keys the jobs used (0
	// without partitions).
	Partitions, Keys int
	// Batch is the replicas' JOB_BATCH: the run of a key a new leader
	// may redo (fencecheck.CheckPartitions).
	Batch         int
	ByKind        map[Kind]*KindStats
	Jobs          int
	LeaderChanges int
	Accepted      int
	Rejected      int
	Violations    []fencecheck.Violation
	// Concurrency is JOB_CONCURRENCY; MaxInFlight the most runs of jobs
	// that were in flight at once (over all replicas).
	Concurrency, MaxInFlight int
	// Runs counts the handler's runs, Failed those that failed (on
	// purpose: FailFirst and Poison).
	Runs, Failed int
	// Transient jobs failed twice before succeeding; Poisoned jobs failed
	// until the suite cured them (their key parked).
	Transient, Poisoned int
	// Parks counts the parks the suite saw; it retried Retried of them
	// (through the operator API) and skipped Skipped (through the CLI).
	Parks, Retried, Skipped int
	// Idempotent jobs were enqueued twice with one idempotency key.
	Idempotent int
	// Delayed jobs were enqueued with a due time; DelayedLate is how long
	// after it their first run began (p50, p99).
	Delayed     int
	DelayedLate [2]time.Duration
	// Ticks counts the schedule's ticks that took effect; TicksMissed the
	// ticks between the first and the last that did not (due while no
	// replica could own the schedule, and not caught up); TickLate is how
	// long after its time a tick's first run began (p50, p99).
	Ticks, TicksMissed int
	TickLate           [2]time.Duration
	// Of the missed ticks, TicksUnowned were due while no leadership of
	// the schedule's partition was at work (between a leader's first run
	// and its last accepted write) or while the Redis node was down;
	// TicksLost were due while one was (none should be). CaughtUp counts
	// the ticks that began a period or more after their time: due while
	// no replica could enqueue them, caught up (at most the latest of
	// them, schedule.CatchUpOnce).
	TicksUnowned, TicksLost, CaughtUp int
	// TickLateOwned is TickLate of the ticks due while a leadership was
	// at work: the schedule's own latency, without the outages.
	TickLateOwned [2]time.Duration
	// WorstGap is the longest time between two accepted writes while
	// faults were being injected: the worst leaderless (or idle) stretch.
	WorstGap time.Duration
	// WorstRecovery is the longest time from a heal to the next accepted
	// write, over all faults.
	WorstRecovery time.Duration
	Wall          time.Duration
}

// Run starts a cluster, keeps jobs flowing, injects cfg.Faults faults one
// after another, waits until every job is committed, stops the replicas
// and checks the store's history. An error means the run could not be
// carried out (or a liveness safety net tripped); violations are in the
// Summary.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	start := time.Now()
	cfg.defaults()
	sum := Summary{Seed: cfg.Seed, ByKind: map[Kind]*KindStats{}}
	coord, err := NewCoordinator(fencecheck.Config{Unfenced: cfg.Unfenced})
	if err != nil {
		return sum, err
	}
	defer coord.Close()
	c, err := StartCluster(ctx, cfg.Cluster, coord)
	if err != nil {
		return sum, err
	}
	defer c.Close()
	sum.Batch, sum.Partitions = c.cfg.Batch, c.cfg.Partitions
	in := &injector{c: c, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), ttl: c.cfg.TTL}
	keysOf := partitionKeys(c.cfg.Partitions, cfg.KeysPer)
	for _, ks := range keysOf {
		sum.Keys += len(ks)
	}
	if err := addSchedule(ctx, c); err != nil {
		return sum, err
	}
	enq := startEnqueuer(ctx, c, cfg.Backlog, keysOf)
	defer enq.stop()
	res := startResolver(ctx, c, cfg)
	defer res.stop()
	if !waitFor(ctx, 30*time.Second, func() bool { _, ok := coord.Store().Last(); return ok }) {
		return sum, fail(c, "chaos: no job was done within 30s of the start")
	}
	phase := time.Now()
	if err := runFaults(ctx, cfg, in, enq, &sum); err != nil {
		return sum, err
	}
	phaseEnd := time.Now()
	jobs, err := enq.stop()
	if err != nil {
		return sum, err
	}
	if err := removeSchedule(ctx, c); err != nil {
		return sum, err
	}
	// Every job may succeed now; parks still open are retried.
	coord.CureAll()
	drained := waitFor(ctx, 60*time.Second, func() bool {
		q, err := c.Router()
		if err != nil {
			return false
		}
		st, err := q.Stats(ctx)
		return err == nil && st.Pending == 0 && st.Delayed == 0
	})
	if !drained {
		return sum, fail(c, "chaos: liveness: the queue did not drain within 60s after the last fault")
	}
	if err := res.stop(); err != nil {
		return sum, err
	}
	c.StopWorkers(ctx)
	sum.Jobs = len(jobs)
	sum.Concurrency = c.cfg.Concurrency
	sum.Accepted, sum.Rejected = coord.Store().Counts()
	sum.Retried, sum.Skipped = res.retried, res.skipped
	for _, j := range jobs {
		if j.Idempotency != "" {
			sum.Idempotent++
		}
		if !j.DueAt.IsZero() {
			sum.Delayed++
		}
	}
	sum.Transient, sum.Poisoned = enq.transient, enq.poisoned
	sum.summarize(coord.Store().History(), jobs, phase, phaseEnd)
	sum.summarizeRuns(coord.Store().History(), coord.Store().Events(), jobs)
	sum.summarizeTicks(coord.Store().Events(), in.outages)
	sum.Wall = time.Since(start)
	return sum, nil
}

func (cfg *Config) defaults() {
	if cfg.Faults == 0 {
		cfg.Faults = 50
	}
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = Kinds
		if cfg.ScheduleFor > 0 {
			cfg.Kinds = ScheduleKinds
		}
	}
	if cfg.ScheduleFor > 0 {
		cfg.Backlog = -1 // nothing but the schedule's ticks
	}
	if cfg.Backlog == 0 {
		cfg.Backlog = 16
		if cfg.Cluster.Partitions > 1 {
			cfg.Backlog = 4
		}
	}
	if cfg.KeysPer == 0 {
		cfg.KeysPer = 6
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.Cluster.MaxAttempts == 0 {
		cfg.Cluster.MaxAttempts = cfg.MaxAttempts
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
}

// runFaults deals the faults from a shuffled deck of the kinds, so every
// kind comes up once in each len(Kinds) faults, and waits after each for a
// leader's accepted write.
func runFaults(ctx context.Context, cfg Config, in *injector, enq *enqueuer, sum *Summary) error {
	var deck []Kind
	start := time.Now()
	more := func(i int) bool {
		if cfg.ScheduleFor > 0 {
			return time.Since(start) < cfg.ScheduleFor
		}
		return i < cfg.Faults
	}
	var began time.Time
	for i := 0; more(i); i++ {
		if wait := cfg.FaultEvery - time.Since(began); i > 0 && wait > 0 {
			backoff.Sleep(ctx, wait)
		}
		began = time.Now()
		if err := enq.failed(); err != nil {
			return err
		}
		if len(deck) == 0 {
			deck = slices.Clone(cfg.Kinds)
			in.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		k := deck[0]
		deck = deck[1:]
		f, err := in.inject(ctx, k)
		if err != nil {
			return fmt.Errorf("chaos: fault %d (%s on %s): %w", i+1, k, f.target, err)
		}
		var back time.Duration
		ok := waitFor(ctx, 60*time.Second, func() bool {
			r, ok := in.c.coord.Store().Last()
			back = r.At.Sub(f.healed)
			return ok && back >= 0
		})
		if !ok {
			return fail(in.c, fmt.Sprintf("chaos: liveness: no leader worked within 60s after fault %d (%s on %s) healed", i+1, k, f.target))
		}
		sum.record(k, f.leader, back)
		of := ""
		if in.c.cfg.Partitions > 1 {
			of = fmt.Sprintf("partition %d, ", f.part)
		}
		n := strconv.Itoa(i+1) + "/" + strconv.Itoa(cfg.Faults)
		if cfg.ScheduleFor > 0 {
			n = strconv.Itoa(i+1) + " at " + time.Since(start).Round(time.Second).String()
		}
		cfg.Logf("fault %s: %s on %s (leader=%v, %stoken %d); a leader worked %s after the heal",
			n, k, f.target, f.leader, of, f.token, back.Round(time.Millisecond))
	}
	return nil
}

// record counts one fault of kind k and the time a leader took to work
// again after its heal.
func (s *Summary) record(k Kind, onLeader bool, back time.Duration) {
	ks := s.ByKind[k]
	if ks == nil {
		ks = &KindStats{}
		s.ByKind[k] = ks
	}
	ks.Count++
	if onLeader {
		ks.OnLeader++
	}
	ks.Total += back
	ks.Worst = max(ks.Worst, back)
	s.WorstRecovery = max(s.WorstRecovery, back)
	s.Faults++
}

// summarize checks the history and counts leader changes (with
// partitions, of each partition's leader) and the worst gap between
// accepted writes during the fault phase.
func (s *Summary) summarize(h []fencecheck.Record, jobs []fencecheck.Job, phase, phaseEnd time.Time) {
	var prev *fencecheck.Record
	tokenOf := map[int]int64{} // partition -> token of its last accepted write
	for i := range h {
		r := &h[i]
		if !r.Accepted {
			continue
		}
		if tok, ok := tokenOf[r.Partition]; ok && r.Token != tok {
			s.LeaderChanges++
		}
		tokenOf[r.Partition] = r.Token
		if prev != nil && !r.At.Before(phase) && !prev.At.After(phaseEnd) {
			s.WorstGap = max(s.WorstGap, r.At.Sub(prev.At))
		}
		prev = r
	}
}

// summarizeRuns checks the run (fencecheck.CheckAll) and takes the
// figures of its log: runs, failures, the most runs in flight at once,
// parks, and how late delayed jobs and ticks began.
func (s *Summary) summarizeRuns(h []fencecheck.Record, events []fencecheck.Event, jobs []fencecheck.Job) {
	s.Violations = fencecheck.CheckAll(h, events, jobs, s.Partitions, s.Batch)
	ended := map[string]bool{}
	for _, e := range events {
		if e.Run != "" && (e.Kind == fencecheck.Wrote || e.Kind == fencecheck.Failed) {
			ended[e.Run] = true
		}
	}
	inFlight := map[string]bool{}
	seqOf := map[string]int{}
	for seq, j := range jobs {
		seqOf[j.ID] = seq
	}
	began := map[string]bool{} // job IDs or ticks begun
	var delayedLate, tickLate []time.Duration
	ticks := map[int64]bool{} // accepted ticks, by time
	for _, e := range events {
		switch e.Kind {
		case fencecheck.ParkSeen:
			s.Parks++
		case fencecheck.Failed:
			s.Failed++
			delete(inFlight, e.Run)
		case fencecheck.Wrote:
			delete(inFlight, e.Run)
			if e.Accepted && e.Schedule != "" {
				ticks[e.ScheduledAt.UnixMilli()] = true
			}
		case fencecheck.Began:
			s.Runs++
			if ended[e.Run] {
				inFlight[e.Run] = true
				s.MaxInFlight = max(s.MaxInFlight, len(inFlight))
			}
			switch seq, ok := seqOf[e.JobID]; {
			case e.Schedule != "":
				if id := e.Schedule + e.ScheduledAt.String(); !began[id] {
					began[id] = true
					tickLate = append(tickLate, e.At.Sub(e.ScheduledAt))
				}
			case ok && !jobs[seq].DueAt.IsZero() && !began[e.JobID]:
				began[e.JobID] = true
				delayedLate = append(delayedLate, e.At.Sub(jobs[seq].DueAt))
			}
		}
	}
	s.DelayedLate, s.TickLate = percentiles(delayedLate), percentiles(tickLate)
	s.Ticks = len(ticks)
	if len(ticks) > 0 {
		first, last := int64(math.MaxInt64), int64(math.MinInt64)
		for at := range ticks {
			first, last = min(first, at), max(last, at)
		}
		s.TicksMissed = int((last-first)/1000) + 1 - len(ticks)
	}
}

// summarizeTicks sorts the schedule's missed ticks (every second,
// between the first and the last that took effect) into those due while
// no leadership of its partition was at work or a Redis node was down
// (outages, from a period before the kill to the restart), and those due
// while one was: a leadership is at work from
// its first run's begin to its last accepted write, so a tick due at t
// is owed by a leadership at work over [t, t+1s].
func (s *Summary) summarizeTicks(events []fencecheck.Event, outages [][2]time.Time) {
	const period = time.Second
	part, ok := -1, false
	ran := map[int64]bool{}
	for _, e := range events {
		if e.Schedule != "" && e.Kind == fencecheck.Wrote && e.Accepted {
			part, ok = e.Partition, true
			ran[e.ScheduledAt.UnixMilli()] = true
		}
	}
	if !ok {
		return
	}
	type span struct{ from, to time.Time }
	spans := map[int64]*span{} // by token
	for _, e := range events {
		if e.Partition != part || e.Run == "" {
			continue
		}
		sp := spans[e.Token]
		switch {
		case e.Kind == fencecheck.Began && sp == nil:
			spans[e.Token] = &span{from: e.At, to: e.At}
		case e.Kind == fencecheck.Wrote && e.Accepted && sp != nil:
			sp.to = e.At
		}
	}
	owned := func(t time.Time) bool {
		for _, o := range outages {
			if !t.Before(o[0].Add(-period)) && !t.After(o[1]) {
				return false
			}
		}
		for _, sp := range spans {
			if !sp.from.After(t) && !sp.to.Before(t.Add(period)) {
				return true
			}
		}
		return false
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for at := range ran {
		first, last = min(first, at), max(last, at)
	}
	for at := first; at <= last; at += period.Milliseconds() {
		switch {
		case ran[at]:
		case owned(time.UnixMilli(at)):
			s.TicksLost++
		default:
			s.TicksUnowned++
		}
	}
	began := map[int64]bool{}
	var ownedLate []time.Duration
	for _, e := range events {
		if at := e.ScheduledAt.UnixMilli(); e.Schedule != "" && e.Kind == fencecheck.Began && !began[at] {
			began[at] = true
			late := e.At.Sub(e.ScheduledAt)
			if late >= period {
				s.CaughtUp++
			}
			if owned(e.ScheduledAt) {
				ownedLate = append(ownedLate, late)
			}
		}
	}
	s.TickLateOwned = percentiles(ownedLate)
}

// percentiles is the median and 99th percentile of ds.
func percentiles(ds []time.Duration) [2]time.Duration {
	if len(ds) == 0 {
		return [2]time.Duration{}
	}
	slices.Sort(ds)
	return [2]time.Duration{ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]}
}

// enqueuer keeps backlog jobs queued so a leader always has work, and
// stops at the first error: an enqueue that failed may have been applied,
// and retrying it could enqueue a number twice.
type enqueuer struct {
	jobs      []fencecheck.Job // enqueued, by seq; the enqueuer's until it is stopped
	transient int
	poisoned  int
	lastDue   map[string]time.Time // by delay key
	err       error
	stopCh    chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
}

func startEnqueuer(ctx context.Context, c *Cluster, backlog int, keysOf [][]string) *enqueuer {
	e := &enqueuer{stopCh: make(chan struct{}), done: make(chan struct{}), lastDue: map[string]time.Time{}}
	go func() {
		defer close(e.done)
		for {
			if e.err = e.topUp(ctx, c, backlog, keysOf); e.err != nil {
				return
			}
			select {
			case <-e.stopCh:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return e
}

// failed is the enqueuer's error once it stopped on one, else nil.
func (e *enqueuer) failed() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// stop stops the enqueuer, waits for it, and returns the jobs it enqueued
// and the error it stopped on, if any.
func (e *enqueuer) stop() ([]fencecheck.Job, error) {
	e.stopOnce.Do(func() { close(e.stopCh) })
	<-e.done
	return e.jobs, e.err
}

// The mix of jobs, by seq: one in ten is delayed (on its partition's
// delay key, due 0.2 to 1.5 s later, each after the key's previous one so
// the key's due order is its enqueue order); of the others, one in seven
// is enqueued twice with one idempotency key, one in eleven fails its
// first two runs, one in 61 is poisoned (it fails until the suite cures
// it, so its key parks). With one partition, one job in five has no key.
func delayedSeq(seq int) bool    { return seq%10 == 3 }
func idempotentSeq(seq int) bool { return seq%7 == 1 }
func transientSeq(seq int) bool  { return seq%11 == 5 }
func poisonSeq(seq int) bool     { return seq%61 == 30 }

// topUp enqueues jobs, numbered from len(e.jobs) on, until backlog are
// pending in each partition; each partition's jobs cycle through its keys
// (keysOf; the last of each is its delay key), so every key has a queue
// of its own to keep in order.
func (e *enqueuer) topUp(ctx context.Context, c *Cluster, backlog int, keysOf [][]string) error {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	r, err := c.Router()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stats, err := r.PartitionStats(ctx)
	if err != nil {
		return fmt.Errorf("chaos: queue stats: %w", err)
	}
	for p, st := range stats {
		for i := st.Pending; i < int64(backlog); i++ {
			if err := e.enqueue(ctx, c, r, p, keysOf[p]); err != nil {
				return err
			}
		}
	}
	return nil
}

// enqueue enqueues the next job, of partition p, as the mix has it.
func (e *enqueuer) enqueue(ctx context.Context, c *Cluster, r *jobs.Router, p int, keys []string) error {
	seq := len(e.jobs)
	j := fencecheck.Job{Partition: p}
	it := jobs.Item{Payload: []byte(strconv.Itoa(seq))}
	plain := keys[:len(keys)-1]
	switch {
	case delayedSeq(seq):
		j.Key = keys[len(keys)-1]
		due := time.Now().Add(200*time.Millisecond + time.Duration(seq*37%1300)*time.Millisecond)
		// Whole milliseconds, as the queue keeps them.
		due = due.Truncate(time.Millisecond)
		if next := e.lastDue[j.Key].Add(time.Millisecond); due.Before(next) {
			due = next
		}
		e.lastDue[j.Key], j.DueAt, it.NotBefore = due, due, due
	case c.cfg.Partitions == 1 && seq%5 == 0:
		// The serial queue of one partition.
	default:
		j.Key = plain[seq%len(plain)]
	}
	it.Key = j.Key
	if j.DueAt.IsZero() {
		switch {
		case idempotentSeq(seq):
			j.Idempotency = "chaos-" + strconv.Itoa(seq)
			it.IdempotencyKey = j.Idempotency
		case transientSeq(seq):
			c.coord.FailFirst(seq, 2)
			e.transient++
		case poisonSeq(seq):
			c.coord.Poison(seq)
			e.poisoned++
		}
	}
	rec, err := r.EnqueueItem(ctx, it)
	if err != nil {
		return fmt.Errorf("chaos: enqueue job %d: %w", seq, err)
	}
	j.ID = rec.ID
	if j.Idempotency != "" {
		again, err := r.EnqueueItem(ctx, it)
		if err != nil {
			return fmt.Errorf("chaos: enqueue job %d again (idempotency key %s): %w", seq, j.Idempotency, err)
		}
		if again.ID != rec.ID || !again.Existing {
			j.Duplicates = append(j.Duplicates, again.ID)
		}
	}
	e.jobs = append(e.jobs, j)
	return nil
}

// partitionKeys picks ordering keys ("k0", "k1", ...) for each of n
// partitions, per of each by partition.Of, and then a delay key ("d0",
// "d1", ...) for each, last.
func partitionKeys(n, per int) [][]string {
	n = max(n, 1)
	out := make([][]string, n)
	pick := func(prefix string, per int) {
		count := make([]int, n)
		for i, full := 0, 0; full < n; i++ {
			k := prefix + strconv.Itoa(i)
			p := partition.Of(k, n)
			if count[p] < per {
				out[p] = append(out[p], k)
				count[p]++
				if count[p] == per {
					full++
				}
			}
		}
	}
	pick("k", per)
	pick("d", 1)
	return out
}

// The schedule of every run: every second, its ticks on a key of their
// own so their order is their time's.
const (
	scheduleName = "chaos-every-second"
	scheduleKey  = "tick"
)

func addSchedule(ctx context.Context, c *Cluster) error {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	r, err := c.Router()
	if err != nil {
		return err
	}
	err = r.AddSchedule(ctx, jobs.Schedule{Name: scheduleName, When: schedule.When{Every: time.Second}, Key: scheduleKey,
		Payload: []byte("tick"), CatchUp: schedule.CatchUpOnce})
	if err != nil {
		return fmt.Errorf("chaos: add schedule: %w", err)
	}
	return nil
}

func removeSchedule(ctx context.Context, c *Cluster) error {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	r, err := c.Router()
	if err != nil {
		return err
	}
	if err := r.RemoveSchedule(ctx, scheduleName); err != nil {
		return fmt.Errorf("chaos: remove schedule: %w", err)
	}
	return nil
}

// resolver is the operator: it watches the parked keys, notes each park
// in the store's log, leaves it parked a while (so a later job of the key
// that ran anyway would show), then resolves it: a poisoned job is
// skipped (through the CLI) or cured and retried (through the operator
// API) at random, any other parked job is retried. Each decision is
// logged before it is carried out, so the log never shows a later job
// run before the decision that released it.
type resolver struct {
	retried, skipped int
	err              error
	stopCh, done     chan struct{}
	stopOnce         sync.Once
}

// parkHold is how long a park is left in place before it is resolved.
const parkHold = 300 * time.Millisecond

func startResolver(ctx context.Context, c *Cluster, cfg Config) *resolver {
	res := &resolver{stopCh: make(chan struct{}), done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(cfg.Seed^0x5eed, cfg.Seed))
	seen := map[string]time.Time{} // park (job ID and time) -> when seen
	go func() {
		defer close(res.done)
		for {
			select {
			case <-res.stopCh:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if res.err = res.round(ctx, c, cfg, rng, seen); res.err != nil {
				return
			}
		}
	}()
	return res
}

func (res *resolver) round(ctx context.Context, c *Cluster, cfg Config, rng *rand.Rand, seen map[string]time.Time) error {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	r, err := c.Router()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	parked, err := r.Parked(ctx)
	if err != nil {
		cfg.Logf("resolver: parked keys: %v", err) // a node restarting: next round
		return nil
	}
	store := c.coord.Store()
	for _, pk := range parked {
		id := pk.JobID + "@" + pk.ParkedAt.String()
		w := fencecheck.Write{JobID: pk.JobID, Key: pk.Key, Partition: pk.Partition, Seq: -1}
		since, ok := seen[id]
		if !ok {
			seen[id] = time.Now()
			store.Note(fencecheck.ParkSeen, w)
			continue
		}
		if time.Since(since) < parkHold {
			continue
		}
		ref := []string{"--key", pk.Key}
		if pk.Key == "" {
			ref = []string{"--job", pk.JobID}
		}
		if c.coord.Poisoned(pk.JobID) && rng.IntN(2) == 0 {
			store.Note(fencecheck.Skipped, w)
			if _, err := c.CLI(ctx, append([]string{"skip", "--reason", "chaos: poisoned"}, ref...)...); err != nil {
				return err
			}
			res.skipped++
		} else {
			c.coord.Cure(pk.JobID)
			store.Note(fencecheck.Retried, w)
			if _, err := r.Retry(ctx, jobs.Ref{Key: pk.Key, JobID: pk.JobID}); err != nil {
				return fmt.Errorf("chaos: retry %s: %w", ref, err)
			}
			res.retried++
		}
		cfg.Logf("resolver: key %q (partition %d) parked on job %s after %d attempts: %d retried, %d skipped so far",
			pk.Key, pk.Partition, pk.JobID, pk.Attempts, res.retried, res.skipped)
	}
	return nil
}

// stop stops the resolver, waits for it and returns the error it
// stopped on, if any.
func (res *resolver) stop() error {
	res.stopOnce.Do(func() { close(res.stopCh) })
	<-res.done
	return res.err
}

// fail describes a run that could not go on, with the end of the store's
// history (the replicas' output goes to ClusterConfig.LogDir).
func fail(c *Cluster, msg string) error {
	h := c.coord.Store().History()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nlast writes (of %d; %d begun since the last reset):", msg, len(h), c.coord.Begun())
	for _, r := range h[max(0, len(h)-10):] {
		fmt.Fprintf(&b, "\n  %+v", r)
	}
	return errors.New(b.String())
}

// waitFor polls cond every 10ms until it holds (true) or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		backoff.Sleep(ctx, 10*time.Millisecond)
	}
}

// Table renders the summary for people.
func (s Summary) Table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "seed\t%d\n", s.Seed)
	fmt.Fprintf(w, "faults\t%d\n", s.Faults)
	fmt.Fprintf(w, "PARTITIONS\t%d\n", max(s.Partitions, 1))
	if s.Keys > 0 {
		fmt.Fprintf(w, "ordering keys\t%d\n", s.Keys)
	}
	fmt.Fprintf(w, "JOB_BATCH\t%d\n", s.Batch)
	fmt.Fprintf(w, "leader changes\t%d\n", s.LeaderChanges)
	fmt.Fprintf(w, "jobs\t%d\n", s.Jobs)
	fmt.Fprintf(w, "writes accepted\t%d\n", s.Accepted)
	fmt.Fprintf(w, "stale writes rejected\t%d\n", s.Rejected)
	fmt.Fprintf(w, "JOB_CONCURRENCY\t%d (most runs in flight at once: %d)\n", s.Concurrency, s.MaxInFlight)
	fmt.Fprintf(w, "handler runs\t%d (%d failed on purpose)\n", s.Runs, s.Failed)
	fmt.Fprintf(w, "jobs failing twice, then succeeding\t%d\n", s.Transient)
	fmt.Fprintf(w, "poisoned jobs\t%d\n", s.Poisoned)
	fmt.Fprintf(w, "parks seen\t%d (%d retried, %d skipped)\n", s.Parks, s.Retried, s.Skipped)
	fmt.Fprintf(w, "idempotent enqueues sent twice\t%d\n", s.Idempotent)
	fmt.Fprintf(w, "delayed jobs\t%d (first run after due: p50 %s, p99 %s)\n", s.Delayed,
		s.DelayedLate[0].Round(time.Millisecond), s.DelayedLate[1].Round(time.Millisecond))
	fmt.Fprintf(w, "schedule ticks (every 1s)\t%d (%d missed; due to start: p50 %s, p99 %s)\n", s.Ticks, s.TicksMissed,
		s.TickLate[0].Round(time.Millisecond), s.TickLate[1].Round(time.Millisecond))
	fmt.Fprintf(w, "missed ticks\t%d due while unowned, %d lost while owned; %d caught up\n", s.TicksUnowned, s.TicksLost, s.CaughtUp)
	fmt.Fprintf(w, "ticks due while owned: due to start\tp50 %s, p99 %s\n",
		s.TickLateOwned[0].Round(time.Millisecond), s.TickLateOwned[1].Round(time.Millisecond))
	fmt.Fprintf(w, "violations\t%d\n", len(s.Violations))
	fmt.Fprintf(w, "worst leaderless gap\t%s\n", s.WorstGap.Round(time.Millisecond))
	fmt.Fprintf(w, "worst recovery after a heal\t%s\n", s.WorstRecovery.Round(time.Millisecond))
	fmt.Fprintf(w, "wall time\t%s\n", s.Wall.Round(time.Second))
	fmt.Fprintf(w, "\nfault\tcount\ton leader\trecovery mean\trecovery worst\n")
	for _, k := range append(slices.Clone(Kinds), Term) {
		ks := s.ByKind[k]
		if ks == nil {
			continue
		}
		mean := ks.Total / time.Duration(ks.Count)
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", k, ks.Count, ks.OnLeader, mean.Round(time.Millisecond), ks.Worst.Round(time.Millisecond))
	}
	_ = w.Flush()
	for _, v := range s.Violations {
		fmt.Fprintf(&b, "%v\n", v)
	}
	return b.String()
}

// Round is the outcome of one StaleWrites round.
type Round struct {
	// Late is the paused leader's write as the store recorded it.
	Late fencecheck.Record
	// Violations are what Check found in the round's history.
	Violations []fencecheck.Violation
}

// StaleWrites runs the pause scenario rounds times on one cluster: each
// round enqueues one job, stops its leader (and the job's writer right
// before it writes) until another replica has taken over and done the job,
// then lets the stale writer write first. Each round's history is checked
// on its own.
func StaleWrites(ctx context.Context, cfg Config, rounds int) ([]Round, error) {
	scfg := fencecheck.Config{Unfenced: cfg.Unfenced}
	coord, err := NewCoordinator(scfg)
	if err != nil {
		return nil, err
	}
	defer coord.Close()
	c, err := StartCluster(ctx, cfg.Cluster, coord)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	in := &injector{c: c, ttl: c.cfg.TTL}
	var out []Round
	for r := range rounds {
		coord.Reset(scfg)
		round, err := staleRound(ctx, in, r+1)
		if err != nil {
			return out, err
		}
		out = append(out, round)
	}
	return out, nil
}

// staleRound is round n of StaleWrites.
func staleRound(ctx context.Context, in *injector, n int) (Round, error) {
	c, coord := in.c, in.c.coord
	s, _ := c.WaitLeader(ctx, 30*time.Second)
	if s == nil {
		return Round{}, fail(c, fmt.Sprintf("chaos: round %d: no leader", n))
	}
	trap := coord.Arm(s.name)
	q, err := c.Queue()
	if err != nil {
		return Round{}, err
	}
	if _, err := q.Enqueue(ctx, "", []byte("0")); err != nil {
		return Round{}, err
	}
	var b Begin
	select {
	case b = <-trap.Caught():
	case <-time.After(30 * time.Second):
		coord.Disarm(trap)
		return Round{}, fail(c, fmt.Sprintf("chaos: round %d: %s did not start the job", n, s.name))
	}
	err = c.pause(s, b.PID)
	coord.Disarm(trap)
	if err != nil {
		return Round{}, err
	}
	if !in.takeover(ctx, b.Partition, b.Token) {
		return Round{}, fail(c, fmt.Sprintf("chaos: round %d: no replica took over from %s", n, s.name))
	}
	before := len(coord.Store().History())
	if err := syscallCont(b.PID); err != nil {
		return Round{}, err
	}
	in.lateWrite(ctx, b, before)
	if err := c.resume(s); err != nil {
		return Round{}, err
	}
	h := coord.Store().History()
	var round Round
	for _, rec := range h {
		if rec.Token == b.Token && rec.Worker == b.Worker {
			round.Late = rec
		}
	}
	if round.Late.Worker == "" {
		return round, errors.New("chaos: the paused writer never wrote (killed before it could)")
	}
	round.Violations = fencecheck.Check(h, 1)
	// The next round needs the job committed.
	if !waitFor(ctx, 30*time.Second, func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Pending == 0 && st.Delayed == 0
	}) {
		return round, fail(c, fmt.Sprintf("chaos: round %d: the job was not committed", n))
	}
	return round, nil
}
