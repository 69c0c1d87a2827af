package redislock

import (
	"strconv"
	"sync"
	"time"
)

// Lease is one leadership: a lock value held on a quorum of nodes until a
// local deadline, with the fencing token it was granted. Token, Deadline and
// Valid are safe to call concurrently with Renew and Release.
type Lease struct {
	value    string // the random lock value; never logged or returned in errors
	workerID string
	token    int64
	seen     int64 // the epoch found before token was minted; -1: unknown
	now      func() time.Time

	mu       sync.Mutex
	deadline time.Time
}

// Token is the fencing token: strictly greater than every token handed out
// before for this lock by the same epoch authority.
func (l *Lease) Token() int64 { return l.token }

// EpochSeen is the fencing epoch the authority had when this lease's
// token was minted, before any raise to the caller's floor: below the
// floor, Redis lost the epoch (a flush, an eviction, a restart without
// persistence). -1 when unknown (a re-sent acquire, a reissue).
func (l *Lease) EpochSeen() int64 { return l.seen }

// Deadline is the local monotonic deadline: start of the last successful
// acquire or renew attempt + TTL - drift. The lease must not be assumed
// beyond it, whatever Redis says.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Valid reports whether the deadline is still ahead.
func (l *Lease) Valid() bool { return l.now().Before(l.Deadline()) }

func (l *Lease) setDeadline(d time.Time) {
	l.mu.Lock()
	l.deadline = d
	l.mu.Unlock()
}

// extend moves the deadline to d unless the lease was ended meanwhile.
func (l *Lease) extend(d time.Time) {
	l.mu.Lock()
	if !l.deadline.IsZero() {
		l.deadline = d
	}
	l.mu.Unlock()
}

// String names the lease without its value.
func (l *Lease) String() string {
	return "lease{worker=" + l.workerID + " token=" + strconv.FormatInt(l.token, 10) + "}"
}

// NewLease returns a lease that no lock holds, for a stand-in of a Locker
// (a fake lock in the tests of a package that takes one): its value is
// empty, which matches no key (the scripts compare a prefix ending in
// ':'), so a real Locker never renews nor releases it. Its deadline does
// not move.
func NewLease(workerID string, token int64, deadline time.Time) *Lease {
	return &Lease{workerID: workerID, token: token, seen: -1, now: time.Now, deadline: deadline}
}
