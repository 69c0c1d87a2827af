package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs"
)

const enqueueUsage = `usage: lockworker enqueue [--] PAYLOAD...
       lockworker enqueue < file

Adds one job: the arguments joined by spaces, or stdin when there are none
(1 byte to 1 MiB either way), and prints its ID. Put -- before a payload
that starts with a dash.`

// runEnqueue adds one job: the arguments joined by spaces, or stdin when
// there are none. It prints the job's ID.
func runEnqueue(ctx context.Context, cfg config.Config, args []string, in io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("enqueue", flag.ContinueOnError)
	if help, err := parseFlags(fs, args, enqueueUsage, stdout); help || err != nil {
		return err
	}
	payload, err := readPayload(fs.Args(), in)
	if err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	id, err := p.Queue.Enqueue(ctx, payload)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}

// readPayload is the arguments joined by spaces, or stdin when there are
// none, within the queue's bounds.
func readPayload(args []string, in io.Reader) ([]byte, error) {
	var payload []byte
	if len(args) > 0 {
		payload = []byte(strings.Join(args, " "))
	} else {
		b, err := io.ReadAll(io.LimitReader(in, jobs.MaxPayload+1))
		if err != nil {
			return nil, fmt.Errorf("read the payload from stdin: %w", err)
		}
		payload = b
	}
	switch {
	case len(payload) == 0:
		return nil, usageError("enqueue: no payload\n%s", enqueueUsage)
	case len(payload) > jobs.MaxPayload:
		return nil, usageError("enqueue: payload larger than 1 MiB (%d bytes)", jobs.MaxPayload)
	}
	return payload, nil
}
