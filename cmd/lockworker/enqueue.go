package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/lockworker/lockworker/internal/config"
)

// runEnqueue adds one job: the arguments joined by spaces, or stdin when
// there are none. It prints the job's ID.
func runEnqueue(ctx context.Context, cfg config.Config, args []string, in io.Reader, stdout io.Writer) error {
	var payload []byte
	if len(args) > 0 {
		payload = []byte(strings.Join(args, " "))
	} else {
		b, err := io.ReadAll(io.LimitReader(in, 1<<20+1))
		if err != nil {
			return fmt.Errorf("read the payload from stdin: %w", err)
		}
		if len(b) > 1<<20 {
			return usageError("enqueue: payload larger than 1 MiB")
		}
		payload = b
	}
	if len(payload) == 0 {
		return usageError("enqueue: no payload (usage: lockworker enqueue PAYLOAD, or pipe it on stdin)")
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	id, err := p.queue.Enqueue(ctx, payload)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}
