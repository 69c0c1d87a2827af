package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/lockworker/lockworker/internal/redislock"
)

// replicaShortage keeps, from every lane's acquires, the Redis masters
// that have fewer online replicas than REDIS_MIN_REPLICAS asks: there no
// epoch bump can be acknowledged (WAIT), so no lease can be taken however
// often the acquire is retried (a Cluster created without replicas, whose
// default is REDIS_MIN_REPLICAS=1). It says so once per master at WARN,
// and on /readyz and /status while it lasts; a lane's entry clears when
// its acquire succeeds, finds the lock held (someone could lead), or
// fails its WAIT with enough replicas online.
type replicaShortage struct {
	log *slog.Logger

	mu    sync.Mutex
	lanes map[int]*redislock.ReplicasError // lane -> the shortage its last acquire met
}

func newReplicaShortage(log *slog.Logger) *replicaShortage {
	return &replicaShortage{log: log, lanes: map[int]*redislock.ReplicasError{}}
}

// note is lane's acquire result. Other errors (Redis does not answer, the
// eviction guard) leave what is known.
func (s *replicaShortage) note(lane int, err error) {
	var re *redislock.ReplicasError
	var held *redislock.HeldError
	isRe := errors.As(err, &re)
	if err != nil && !isRe && !errors.As(err, &held) {
		return
	}
	s.mu.Lock()
	before := s.masters()
	if shortOfReplicas(err) {
		s.lanes[lane] = re
	} else {
		delete(s.lanes, lane)
	}
	after := s.masters()
	s.mu.Unlock()
	for m, e := range after {
		if _, ok := before[m]; !ok {
			s.log.Warn(shortageMsg(e), "master", e.Master, "onlineReplicas", e.Online, "minReplicas", e.Min)
		}
	}
	for m, e := range before {
		if _, ok := after[m]; !ok {
			s.log.Info("a Redis master that lacked replicas takes acknowledged epoch bumps again: this replica may lead",
				"master", m, "minReplicas", e.Min)
		}
	}
}

// shortOfReplicas: err is an acquire refused for a master short of
// replicas, which replicaShortage has said at WARN; its retries are then
// routine, like a follower's (their transitions at DEBUG).
func shortOfReplicas(err error) bool {
	var re *redislock.ReplicasError
	return errors.As(err, &re) && re.Short()
}

// masters is the short masters by address, each with its latest
// shortage; s.mu must be held.
func (s *replicaShortage) masters() map[string]*redislock.ReplicasError {
	out := map[string]*redislock.ReplicasError{}
	for _, e := range s.lanes {
		out[e.Master] = e
	}
	return out
}

// list is the short masters, sorted by address; empty when none.
func (s *replicaShortage) list() []*redislock.ReplicasError {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*redislock.ReplicasError
	for _, e := range s.masters() {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *redislock.ReplicasError) int { return cmp.Compare(a.Master, b.Master) })
	return out
}

// err is why no lease can be taken, for /readyz and /status; nil when no
// master is short.
func (s *replicaShortage) err() error {
	var errs []error
	for _, e := range s.list() {
		errs = append(errs, errors.New(shortageMsg(e)))
	}
	return errors.Join(errs...)
}

// shortageMsg names the master, what it has and what is asked, and the
// two ways out.
func shortageMsg(e *redislock.ReplicasError) string {
	return fmt.Sprintf("Redis master %s has %d online replica(s) and REDIS_MIN_REPLICAS=%d asks for %d: "+
		"no fencing epoch can be acknowledged there, so no lease can be taken; add replicas to it "+
		"(redis-cli --cluster add-node --cluster-slave on a Cluster), or set REDIS_MIN_REPLICAS=0 and accept "+
		"that a failover may then lose the epoch (a token handed out twice) and acknowledged jobs",
		e.Master, e.Online, e.Min, e.Min)
}
