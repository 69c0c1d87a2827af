package jobs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
)

// Process is the leader's loop. Each round trip to Redis is one fenced
// step (step.lua) that records how the runs just finished ended and
// claims the next: up to one group per slot it could take (Slots, shared
// by the replica's partitions), oldest first, up to Batch jobs of each.
// Each claimed run executes in a goroutine of its own, its jobs one at a
// time in order, while other groups' runs execute beside it; a group never
// has two runs at once. One step is in flight at a time: the runs that
// finish meanwhile are recorded together by the next (group commit
// across groups). A job that fails is retried on its group alone (Retry);
// one that fails for good parks its group, or is dead-lettered
// (OnFailure). A job that could not start for want of host resources
// (ErrHostFault) costs no attempt; HostFaultLimit of them in a row end
// Process with that error.
//
// It returns nil once ctx is done, ErrLeaseInvalid when the lease stops
// being valid first, and an error wrapping ErrStaleToken when Redis, or
// the handler's own store, says a newer leader exists. Redis errors are
// logged and retried with backoff, never returned. Every run it started
// has returned when it returns.
//
// ctx is the leadership's context: its owner (package leader) cancels it
// when the lease's deadline passes, and jobs run under it. Process itself
// checks lease.Valid before each job and before each step.
func (w *Worker) Process(ctx context.Context, lease Lease) error {
	if lease == nil {
		return errors.New("jobs: Process needs a lease")
	}
	l := newLoop(ctx, w, lease)
	l.log.Info("processing jobs", "batch", w.cfg.Batch, "concurrency", w.slots.Size())
	err := l.run()
	l.end()
	return err
}

// loop is one leadership's Process: everything its iterations share.
type loop struct {
	w     *Worker
	ctx   context.Context // the leadership's
	lease Lease
	token int64
	log   *slog.Logger

	// The runs: each executes under runs, which ends with ctx or when
	// the loop stops them; their goroutines (and the slot waiter's) are
	// counted in wg.
	runs     context.Context
	stopRuns context.CancelFunc
	wg       sync.WaitGroup
	running  map[string]bool // members whose runs execute
	results  chan runResult  // finished runs, room for one per slot
	pending  []runResult     // finished, not yet recorded

	slots    int        // slots held to claim with, not yet given to a run
	waiter   chan error // a wait for a slot in turn, when one is under way
	endWait  context.CancelFunc
	mayClaim bool // a group may be ready: claim with the next step
	recover  bool // the next step releases the claims not held
	resent   bool // the last step failed: the next one may find its work done
	paused   bool
	readyNow int       // groups ready at the last step, not claimed
	nextDue  time.Time // when the earliest later group is due, if any
	retryAt  time.Time // Redis did not answer: no step before then
	// timeAt is when the earliest delayed job or schedule tick falls due
	// (zero: none), by the queue's clock: a step is due then, slot or
	// not, to move it or tick it.
	timeAt time.Time
	ticks  []ticks // the schedules' ticks the next step enqueues

	redisFails, hostFaults int
	fatal                  error // why to stop, once the runs have
}

func newLoop(ctx context.Context, w *Worker, lease Lease) *loop {
	runs, stop := context.WithCancel(ctx)
	return &loop{
		w: w, ctx: ctx, lease: lease, token: lease.Token(), log: w.log.With("token", lease.Token()),
		runs: runs, stopRuns: stop,
		running:  map[string]bool{},
		results:  make(chan runResult, w.slots.Size()),
		mayClaim: true,
		recover:  true, // the first step releases what a lost leadership claimed
	}
}

// run is the loop proper: it returns why it stopped.
func (l *loop) run() error {
	for {
		l.collect()
		switch {
		case l.fatal != nil:
			return l.stop(l.fatal)
		case l.ended():
			return l.stop(nil)
		case !l.lease.Valid():
			l.log.Warn("lease no longer valid: taking no more jobs, recording none",
				"reason", invalidReason(l.lease), "running", len(l.running), "finished", len(l.pending))
			return l.stop(ErrLeaseInvalid)
		case l.stepDue():
			if err := l.step(); err != nil {
				return l.stop(err)
			}
		default:
			l.wait()
		}
	}
}

// ended says whether the leadership's context is done, or its deadline
// (which its owner sets at the lease's) has passed and it is about to be.
func (l *loop) ended() bool {
	if l.ctx.Err() != nil {
		return true
	}
	d, ok := l.ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// stepDue says whether to step now, taking the slots to claim with: to
// record finished runs, to release lost claims, or to claim when a group
// may be ready and a slot is free (else a wait for one starts).
func (l *loop) stepDue() bool {
	if time.Now().Before(l.retryAt) {
		return false
	}
	if l.mayClaim {
		want := max(1, l.readyNow)
		for l.slots < want && len(l.running)+l.slots < l.w.slots.Size() && l.w.slots.tryAcquire() {
			l.slots++
		}
		if l.slots == 0 && len(l.running) < l.w.slots.Size() {
			l.awaitSlot()
		}
	}
	return len(l.pending) > 0 || l.recover || l.slots > 0 && l.mayClaim || len(l.ticks) > 0 || l.timeDue()
}

// timeDue says whether a delayed job or a schedule's tick is due.
func (l *loop) timeDue() bool {
	return !l.timeAt.IsZero() && !l.w.q.cfg.Now().Before(l.timeAt)
}

// step sends one step: the finished runs, the claims to release, and a
// claim of one group per slot held. A stale token ends the loop;
// another error is retried later with backoff.
func (l *loop) step() error {
	sent := l.pending
	a := stepArgs{token: l.token, outcomes: make([]outcome, len(sent)), want: l.slots, runMax: l.w.cfg.Batch, recover: l.recover,
		ticks: l.ticks}
	for i, r := range sent {
		a.outcomes[i] = r.outcome
	}
	if a.recover {
		for m := range l.running {
			a.held = append(a.held, m)
		}
	}
	s, err := l.w.q.step(l.ctx, a)
	if errors.Is(err, ErrStaleToken) {
		return err
	}
	if err != nil {
		l.unreachable(err)
		return nil
	}
	if s.unacked == nil {
		l.redisFails = 0
	}
	l.recover = false
	l.pending = l.pending[len(sent):]
	l.recorded(sent, s.applied)
	if s.paused != l.paused && l.w.cfg.OnPause != nil {
		l.w.cfg.OnPause(s.paused)
	}
	l.paused = pausedNow(l.paused, s.paused, l.log)
	l.readyNow, l.nextDue, l.timeAt = s.readyNow, s.nextDue, s.nextTime
	l.mayClaim = s.readyNow > 0 && !s.paused
	l.tick(s.due)
	if s.unacked != nil {
		l.unacked(s.unacked, s.claimed)
	} else {
		for _, c := range s.claimed {
			l.start(c)
		}
	}
	l.w.slots.release(l.slots) // the ones no group filled
	l.slots = 0
	if !l.mayClaim {
		l.cancelWait()
	}
	return nil
}

// tick plans the ticks of the schedules a step found due, for the next
// step to enqueue (at once: they are due).
func (l *loop) tick(due []dueSchedule) {
	l.ticks = l.ticks[:0]
	now := l.w.q.cfg.Now()
	for _, d := range due {
		t, err := l.w.q.tick(d, now)
		if err != nil {
			l.log.Error("a schedule cannot be read: its ticks wait; remove it and add it again", "schedule", d.name, "err", err)
		}
		l.ticks = append(l.ticks, t)
	}
}

// unreachable notes a step that did not reach the queue: the next one
// waits a backoff, sends the finished runs again, and releases what this
// one may have claimed unseen (its reply may be what was lost).
func (l *loop) unreachable(err error) {
	if l.ctx.Err() != nil {
		return
	}
	l.redisFails++
	d := l.w.cfg.Backoff.Delay(l.redisFails)
	l.log.Warn("could not reach the queue, retrying", "err", err, "retryInMs", d.Milliseconds())
	l.retryAt = time.Now().Add(d)
	l.recover, l.resent = true, true
	l.w.slots.release(l.slots) // no hoarding while Redis is away
	l.slots = 0
}

// unacked takes a step whose claims the replicas did not acknowledge in
// time (REDIS_MIN_REPLICAS): a failover may still discard them, with the
// enqueues and idempotency keys of their jobs (written on a master that
// was already deposed, say), and a job run now could then be enqueued and
// run again by a client retrying its 503. So none runs: each is given back
// by the next step, which waits a backoff (as for a step whose answer
// was lost), keeps its group's place and takes back the delivery its claim
// counted. Should the leadership end first, its claims stay in flight and
// the next leader's first step releases them.
func (l *loop) unacked(err error, claimed []claim) {
	l.redisFails++
	d := l.w.cfg.Backoff.Delay(l.redisFails)
	l.log.Warn("the replicas did not acknowledge the claimed jobs in time: running none of them yet, retrying",
		"err", err, "runs", len(claimed), "retryInMs", d.Milliseconds())
	l.retryAt = time.Now().Add(d)
	for _, c := range claimed {
		l.pending = append(l.pending, givenBack(c))
	}
}

// recorded accounts for the runs a step carried, by what it applied.
func (l *loop) recorded(sent []runResult, applied []bool) {
	resent := l.resent
	l.resent = false
	for i, r := range sent {
		if applied[i] {
			l.w.done.Add(int64(r.committed))
			continue
		}
		// The group's claim is gone: a resent step whose first send did
		// record it, or writes a Redis failover lost (async
		// replication). The claim is the truth: the jobs run again.
		// Anything this leadership claimed unseen is released next.
		l.recover = true
		if !resent {
			l.log.Warn("a run's outcome was not recorded: its group's claim is gone (writes lost in a Redis failover?); its jobs run again",
				"key", r.key, "jobId", r.first, "jobs", r.popped)
		}
	}
}

// start begins the run of claim c in a goroutine of its own, which holds
// one of the loop's slots until it ends. A group whose run is still
// executing or unrecorded here cannot be claimed again but after lost
// writes: the claim is dropped (that run's outcome answers it) and
// released by the next step.
func (l *loop) start(c claim) {
	if l.running[c.member] || l.unrecorded(c.member) {
		l.recover = true
		return
	}
	l.slots--
	l.running[c.member] = true
	l.w.inFlight.Add(1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		r := l.w.execute(l.runs, l.lease, c, l.log)
		l.w.slots.release(1)
		l.results <- r
	}()
}

// unrecorded says whether a finished run of member waits to be recorded.
func (l *loop) unrecorded(member string) bool {
	for _, r := range l.pending {
		if r.member == member {
			return true
		}
	}
	return false
}

// collect takes what is ready without waiting: finished runs, a slot
// that came.
func (l *loop) collect() {
	for {
		select {
		case r := <-l.results:
			l.finished(r)
		case err := <-l.waiter:
			l.gotSlot(err)
		default:
			return
		}
	}
}

// wait blocks until something happens: a run finishes, a slot comes, an
// enqueue notice, a group falls due, Redis may answer again, the poll,
// or the end of ctx.
func (l *loop) wait() {
	at := time.Now().Add(backoff.Jitter(l.w.cfg.PollInterval*3/4, 1.0/3)) // the poll, in [P/2, P]
	for _, t := range []time.Time{l.retryAt, l.nextDue, l.timeAt} {
		if !t.IsZero() && t.Before(at) {
			at = t
		}
	}
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-l.ctx.Done():
	case r := <-l.results:
		l.finished(r)
	case err := <-l.waiter:
		l.gotSlot(err)
	case <-l.w.wake:
		l.mayClaim = true
	case <-timer.C:
		if !time.Now().Before(l.retryAt) {
			l.retryAt = time.Time{}
		}
		l.mayClaim, l.nextDue = true, time.Time{}
	}
}

// finished takes a run's result: its outcome waits for the next step.
func (l *loop) finished(r runResult) {
	delete(l.running, r.member)
	l.w.inFlight.Add(-1)
	l.mayClaim = true // its group may be ready again once recorded
	switch {
	case r.hostFault != nil:
		l.hostFault(&r)
	case r.popped > 0:
		l.hostFaults = 0
	}
	if r.stop != nil && l.fatal == nil {
		l.fatal = r.stop
	}
	l.pending = append(l.pending, r)
}

// hostFault counts a run whose head could not start for want of host
// resources: its group waits a backoff, and HostFaultLimit in a row end
// the loop.
func (l *loop) hostFault(r *runResult) {
	l.hostFaults++
	if l.hostFaults >= l.w.cfg.HostFaultLimit {
		l.log.Error("jobs cannot start: the host is out of resources; giving the leadership up",
			"hostFaults", l.hostFaults, "err", r.hostFault)
		r.stop = r.hostFault
		return
	}
	d := l.w.cfg.Backoff.Delay(l.hostFaults)
	r.due = time.Now().Add(d)
	l.log.Warn("a job could not start: the host is out of resources; it costs no attempt, retrying",
		"hostFaults", l.hostFaults, "limit", l.w.cfg.HostFaultLimit, "retryInMs", d.Milliseconds(), "err", r.hostFault)
}

// awaitSlot starts waiting for a slot in turn, unless a wait is under way.
func (l *loop) awaitSlot() {
	if l.waiter != nil {
		return
	}
	ctx, cancel := context.WithCancel(l.ctx)
	ch := make(chan error, 1)
	l.waiter, l.endWait = ch, cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ch <- l.w.slots.acquire(ctx)
	}()
}

// gotSlot takes the end of a wait for a slot.
func (l *loop) gotSlot(err error) {
	l.endWait()
	l.waiter, l.endWait = nil, nil
	if err == nil {
		l.slots++
	}
}

// cancelWait ends a wait for a slot, if one is under way, and gives back
// the slot if it came meanwhile.
func (l *loop) cancelWait() {
	if l.waiter == nil {
		return
	}
	l.endWait()
	l.gotSlot(<-l.waiter)
	l.w.slots.release(l.slots)
	l.slots = 0
}

// stop ends the runs and waits for them; while the lease is valid, the
// finished runs are then recorded once more, under the lease's deadline,
// so finished jobs are not redone by the next leader. It returns why the
// loop stopped (nil: ctx ended), or the stale token that refused the
// record.
func (l *loop) stop(why error) error {
	l.stopRuns()
	l.cancelWait()
	for len(l.running) > 0 {
		l.finished(<-l.results)
	}
	if err := l.flush(); err != nil {
		return err
	}
	return why
}

// flush records the finished runs after the loop stopped, under a
// context bounded by the lease deadline. It claims nothing.
func (l *loop) flush() error {
	if len(l.pending) == 0 || !l.lease.Valid() {
		return nil
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(l.ctx), l.lease.Deadline())
	defer cancel()
	a := stepArgs{token: l.token, runMax: l.w.cfg.Batch}
	for _, r := range l.pending {
		a.outcomes = append(a.outcomes, r.outcome)
	}
	s, err := l.w.q.step(ctx, a)
	if errors.Is(err, ErrStaleToken) {
		return err
	}
	if err != nil {
		l.log.Warn("could not record finished jobs while stopping; they will run again", "runs", len(l.pending), "err", err)
		return nil
	}
	l.recorded(l.pending, s.applied)
	l.pending = nil
	return nil
}

// end releases what the loop still holds once it returned: its slots,
// and the goroutines of its runs and its slot waiter.
func (l *loop) end() {
	l.stopRuns()
	l.cancelWait()
	l.w.slots.release(l.slots)
	l.slots = 0
	l.wg.Wait()
}

// pausedNow is whether the queue is paused after a step that said
// pausedFlag: a change is logged.
func pausedNow(paused, pausedFlag bool, log *slog.Logger) bool {
	switch {
	case pausedFlag && !paused:
		log.Info("queue paused: taking no new job")
	case !pausedFlag && paused:
		log.Info("queue resumed")
	}
	return pausedFlag
}
