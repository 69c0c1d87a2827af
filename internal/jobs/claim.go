package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// entry is the job at the head of the queue, as claimed.
type entry struct {
	streamID string
	job      Job
}

// errPaused is claim's answer while an operator has paused the queue.
var errPaused = errors.New("jobs: queue paused")

// claim returns the next job after the committed position, counting one
// more delivery of it, or nil when the queue is empty; errPaused while the
// queue is paused. Fenced: a stale token is refused first.
func (q *Queue) claim(ctx context.Context, token int64) (*entry, error) {
	reply, err := claimScript.Run(ctx, q.cfg.Client,
		[]string{q.fence, q.position, q.stream, q.attempts, q.paused}, token).Slice()
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
	case "paused":
		return nil, errPaused
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
