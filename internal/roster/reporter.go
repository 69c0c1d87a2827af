package roster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
)

// Store is where a Reporter writes its record: a *Roster, or a fake in
// tests that run the Reporter under testing/synctest.
type Store interface {
	Put(ctx context.Context, rec Record, prune, announce bool) error
	Remove(ctx context.Context, workerID string) error
	TTL() time.Duration
}

// ReporterConfig configures a Reporter.
type ReporterConfig struct {
	// Roster is where the record goes. Required.
	Roster Store
	// Read returns this replica's record as it is now. Required; called
	// from Run's goroutine only.
	Read func() Record
	// Interval is the refresh period; at most half the Roster's TTL so a
	// live record never expires between two refreshes. Required.
	Interval time.Duration
	// Settle is how long a change waits before it is written, so a burst
	// of transitions (a renewal's working -> renew_lock -> working) is
	// one write, or none when it ends where it began. Default 50ms.
	Settle time.Duration
	// RemoveTimeout bounds the removal of the record on the way out.
	// Default 500ms.
	RemoveTimeout time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Reporter keeps one replica's record fresh: on a timer, and soon after a
// change it is told of (Poke).
type Reporter struct {
	cfg   ReporterConfig
	log   *slog.Logger
	poke  chan struct{}
	leave chan chan struct{}
}

// NewReporter validates cfg and returns a Reporter.
func NewReporter(cfg ReporterConfig) (*Reporter, error) {
	var errs []error
	if cfg.Roster == nil {
		errs = append(errs, errors.New("roster: Reporter needs a Roster"))
	}
	if cfg.Read == nil {
		errs = append(errs, errors.New("roster: Reporter needs Read"))
	}
	if cfg.Interval <= 0 || (cfg.Roster != nil && 2*cfg.Interval > cfg.Roster.TTL()) {
		errs = append(errs, errors.New("roster: Reporter Interval must be positive and at most half the TTL"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 50 * time.Millisecond
	}
	if cfg.RemoveTimeout <= 0 {
		cfg.RemoveTimeout = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Reporter{cfg: cfg, log: cfg.Logger, poke: make(chan struct{}, 1),
		leave: make(chan chan struct{})}, nil
}

// Poke says the record may have changed. Never blocks; pokes coalesce.
func (p *Reporter) Poke() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// Leave removes the record and announces it, and Run writes it no more:
// a replica on its way out says so before it lets its partitions go, so
// the others contend for them at once. It returns once the removal was
// tried, or when ctx is done (Run must be running: it is Run that removes).
func (p *Reporter) Leave(ctx context.Context) {
	done := make(chan struct{})
	select {
	case p.leave <- done:
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Run writes the record at once, then on every tick, and after
// each poke whose change survived the settle, until ctx is done or Leave;
// then it removes the record. It returns nil.
func (p *Reporter) Run(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	var last Record
	var failing bool
	write := func(announce bool) {
		rec := p.cfg.Read()
		announce = announce || rec.changed(last)
		err := p.cfg.Roster.Put(ctx, rec, rec.Leader, announce)
		switch {
		case err == nil:
			last, failing = rec, false
			tick.Reset(p.cfg.Interval)
		case ctx.Err() != nil:
		case !failing:
			failing = true
			p.log.Warn("could not write this replica's registry record; retrying each refresh", "err", err)
		default:
			p.log.Debug("registry record still not written", "err", err)
		}
	}
	write(true)
	for {
		select {
		case <-ctx.Done():
			p.remove(ctx, last.WorkerID)
			return nil
		case <-tick.C:
			write(false)
		case done := <-p.leave:
			p.remove(ctx, last.WorkerID)
			close(done)
			<-ctx.Done()
			return nil
		case <-p.poke:
			if !backoff.Sleep(ctx, p.cfg.Settle) {
				continue
			}
			if rec := p.cfg.Read(); rec.changed(last) || failing {
				write(true)
			}
		}
	}
}

func (p *Reporter) remove(ctx context.Context, workerID string) {
	if workerID == "" {
		workerID = p.cfg.Read().WorkerID
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.RemoveTimeout)
	defer cancel()
	if err := p.cfg.Roster.Remove(rctx, workerID); err != nil {
		p.log.Debug("could not remove this replica's registry record; it expires by itself", "err", err)
	}
}
