package machine

import (
	"context"
	"time"
)

// event is something that happened off Run's goroutine, a timer firing or a
// callback returning, on its way to Run. gen names the state entry it
// belongs to; Run drops it unless that entry is still the current one.
type event struct {
	trigger Trigger
	gen     uint64
	err     error // the callback's error, for the transition log
}

// scope is what one state entry owns: the context its callback runs
// under, its timer, and the generation that tags their events. Every
// transition closes the old scope and opens the next with gen+1, so "still
// in state X" is never mistaken for "still in the same visit to X".
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

// closeScope cancels the state's callback and stops its timer. A timer
// whose function already started is not waited for here: its event carries
// an old generation and Run drops it.
func (m *Machine) closeScope() {
	s := m.scope
	s.cancel()
	if s.timer != nil && s.timer.Stop() {
		m.wg.Done() // the timer's function will never run
	}
}

// invoke runs fn in its own goroutine under the current scope and posts ok
// or failed. Calls are chained: each waits for the previous one to return,
// so a cancelled Acquire or StopWork that is slow to notice can never
// overlap the cleanup or Release that follows it.
func (m *Machine) invoke(fn func(context.Context) error, ok, failed Trigger) {
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
		ev := event{trigger: ok, gen: s.gen}
		if err := fn(s.ctx); err != nil {
			ev.trigger, ev.err = failed, err
		}
		m.post(s, ev)
	}()
}

// arm starts the current state's timer. The WaitGroup counts the timer's
// function from arming, and closeScope gives the count back when Stop
// proves the function will never run.
func (m *Machine) arm(d time.Duration, t Trigger) {
	s := m.scope
	m.wg.Add(1)
	s.timer = time.AfterFunc(d, func() {
		defer m.wg.Done()
		m.post(s, event{trigger: t, gen: s.gen})
	})
}

// post hands ev to Run, or drops it once its scope is closed, so no sender
// blocks after Run stopped reading.
func (m *Machine) post(s *scope, ev event) {
	select {
	case m.events <- ev:
	case <-s.ctx.Done():
		m.log.Debug("stale event dropped", "trigger", ev.trigger.String(), "gen", ev.gen)
	}
}
