package machine

import (
	"context"
	"time"
)

// event is something that happened off Run's goroutine, a timer firing or
// a Call returning, on its way to Run. gen names the state entry it
// belongs to; Run acts on it only while that entry is the current one.
type event struct {
	trigger Trigger
	gen     uint64
	// A Call's result: trigger fires when Apply returns nil, failed when
	// it returns an error. applied carries Run's verdict back to the
	// Call's goroutine: false means stale (discard it). Nil for a timer.
	result  Result
	failed  Trigger
	applied chan bool
}

// scope is what one state entry owns: the context its Call runs under, its
// timer, and the generation that tags their events. Every transition
// closes the old scope and opens the next with gen+1, so "still in state
// X" is never mistaken for "still in the same visit to X".
type scope struct {
	gen    uint64
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
}

func (m *Machine) openScope(gen uint64) *scope {
	ctx, cancel := context.WithCancel(m.base)
	return &scope{gen: gen, ctx: ctx, cancel: cancel}
}

// closeScope cancels the state's Call and stops its timer. A timer whose
// function already started is not waited for here: its event carries an
// old generation and Run drops it.
func (m *Machine) closeScope() {
	s := m.scope
	s.cancel()
	if s.timer != nil && s.timer.Stop() {
		m.wg.Done() // the timer's function will never run
	}
}

// invoke runs call in its own goroutine under the current scope and hands
// its result to Run, which applies it and fires ok or failed, or, when
// the scope is over by then, sends it back to be discarded. Calls are
// chained: each waits until the previous one returned and its result was
// applied or discarded, so a cancelled acquire that is slow to notice can
// never overlap the cleanup or release that follows it.
func (m *Machine) invoke(call Call, ok, failed Trigger) {
	s := m.scope
	prev, done := m.lastCall, make(chan struct{})
	m.lastCall = done
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		if s.ctx.Err() != nil {
			m.log.Debug("callback skipped: its state was left before it could start", "trigger", ok.String())
			return
		}
		res := call(s.ctx)
		if !m.deliver(event{trigger: ok, failed: failed, gen: s.gen, result: res, applied: make(chan bool, 1)}) {
			res.Discard(m.base)
		}
	}()
}

// deliver hands a Call's result to Run and reports whether Run applied
// it; after Run's loop is over, nothing applies it.
func (m *Machine) deliver(ev event) bool {
	select {
	case m.events <- ev:
		return <-ev.applied
	case <-m.exited:
		return false
	}
}

// arm starts the current state's timer. The WaitGroup counts the timer's
// function from arming, and closeScope gives the count back when Stop
// proves the function will never run.
func (m *Machine) arm(d time.Duration, t Trigger) {
	s := m.scope
	m.wg.Add(1)
	s.timer = time.AfterFunc(d, func() {
		defer m.wg.Done()
		select {
		case m.events <- event{trigger: t, gen: s.gen}:
		case <-s.ctx.Done():
			m.log.Debug("stale event dropped", "trigger", t.String(), "gen", s.gen)
		}
	})
}
