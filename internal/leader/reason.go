package leader

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/redislock"
)

// ReasonKind is why a lane does not lead, in one word.
type ReasonKind int

// Why a lane does not lead.
const (
	Leading       ReasonKind = iota // it leads: no reason
	Unplanned                       // not told yet whether to contend
	NotShare                        // not this replica's share: another replica should lead it
	Stopping                        // the replica stops
	Acquiring                       // its first attempt is under way
	HeldElsewhere                   // another replica holds the lock
	Refused                         // a guard refused (Redis evicts keys, the partition count is not checked yet)
	FewReplicas                     // a Redis master has fewer online replicas than REDIS_MIN_REPLICAS
	NoAnswer                        // the attempt failed: Redis did not answer, or answered with an error
	SteppedDown                     // it stepped down on request and holds off
	WorkEnded                       // its work ended by itself; it waits before trying again
	LeaseLost                       // its renew failed; the lease is or may be gone
	Paused                          // it holds the lease, but an operator paused its queue: it takes no new job
)

var reasonKinds = [...]string{
	Leading: "leading", Unplanned: "unplanned", NotShare: "not_share", Stopping: "stopping",
	Acquiring: "acquiring", HeldElsewhere: "held", Refused: "refused", FewReplicas: "few_replicas",
	NoAnswer: "no_answer", SteppedDown: "stepped_down", WorkEnded: "work_ended", LeaseLost: "lease_lost",
	Paused: "paused",
}

func (k ReasonKind) String() string {
	if k >= 0 && int(k) < len(reasonKinds) {
		return reasonKinds[k]
	}
	return fmt.Sprintf("ReasonKind(%d)", int(k))
}

// Reason says why a lane does not lead, or (Paused) why, holding the
// lease, it runs no job: its kind, and what the kind names (who holds the lock, until when, which error).
type Reason struct {
	Kind ReasonKind
	// Holder and Token name who holds the lock (HeldElsewhere): the
	// holder's worker ID ("" when it could not be read) and token.
	Holder string
	Token  int64
	// Until is when the holder's lease ends if it does not renew
	// (HeldElsewhere), or when the wait ends (SteppedDown, WorkEnded).
	Until time.Time
	// Err is the error behind Refused, FewReplicas, NoAnswer, WorkEnded
	// and LeaseLost.
	Err string
}

// String is the reason for people: "" while the lane leads.
func (r Reason) String() string {
	switch r.Kind {
	case Leading:
		return ""
	case Unplanned:
		return "waiting for the partition plan"
	case NotShare:
		return "not this replica's share"
	case Stopping:
		return "stopping"
	case Acquiring:
		return "trying to acquire the lock"
	case HeldElsewhere:
		who := r.Holder
		if who == "" {
			who = "another replica"
		}
		return fmt.Sprintf("held by %s (token %d) until %s", who, r.Token, stamp(r.Until))
	case SteppedDown:
		return "stepped down on request, quiet until " + stamp(r.Until)
	case WorkEnded:
		s := "work ended (" + r.Err + ")"
		if !r.Until.IsZero() {
			s += ", waiting until " + stamp(r.Until)
		}
		return s
	case Refused, FewReplicas, NoAnswer:
		return r.Err
	case LeaseLost:
		return "lease lost: " + r.Err
	case Paused:
		return "paused: taking no new job until lockworker resume"
	}
	return r.Kind.String()
}

// same reports whether r and o say the same to someone who read one of
// them: the kind and who holds the lock; not the times, which move with
// every retry, nor a fault's error text (each failed attempt's transition
// carries it).
func (r Reason) same(o Reason) bool {
	return r.Kind == o.Kind && r.Holder == o.Holder && r.Token == o.Token
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

// refusedReason is a guard's refusal as a reason.
func refusedReason(err error) Reason { return Reason{Kind: Refused, Err: err.Error()} }

// errReason is a failed acquire as a reason.
func errReason(err error) Reason {
	var short *redislock.ReplicasError
	if errors.As(err, &short) {
		return Reason{Kind: FewReplicas, Err: err.Error()}
	}
	return Reason{Kind: NoAnswer, Err: err.Error()}
}
