package daemon

import (
	"context"
	"time"

	"github.com/lockworker/lockworker/internal/backend"
)

// waitingForFleet says why a replica waits at start-up before it records
// its partition count (backend.CheckPartitions).
func (d *Daemon) waitingForFleet(bound time.Duration) {
	d.log.Info("no partition count is recorded in Redis, but replicas of this LOCK_KEY listen: "+
		"waiting for their registry records (Redis flushed under a running fleet?) before recording this one",
		"partitions", d.be.Partitions, "waitMs", bound.Milliseconds())
}

// defendPartitions records the fleet's partition count again when it
// has vanished from Redis (FLUSHALL, a Redis restarted empty), every
// registry interval once the count was checked at start-up, so a replica
// started afterwards with another count is refused. A count that differs
// from this replica's is logged at ERROR, once per value: this replica
// goes on (it cannot tell which count is the mistake).
func (d *Daemon) defendPartitions(ctx context.Context) error {
	select {
	case <-d.checked:
	case <-ctx.Done():
		return nil
	}
	t := time.NewTicker(backend.RegistryInterval(d.cfg))
	defer t.Stop()
	reported := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
		recorded, now, err := d.be.RecordPartitions(rctx)
		cancel()
		switch {
		case err != nil:
			d.log.Debug("could not check the recorded partition count; trying again", "err", err)
		case now:
			reported = 0
			d.log.Warn("the partition count had vanished from Redis (flushed, or restarted empty?): recorded it again",
				"partitions", d.be.Partitions)
		case recorded != d.be.Partitions && recorded != reported:
			reported = recorded
			d.log.Error("Redis records another partition count than this replica runs with: a replica started with it "+
				"while the count was missing; stop the replicas that run with the wrong one (docs/partitions.md)",
				"recorded", recorded, "partitions", d.be.Partitions)
		case recorded == d.be.Partitions:
			reported = 0
		}
	}
}
