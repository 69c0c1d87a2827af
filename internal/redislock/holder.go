package redislock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Holder is who holds the lock, as the nodes see it, without the lock value.
type Holder struct {
	// WorkerID is the holder's worker ID ("" when not held, or when the key
	// was set by something other than this package).
	WorkerID string
	// TTL is how long the holder keeps a quorum if it does not renew.
	TTL time.Duration
	// Token is the holder's fencing token, as recorded in its lock value
	// (display only: the highest over the holder's nodes).
	Token int64
	// Epoch is the current fencing epoch on the epoch authority.
	Epoch int64
	// Held is true when a quorum of nodes hold the key for one worker.
	Held bool
}

type nodeHolder struct {
	pttl   int64
	worker string
	token  int64
}

// Holder reads who holds the lock from every node (in parallel) and the
// epoch from the epoch authority. An error is returned when the epoch could
// not be read, or when no holder has a quorum and some nodes failed (so the
// answer may be wrong); the fields read so far are filled in either way.
func (l *Locker) Holder(ctx context.Context) (Holder, error) {
	res := fanOut(ctx, l, nil, func(ctx context.Context, _ int, n redis.Scripter) (nodeHolder, error) {
		v, err := holderScript.Run(ctx, n, l.lockKeys).Slice()
		if err != nil {
			return nodeHolder{}, err
		}
		if len(v) != 3 {
			return nodeHolder{}, fmt.Errorf("unexpected holder reply of %d values", len(v))
		}
		pttl, _ := v[0].(int64)
		worker, _ := v[1].(string)
		token, _ := v[2].(int64)
		return nodeHolder{pttl: pttl, worker: worker, token: token}, nil
	})
	var h Holder
	var errs []error
	byWorker := map[string][]nodeHolder{}
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, l.nodeErr(i, r.err))
			continue
		}
		if r.v.pttl == -2 {
			continue // no key on this node
		}
		byWorker[r.v.worker] = append(byWorker[r.v.worker], r.v)
	}
	for worker, nodes := range byWorker {
		if len(nodes) < l.quorum {
			continue
		}
		// The holder keeps a quorum until its q-th longest key expires.
		ttls := make([]int64, len(nodes))
		for i, n := range nodes {
			ttls[i] = n.pttl
			if n.pttl == -1 {
				ttls[i] = 1<<63 - 1
			}
			h.Token = max(h.Token, n.token) // display only; safety never takes a max over nodes
		}
		slices.Sort(ttls)
		slices.Reverse(ttls)
		if t := ttls[l.quorum-1]; t != 1<<63-1 {
			h.TTL = time.Duration(t) * time.Millisecond
		}
		h.WorkerID, h.Held = worker, true
	}
	ectx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	epoch, err := readEpochScript.Run(ectx, l.epoch, []string{l.keys.Epoch()}).Int64()
	if err != nil {
		return h, fmt.Errorf("redislock: holder: read epoch: %w", &NodeError{Node: "epoch authority", Err: err})
	}
	h.Epoch = epoch
	if !h.Held && len(errs) > 0 {
		return h, fmt.Errorf("redislock: holder: %w", errors.Join(errs...))
	}
	return h, nil
}
