package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/lines"
)

const enqueueUsage = `usage: lockworker enqueue [--key K] [--] PAYLOAD...
       lockworker enqueue [--key K] < file
       lockworker enqueue --lines [--key K | --key-field F] < file

Adds one job: the arguments joined by spaces, or stdin when there are none
(1 byte to 1 MiB either way), and prints its ID. Put -- before a payload
that starts with a dash.

With --lines, adds one job per line of stdin, all or none, in order, and
prints their IDs in the same order, one per line. Lines end with \n or
\r\n; empty lines are skipped. At most 1000 jobs, 1 MiB per line and
8 MiB in all: a bad line is named by its number and nothing is enqueued.
  --key K        the jobs' ordering key: jobs of one key run one at a
                 time, in enqueue order (with PARTITIONS > 1 the key
                 picks the partition; without a key, the job's ID does)
  --key-field F  with --lines: each line is a JSON object, and its string
                 field F is that line's key

An enqueued job waits in Redis until the leader takes it; nothing needs
to be running now. For HTTP, a replica's POST /jobs does the same (with
JOBS_TOKEN).

` + redisSettings

// runEnqueue adds one job (the arguments joined by spaces, or stdin when
// there are none), or with --lines one job per line of stdin. It prints
// the IDs.
func runEnqueue(ctx context.Context, getenv func(string) string, args []string, in io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("enqueue", flag.ContinueOnError)
	perLine := fs.Bool("lines", false, "one job per line of stdin")
	key := fs.String("key", "", "the jobs' ordering key")
	field := fs.String("key-field", "", "with --lines, the JSON field that holds each line's key")
	if help, err := parseFlags(fs, args, enqueueUsage, stdout); help || err != nil {
		return err
	}
	switch {
	case *key != "" && *field != "":
		return usageError("enqueue", "give --key or --key-field, not both")
	case *field != "" && !*perLine:
		return usageError("enqueue", "--key-field goes with --lines")
	case len(*key) > jobs.MaxKey || strings.ContainsFunc(*key, unicode.IsControl):
		return usageError("enqueue", "--key: at most %d bytes, no control characters", jobs.MaxKey)
	}
	if *perLine {
		return enqueueLines(ctx, getenv, fs.Args(), *key, *field, in, stdout)
	}
	payload, err := readPayload(fs.Args(), in)
	if err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, getenv)
	if err != nil {
		return err
	}
	defer done()
	id, _, err := p.Queues.Enqueue(ctx, *key, payload)
	if errors.Is(err, jobs.ErrNotReplicated) {
		return notAcknowledged(err, "job is")
	}
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}

// enqueueLines is enqueue --lines: the whole of stdin is read and checked
// (the keys too) before Redis is dialled, so a bad line enqueues nothing.
func enqueueLines(ctx context.Context, getenv func(string) string, args []string, key, field string, in io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError("enqueue", "--lines reads the jobs from stdin and takes no arguments")
	}
	payloads, err := lines.Read(in, lines.Limits{MaxBytes: jobs.MaxBatchBytes, MaxLines: jobs.MaxBatch, MaxLineBytes: jobs.MaxPayload}, nil)
	var bad *lines.Error
	switch {
	case errors.As(err, &bad):
		return inputError("enqueue: %v; nothing enqueued", bad)
	case err != nil:
		return fmt.Errorf("enqueue: %w", err)
	}
	items := make([]jobs.Item, len(payloads))
	for i, pl := range payloads {
		items[i] = jobs.Item{Key: key, Payload: pl}
		if field == "" {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(pl, &obj) != nil || json.Unmarshal(obj[field], &items[i].Key) != nil || items[i].Key == "" ||
			len(items[i].Key) > jobs.MaxKey || strings.ContainsFunc(items[i].Key, unicode.IsControl) {
			return inputError("enqueue: job %d: no string field %q of 1 to %d bytes without control characters for its key; nothing enqueued",
				i+1, field, jobs.MaxKey)
		}
	}
	p, ctx, done, err := oneShot(ctx, getenv)
	if err != nil {
		return err
	}
	defer done()
	ids, err := p.Queues.EnqueueMany(ctx, items)
	var partial *jobs.PartialError
	if errors.As(err, &partial) {
		w := bufio.NewWriter(stdout)
		for _, id := range partial.IDs {
			fmt.Fprintln(w, cmp.Or(id, "-"))
		}
		_ = w.Flush()
		return fmt.Errorf("enqueue: %w (the IDs printed are the jobs enqueued, - the others)", err)
	}
	if err != nil {
		return bulkError(err)
	}
	w := bufio.NewWriter(stdout)
	for _, id := range ids {
		fmt.Fprintln(w, id)
	}
	return w.Flush()
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
		return nil, usageError("enqueue", "no payload: give it as arguments or on stdin")
	case len(payload) > jobs.MaxPayload:
		return nil, inputError("enqueue: payload larger than 1 MiB (%d bytes)", jobs.MaxPayload)
	}
	return payload, nil
}

// bulkError is enqueue --lines's error when EnqueueMany refused or did
// not finish the batch (all or none): whether the jobs are in the queue.
func bulkError(err error) error {
	switch {
	case errors.Is(err, jobs.ErrNotReplicated):
		return notAcknowledged(err, "jobs are")
	case errors.Is(err, jobs.ErrOutcomeUnknown):
		return fmt.Errorf("enqueue: %w", err)
	}
	return fmt.Errorf("enqueue: %w; nothing enqueued", err)
}

// notAcknowledged is enqueue's error when the jobs were written on the
// Redis master but fewer of its replicas than REDIS_MIN_REPLICAS
// acknowledged them in time (WAIT): it names the setting and the ways
// out. what is "job is" or "jobs are".
func notAcknowledged(err error, what string) error {
	return fmt.Errorf("enqueue: %w. The %s in the queue and may run, or be lost if the master fails over now "+
		"(enqueue again only where a duplicate is harmless). REDIS_MIN_REPLICAS (1 by default with Sentinel and Cluster) "+
		"is how many replicas must acknowledge each enqueue, and a master with fewer online replicas never does: "+
		"give the master a replica, or set REDIS_MIN_REPLICAS=0 to take that risk", err, what)
}
