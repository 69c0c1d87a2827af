package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockworker/lockworker/internal/config"
)

// claimWorkerID takes this replica's name in the fleet registry before
// anything writes under it (see report): two replicas with one WORKER_ID
// would run as one name, each overwriting the other's record. A live
// record of the name held by another process is a *config.Error (exit 2)
// naming its host and pid. One this host's earlier run left (same host
// name, its pid gone, or this process's own pid: a restart in a
// container is PID 1 again) is taken over at once; any other frees the
// name when it expires, one registry TTL after its last refresh.
func (d *Daemon) claimWorkerID(ctx context.Context) error {
	rec := d.record()
	other, claimed, err := d.roster.Claim(ctx, rec)
	if err != nil || claimed {
		return err
	}
	if d.host != "" && other.Host == d.host && (other.PID == os.Getpid() || processGone(other.PID)) {
		d.log.Info("taking over this replica's name from an earlier run on this host", "pid", other.PID)
		return d.roster.Put(ctx, rec, false, true)
	}
	age := "at an unknown time"
	if !other.UpdatedAt.IsZero() {
		age = time.Since(other.UpdatedAt).Round(time.Millisecond).String() + " ago"
	}
	return &config.Error{Var: "WORKER_ID", Msg: fmt.Sprintf(
		"%q is the name of a live replica (host %q, pid %d, its registry record refreshed %s): give each replica "+
			"its own WORKER_ID; a replica that died keeps its name until its record expires, %s after its last refresh",
		d.cfg.WorkerID, other.Host, other.PID, age, d.roster.TTL())}
}

// report runs the reporter once this replica's name is claimed and the
// partition count checked (d.checked), so it never writes over another
// replica's record.
func (d *Daemon) report(ctx context.Context) error {
	select {
	case <-d.checked:
	case <-ctx.Done():
		return nil
	}
	return d.reporter.Run(ctx)
}
