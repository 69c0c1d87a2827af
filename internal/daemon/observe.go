package daemon

import (
	"context"
	"time"

	"github.com/lockworker/lockworker/internal/roster"
)

// observeTokens tells each lane, every interval, of the tokens the latest
// history entries name (the registry's come with every read the
// coordinator makes: members), so a replica that never saw another's
// lock value still raises the epoch past them if Redis loses it
// (Acquire's floor). It returns nil when ctx is done.
func (d *Daemon) observeTokens(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		d.observeHistory(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (d *Daemon) observeHistory(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
	defer cancel()
	if entries, err := d.history.List(ctx, int64(2*len(d.lanes))); err == nil {
		for _, e := range entries {
			d.observe(e.Partition, max(e.Token, e.PreviousToken))
		}
	}
}

// observeRecords tells the lanes of the tokens registry records name: the
// partitions' and, from a replica of one lock, the lock's (partition 0).
func (d *Daemon) observeRecords(records []roster.Record) {
	for _, r := range records {
		d.observe(0, r.Token)
		for _, o := range r.Partitions {
			d.observe(o.Partition, o.Token)
		}
	}
}

// observe tells partition p's lane of token.
func (d *Daemon) observe(p int, token int64) {
	if p >= 0 && p < len(d.lanes) && token > 0 {
		d.lanes[p].leader.Observe(token)
	}
}
