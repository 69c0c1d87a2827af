package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// UnreachableError is a Redis node that did not answer at all: nothing
// listens, the host is unknown, or no reply came in time. Its message
// names the node and REDIS_URLS, never a password, e.g.
// "cannot reach Redis at 127.0.0.1:6379 (REDIS_URLS): connection refused".
type UnreachableError struct {
	Node string // host:port; in sentinel and cluster mode the master group or the seed nodes
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach Redis at %s (REDIS_URLS): %s", e.Node, reason(e.Err))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Reach is Probe for a one-shot command, which has no retry loop: it asks
// every node for a PING, in parallel, each within timeout, and returns
// nil when the first node (the fencing epoch, the queue, the registry and
// the history live there) and a majority of the lock's nodes answer.
// Otherwise it returns a *config.Error for each refusal no retry can
// change (as Probe) and an *UnreachableError for each node that did not
// answer, joined.
func (b *Backend) Reach(ctx context.Context, timeout time.Duration) error {
	errs := b.ping(ctx, timeout)
	answered := 0
	for _, err := range errs {
		if err == nil {
			answered++
		}
	}
	if errs[0] == nil && answered >= b.Lockers[0].Quorum() {
		return nil
	}
	for i, err := range errs {
		if err != nil {
			if r := b.refusal(i, err); r != nil {
				errs[i] = r
			} else {
				errs[i] = &UnreachableError{Node: b.probes[i].addr, Err: err}
			}
		}
	}
	return errors.Join(errs...)
}

// reason is why a node did not answer, in a few words: the system's word
// for a refused or unreachable connection ("connection refused"), the
// resolver's for an unknown host, or that no reply came in time.
func reason(err error) string {
	var (
		sys *os.SyscallError
		dns *net.DNSError
		ne  net.Error
	)
	switch {
	case errors.As(err, &sys):
		return sys.Err.Error()
	case errors.As(err, &dns):
		return dns.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer in time"
	}
	return strings.TrimPrefix(err.Error(), "redis: ")
}
