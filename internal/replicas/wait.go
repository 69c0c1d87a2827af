package replicas

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Want is how many acknowledgements a write needs: every online replica,
// and at least min.
func Want(online, min int) int { return max(online, min) }

// Doer sends a command: a *redis.Conn, or a pipeline on one.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// Wait sends (or queues) WAIT want on p, bounded by timeout: p must be
// the write's own connection, or a pipeline on it.
func Wait(ctx context.Context, p Doer, want int, timeout time.Duration) *redis.Cmd {
	return p.Do(ctx, WaitCommand(want, timeout)...)
}

// WaitCommand is the WAIT command's arguments, for a round trip that is
// built as data (package scriptpipe): want acknowledgements within
// timeout.
func WaitCommand(want int, timeout time.Duration) []any {
	return []any{"WAIT", want, timeout.Milliseconds()}
}

// ShortError is a WAIT that fell short: fewer replicas acknowledged the
// write than it needed within the timeout, or the WAIT itself failed.
type ShortError struct {
	Acked, Want int
	Timeout     time.Duration
	Err         error // the WAIT's own error, if it failed
}

func (e *ShortError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("WAIT: %v", e.Err)
	}
	return fmt.Sprintf("%d of %d replicas acknowledged within %s", e.Acked, e.Want, e.Timeout)
}

func (e *ShortError) Unwrap() error { return e.Err }

// Acked is a WAIT's verdict: nil when want replicas acknowledged, else a
// *ShortError; then master's count is forgotten (c.Forget), since a
// replica may be gone.
func (c *Counts) Acked(master string, wait *redis.Cmd, want int, timeout time.Duration) error {
	acked, err := wait.Int64()
	if err == nil && int(acked) >= want {
		return nil
	}
	c.Forget(master)
	return &ShortError{Acked: int(acked), Want: want, Timeout: timeout, Err: err}
}
