package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/dashboard"
	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/operator"
	"github.com/lockworker/lockworker/internal/roster"
)

// What the page shows at most; how often it is refreshed without a change
// notice (a page open on an idle fleet costs one read per period), and at
// most, however many notices come.
const (
	historyShown     = 20
	deadLettersShown = 10
	parkedShown      = 20
	pageRefresh      = 5 * time.Second
	pageMinInterval  = 100 * time.Millisecond
	rateWindow       = time.Minute
)

// pageSource is the dashboard's Source: the registry, the history, the
// queue and this replica's machine, read from Redis once per push for all
// viewers (the dashboard's Run decides when).
type pageSource struct {
	d    *Daemon
	rate *commitRate
}

var _ dashboard.Source = pageSource{}

func (p pageSource) Changes() <-chan struct{} { return p.d.changes }

// Snapshot reads everything the page shows: the queue (one transaction;
// with partitions, one pipeline over them all), the registry (two round
// trips), the schedules (one pipeline), the history, the dead letters
// and, when some are, the parked keys.
func (p pageSource) Snapshot(ctx context.Context) (dashboard.Snapshot, error) {
	d := p.d
	q, parts, err := p.queues(ctx)
	if err != nil {
		return dashboard.Snapshot{}, err
	}
	records, err := d.roster.List(ctx)
	if err != nil {
		return dashboard.Snapshot{}, err
	}
	entries, err := d.history.List(ctx, historyShown)
	if err != nil {
		return dashboard.Snapshot{}, err
	}
	schedules, err := d.be.Queues.Schedules(ctx)
	if err != nil {
		return dashboard.Snapshot{}, err
	}
	var dead []jobs.DeadLetter
	if q.DeadLettered > 0 {
		if dead, err = d.be.Queues.DeadLetters(ctx, deadLettersShown); err != nil {
			return dashboard.Snapshot{}, err
		}
	}
	var parked []jobs.ParkedKey
	if q.Parked > 0 {
		if parked, err = d.be.Queues.Parked(ctx); err != nil {
			return dashboard.Snapshot{}, err
		}
	}
	return dashboard.Snapshot{
		Self:     d.self(),
		Epoch:    q.Epoch,
		Replicas: records,
		Queue: dashboard.Queue{Queue: q, RatePerSec: p.rate.observe(time.Now(), q.Committed), DeadLetters: deadLettersOf(dead),
			Parked: parkedOf(parked)},
		History:    historyOf(entries),
		Partitions: partitionsOf(parts, records),
		Schedules:  schedules,
	}, nil
}

// self is this replica as the page shows it: the chart of its first
// lane (the lock's, with one partition), and every lane's state and why
// it does not lead.
func (d *Daemon) self() dashboard.Self {
	snaps := d.snapshots()
	self := dashboard.Self{WorkerID: d.cfg.WorkerID, State: snaps[0].State.String()}
	for _, t := range snaps[0].Recent {
		self.Transitions = append(self.Transitions, dashboard.Transition{From: t.From.String(), To: t.To.String(),
			Trigger: t.Trigger.String(), At: t.At})
	}
	for _, s := range snaps {
		self.Lanes = append(self.Lanes, dashboard.Lane{Partition: s.Partition, State: s.State.String(), Token: s.Token,
			Reason: d.laneReason(s.Reason)})
	}
	return self
}

// queues reads the fleet's queue figures and, with several partitions,
// each partition's (their sum is the fleet's).
func (p pageSource) queues(ctx context.Context) (figures.Queue, []figures.Queue, error) {
	if _, one := p.d.lock(); one {
		q, err := p.d.be.Queues.Stats(ctx)
		return q, nil, err
	}
	parts, err := p.d.be.Queues.PartitionStats(ctx)
	if err != nil {
		return figures.Queue{}, nil, err
	}
	return figures.Sum(parts), parts, nil
}

// partitionsOf is the page's partitions table: each partition's queue
// figures, and its owner and token as the records say (the registry is
// read for the page anyway; the leases would cost a read per partition).
func partitionsOf(parts []figures.Queue, records []roster.Record) []figures.Partition {
	if parts == nil {
		return nil
	}
	out := make([]figures.Partition, len(parts))
	for i, q := range parts {
		out[i] = figures.Partition{Partition: i, Queue: q}
	}
	for _, r := range records {
		for _, o := range r.Partitions {
			if o.Partition >= 0 && o.Partition < len(out) && o.Token > out[o.Partition].Token {
				out[o.Partition].Owner, out[o.Partition].Token = r.WorkerID, o.Token
			}
		}
	}
	return out
}

func deadLettersOf(dead []jobs.DeadLetter) []dashboard.DeadLetter {
	out := make([]dashboard.DeadLetter, 0, len(dead))
	for _, dl := range dead {
		out = append(out, dashboard.DeadLetter{ID: dl.ID, Class: jobs.ErrorClass(dl.Error), Error: dl.Error, Attempts: dl.Attempts,
			FailedAt: dl.FailedAt, Token: dl.Token})
	}
	return out
}

// parkedOf is the page's parked keys: the longest parked, at most
// parkedShown.
func parkedOf(parked []jobs.ParkedKey) []dashboard.ParkedKey {
	out := make([]dashboard.ParkedKey, 0, min(len(parked), parkedShown))
	for _, k := range parked[:min(len(parked), parkedShown)] {
		out = append(out, dashboard.ParkedKey{Key: k.Key, Partition: k.Partition, Held: k.Held, JobID: k.JobID, Attempts: k.Attempts,
			Class: jobs.ErrorClass(k.Error), Error: k.Error, ParkedAt: k.ParkedAt})
	}
	return out
}

func historyOf(entries []history.Entry) []dashboard.Leadership {
	out := make([]dashboard.Leadership, 0, len(entries))
	for _, e := range entries {
		out = append(out, dashboard.Leadership{Token: e.Token, WorkerID: e.WorkerID, Started: e.Started,
			PreviousEnded: dashboard.EndReason(e.PreviousEnded)})
	}
	return out
}

// commitRate turns the committed counter, as the page reads it, into
// jobs per second over the last rateWindow.
type commitRate struct {
	mu      sync.Mutex
	samples []rateSample
}

type rateSample struct {
	at        time.Time
	committed int64
}

func (r *commitRate) observe(at time.Time, committed int64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, rateSample{at, committed})
	for len(r.samples) > 2 && at.Sub(r.samples[1].at) >= rateWindow {
		r.samples = r.samples[1:]
	}
	first := r.samples[0]
	dt := at.Sub(first.at).Seconds()
	if dt <= 0 || committed < first.committed {
		return 0
	}
	return float64(committed-first.committed) / dt
}

// pageActions carries out the page's buttons through package operator,
// as the CLI does.
type pageActions struct{ op *operator.Operator }

var _ dashboard.Actions = pageActions{}

func (a pageActions) StepDown(ctx context.Context, p int, token int64) error {
	_, err := a.op.StepDown(ctx, p, token)
	switch {
	case errors.Is(err, operator.ErrNoLeader):
		return fmt.Errorf("%w: %w", dashboard.ErrNoLeader, err)
	case errors.Is(err, operator.ErrEnded):
		return fmt.Errorf("%w: %w", dashboard.ErrEnded, err)
	}
	return err
}

func (a pageActions) Pause(ctx context.Context) error {
	return a.op.Pause(ctx, operator.AllPartitions)
}
func (a pageActions) Resume(ctx context.Context) error {
	return a.op.Resume(ctx, operator.AllPartitions)
}

func (a pageActions) RetryKey(ctx context.Context, key, jobID string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	id, err := a.op.Retry(ctx, jobs.Ref{Key: key, JobID: jobID})
	return id, notParked(err)
}

func (a pageActions) SkipKey(ctx context.Context, key, jobID, by, reason string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	id, err := a.op.Skip(ctx, jobs.Ref{Key: key, JobID: jobID}, by, reason)
	return id, notParked(err)
}

// checkKey refuses a key no job can have (jobs.CheckKey), as a bad
// request: "" names no key (the job ID does).
func checkKey(key string) error {
	if key == "" {
		return nil
	}
	if err := jobs.CheckKey(key); err != nil {
		return fmt.Errorf("%w: %w", dashboard.ErrInvalid, err)
	}
	return nil
}

// notParked is err with dashboard.ErrNotFound added when it says the key
// is not parked.
func notParked(err error) error {
	if errors.Is(err, jobs.ErrNotParked) {
		return fmt.Errorf("%w: %w", dashboard.ErrNotFound, err)
	}
	return err
}

func (a pageActions) Requeue(ctx context.Context, id string) (string, error) {
	newID, err := a.op.Requeue(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", dashboard.ErrNotFound, err)
	}
	return newID, err
}

// newDashboard builds the page over this replica; its actions exist only
// with ADMIN_TOKEN.
func (d *Daemon) newDashboard() error {
	var err error
	d.dash, err = dashboard.New(dashboard.Config{
		Source:          pageSource{d: d, rate: &commitRate{}},
		Actions:         pageActions{op: d.operator},
		AdminToken:      d.cfg.AdminToken,
		Partitions:      d.be.Partitions,
		Secrets:         d.cfg.Secrets(),
		RefreshInterval: pageRefresh,
		MinInterval:     pageMinInterval,
		Logger:          d.log,
	})
	return err
}
