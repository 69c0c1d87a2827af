package jobs

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

var (
	// fenceLua holds the fencing check and the queue-head reading that
	// every fenced script starts from; it goes before each of them.
	//go:embed fence.lua
	fenceLua string

	//go:embed claim.lua
	claimLua    string
	claimScript = redis.NewScript(fenceLua + claimLua)

	//go:embed commit.lua
	commitLua    string
	commitScript = redis.NewScript(fenceLua + commitLua)

	//go:embed deadletter.lua
	deadLetterLua    string
	deadLetterScript = redis.NewScript(fenceLua + deadLetterLua)

	//go:embed requeue.lua
	requeueLua    string
	requeueScript = redis.NewScript(requeueLua)
)

// entry is the job at the head of the queue, as claimed.
type entry struct {
	streamID string
	job      Job
}

// errOrder means a commit named an entry that is not the next one after the
// committed position: a bug, never a state the loop should act on.
var errOrder = errors.New("jobs: commit out of order")

// claim returns the next job after the committed position, counting one
// more delivery of it, or nil when the queue is empty. Fenced.
func (q *Queue) claim(ctx context.Context, token int64) (*entry, error) {
	reply, err := claimScript.Run(ctx, q.cfg.Client,
		[]string{q.cfg.EpochKey, q.position, q.stream, q.attempts}, token).Slice()
	if err != nil {
		return nil, fmt.Errorf("jobs: claim: %w", err)
	}
	tag, rest, err := splitReply(reply)
	if err != nil {
		return nil, fmt.Errorf("jobs: claim: %w", err)
	}
	switch tag {
	case "stale":
		return nil, staleError(token, rest)
	case "empty":
		return nil, nil
	case "job":
	default:
		return nil, fmt.Errorf("jobs: claim: unexpected reply %q", tag)
	}
	if len(rest) < 2 || len(rest)%2 != 0 {
		return nil, fmt.Errorf("jobs: claim: malformed reply of %d items", len(reply))
	}
	e := &entry{streamID: str(rest[0])}
	e.job.ID = e.streamID
	e.job.Attempt, err = strconv.Atoi(str(rest[1]))
	if err != nil {
		return nil, fmt.Errorf("jobs: claim: attempt: %w", err)
	}
	for i := 2; i+1 < len(rest); i += 2 {
		v := str(rest[i+1])
		switch str(rest[i]) {
		case "id":
			e.job.ID = v
		case "payload":
			e.job.Payload = []byte(v)
		case "enqueued_at":
			e.job.EnqueuedAt = millisTime(v)
		}
	}
	return e, nil
}

// commit is the fenced completion of e. A resent commit that already
// applied returns nil.
func (q *Queue) commit(ctx context.Context, token int64, e *entry) error {
	reply, err := commitScript.Run(ctx, q.cfg.Client,
		[]string{q.cfg.EpochKey, q.position, q.stream, q.attempts, q.counters, q.last},
		token, e.streamID, e.job.ID, e.job.Attempt, q.nowMillis()).Slice()
	return fencedResult("commit", e, token, reply, err)
}

// deadLetter is the fenced move of e to the dead letters with cause.
func (q *Queue) deadLetter(ctx context.Context, token int64, e *entry, attempts int, cause string) error {
	reply, err := deadLetterScript.Run(ctx, q.cfg.Client,
		[]string{q.cfg.EpochKey, q.position, q.stream, q.attempts, q.counters, q.dead, q.deadRecord(e.job.ID)},
		token, e.streamID, e.job.ID, attempts, q.nowMillis(), cause).Slice()
	return fencedResult("dead-letter", e, token, reply, err)
}

func fencedResult(op string, e *entry, token int64, reply []any, err error) error {
	if err != nil {
		return fmt.Errorf("jobs: %s %s: %w", op, e.job.ID, err)
	}
	tag, rest, err := splitReply(reply)
	if err != nil {
		return fmt.Errorf("jobs: %s %s: %w", op, e.job.ID, err)
	}
	switch tag {
	case "ok", "done":
		return nil
	case "stale":
		return fmt.Errorf("jobs: %s %s: %w", op, e.job.ID, staleError(token, rest))
	case "order":
		pos := ""
		if len(rest) > 0 {
			pos = str(rest[0])
		}
		return fmt.Errorf("%w: %s of %s (stream ID %s) with committed position %s",
			errOrder, op, e.job.ID, e.streamID, pos)
	}
	return fmt.Errorf("jobs: %s %s: unexpected reply %q", op, e.job.ID, tag)
}

// StaleError carries the numbers behind an ErrStaleToken.
type StaleError struct {
	Token, Epoch int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%v: token %d, epoch %d", ErrStaleToken, e.Token, e.Epoch)
}

// Unwrap makes errors.Is(err, ErrStaleToken) hold.
func (e *StaleError) Unwrap() error { return ErrStaleToken }

func staleError(token int64, rest []any) error {
	var epoch int64
	if len(rest) > 0 {
		epoch, _ = strconv.ParseInt(str(rest[0]), 10, 64)
	}
	return &StaleError{Token: token, Epoch: epoch}
}

func splitReply(reply []any) (string, []any, error) {
	if len(reply) == 0 {
		return "", nil, errors.New("empty script reply")
	}
	return str(reply[0]), reply[1:], nil
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(v)
}
