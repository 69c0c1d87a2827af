package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/redislock"
)

// replicaShortage keeps, from every lane's acquires, the Redis masters
// that have fewer online replicas than REDIS_MIN_REPLICAS asks: there no
// epoch bump can be acknowledged (WAIT), so no lease can be taken however
// often the acquire is retried (a Cluster created without replicas, whose
// default is REDIS_MIN_REPLICAS=1). It says so once per master at WARN,
// and on /readyz and /status while it lasts; a lane's entry clears when
// its acquire succeeds, finds the lock held (someone could lead), or
// fails its WAIT with enough replicas online. A shortage counts once it
// has lasted shortageGrace: a master just promoted by a failover has no
// replica until the old one has resynced, which is no misconfiguration.
type replicaShortage struct {
	log *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	lanes  map[int]shortage // lane -> the shortage its acquires meet
	warned map[string]bool  // masters said at WARN, until they clear
}

// shortageGrace is how long a master must stay short of replicas before
// it is said (a failover's resync takes seconds; a Cluster created
// without replicas stays short for ever).
const shortageGrace = 5 * time.Second

type shortage struct {
	err   *redislock.ReplicasError // the latest
	since time.Time                // the first of the run
}

func newReplicaShortage(log *slog.Logger) *replicaShortage {
	return &replicaShortage{log: log, now: time.Now, lanes: map[int]shortage{}, warned: map[string]bool{}}
}

// note is lane's acquire result. Other errors (Redis does not answer, the
// eviction guard) leave what is known.
func (s *replicaShortage) note(lane int, err error) {
	var re *redislock.ReplicasError
	var held *redislock.HeldError
	if err != nil && !errors.As(err, &re) && !errors.As(err, &held) {
		return
	}
	s.mu.Lock()
	if short := shortOf(err); short != nil {
		was, ok := s.lanes[lane]
		if !ok {
			was.since = s.now()
		}
		s.lanes[lane] = shortage{err: short, since: was.since}
	} else {
		delete(s.lanes, lane)
	}
	now := s.masters()
	var warn []*redislock.ReplicasError
	var cleared []string
	for m, e := range now {
		if !s.warned[m] {
			s.warned[m] = true
			warn = append(warn, e)
		}
	}
	for m := range s.warned {
		if _, ok := now[m]; !ok {
			delete(s.warned, m)
			cleared = append(cleared, m)
		}
	}
	s.mu.Unlock()
	for _, e := range warn {
		s.log.Warn(shortageMsg(e), "master", e.Master, "onlineReplicas", e.Online, "minReplicas", e.Min)
	}
	for _, m := range cleared {
		s.log.Info("a Redis master that lacked replicas takes acknowledged epoch bumps again: this replica may lead",
			"master", m)
	}
}

// shortOf is err's ReplicasError when err is an acquire refused for a
// master short of replicas; nil otherwise.
func shortOf(err error) *redislock.ReplicasError {
	var re *redislock.ReplicasError
	if errors.As(err, &re) && re.Short() {
		return re
	}
	return nil
}

// said: err is an acquire refused for a master short of replicas. Its
// retries are routine (transitions at DEBUG) from the first: the lane
// says "too few replicas" once at INFO as its reason, and the shortage
// gets its one WARN once it has lasted shortageGrace, so the grace itself
// logs no line per attempt.
func (s *replicaShortage) said(err error) bool { return shortOf(err) != nil }

// masters is the masters short of replicas for shortageGrace at least,
// by address, each with its latest shortage; s.mu must be held.
func (s *replicaShortage) masters() map[string]*redislock.ReplicasError {
	out := map[string]*redislock.ReplicasError{}
	now := s.now()
	for _, e := range s.lanes {
		if now.Sub(e.since) >= shortageGrace {
			out[e.err.Master] = e.err
		}
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

// err is why no lease can be taken, for /readyz; nil when no master is
// short.
func (s *replicaShortage) err() error { return shortageErr(s.list()) }

// shortageErr is why no lease can be taken on the short masters; nil
// when there are none.
func shortageErr(short []*redislock.ReplicasError) error {
	var errs []error
	for _, e := range short {
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
