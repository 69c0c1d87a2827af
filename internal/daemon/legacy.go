package daemon

import (
	"context"
	"errors"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/redislock"
)

// migratingLock is the lock as the leader sees it: each Acquire moves the
// keys of an older lockworker first (once, see backend.Migrate), so no
// leadership starts on names an older replica may still lead under. Until
// they moved, the attempt fails, and the leader counts and backs off that
// failure like any other acquire error.
type migratingLock struct {
	*redislock.Locker
	migrate func(context.Context) error
}

var _ leader.Lock = migratingLock{}

func (l migratingLock) Acquire(ctx context.Context, workerID string) (*redislock.Lease, error) {
	if err := l.migrate(ctx); err != nil {
		return nil, err
	}
	return l.Locker.Acquire(ctx, workerID)
}

// enqueue is POST /jobs: like acquire, it waits for the keys to move, so
// no job lands in a queue an older leader does not read.
func (d *Daemon) enqueue(ctx context.Context, payload []byte) (string, error) {
	if err := d.migrate(ctx); err != nil {
		return "", err
	}
	return d.be.Queue.Enqueue(ctx, payload)
}

// enqueueMany is POST /jobs with an NDJSON body; it waits like enqueue.
func (d *Daemon) enqueueMany(ctx context.Context, payloads [][]byte) ([]string, error) {
	if err := d.migrate(ctx); err != nil {
		return nil, err
	}
	return d.be.Queue.EnqueueMany(ctx, payloads)
}

func (d *Daemon) migrate(ctx context.Context) error {
	m, err := d.be.Migrate(ctx)
	d.waitingForOlder.Store(errors.Is(err, backend.ErrLegacyLeader))
	if m.Moved {
		d.log.Info("moved the keys of an older lockworker to the hash-tagged names",
			"lockKey", d.be.LockKey, "epoch", m.Epoch, "deadLetters", m.DeadLetters)
	}
	return err
}
