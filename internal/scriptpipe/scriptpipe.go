package scriptpipe

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Client is what Run needs of a client: a redis.Cmdable, or a *redis.Conn
// (one connection, for a WAIT that counts its own writes).
type Client interface {
	Pipeline() redis.Pipeliner
}

// Batch is one round trip: the commands Before, the script, the commands
// After. A command is its arguments, as for Do.
type Batch struct {
	Script *redis.Script
	Keys   []string
	Args   []any
	Before [][]any
	After  [][]any
}

// Reply is what a Batch got back, command by command, in the Batch's
// order. Each command carries its own error.
type Reply struct {
	Before []*redis.Cmd
	Script *redis.Cmd
	After  []*redis.Cmd
}

// NoScript reports whether the server lacked the script, which therefore
// did not run.
func (r Reply) NoScript() bool { return redis.HasErrorPrefix(r.Script.Err(), "NOSCRIPT") }

// Run sends b in one round trip with the script as EVALSHA. When the
// server lacks the script, it sends a batch again with the script's body
// (EVAL), as again says: again gets the first reply and returns the batch
// to send (b itself, or with other commands around the script), or false
// to send nothing more. A nil again sends b again. Run returns the first
// reply and the last, which is the first when it sent only one.
func Run(ctx context.Context, c Client, b Batch, again func(first Reply) (Batch, bool)) (first, last Reply) {
	first = send(ctx, c, b, false)
	if !first.NoScript() {
		return first, first
	}
	if again != nil {
		var ok bool
		if b, ok = again(first); !ok {
			return first, first
		}
	}
	return first, send(ctx, c, b, true)
}

// send queues b on one pipeline, the script as EVAL when eval is set, else
// EVALSHA, and sends it. The errors are the commands' own, in the reply.
func send(ctx context.Context, c Client, b Batch, eval bool) Reply {
	p := c.Pipeline()
	r := Reply{Before: make([]*redis.Cmd, len(b.Before)), After: make([]*redis.Cmd, len(b.After))}
	for i, args := range b.Before {
		r.Before[i] = p.Do(ctx, args...)
	}
	if eval {
		r.Script = b.Script.Eval(ctx, p, b.Keys, b.Args...)
	} else {
		r.Script = b.Script.EvalSha(ctx, p, b.Keys, b.Args...)
	}
	for i, args := range b.After {
		r.After[i] = p.Do(ctx, args...)
	}
	_, _ = p.Exec(ctx)
	return r
}
