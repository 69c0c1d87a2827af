package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

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
                 picks the partition; without a key, the job's ID does);
                 1 to 1024 bytes, not only spaces, no control character.
                 A --key given empty is refused: leave it out for none
  --key-field F  with --lines: each line is a JSON object, and its string
                 field F is that line's key, held to the same rule

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
	if err := checkKeyFlags(fs, *key, *field, *perLine); err != nil {
		return err
	}
	if *perLine {
		return enqueueLines(ctx, getenv, fs.Args(), *key, *field, in, stdout)
	}
	payload, err := readPayload(fs.Args(), in)
	if err != nil {
		return err
	}
	if err := jobs.CheckItem(jobs.Item{Key: *key, Payload: payload}); err != nil {
		return inputError("enqueue: %s", reason(err))
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	id, _, err := p.Queues.Enqueue(ctx, *key, payload)
	if err != nil {
		return enqueueFailed(err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}

// checkKeyFlags checks --key and --key-field. A --key that is given is
// held to the queue's rule for keys (jobs.CheckKey) even when empty:
// --key "$CUSTOMER" with the variable unset must not drop the jobs'
// order without a word.
func checkKeyFlags(fs *flag.FlagSet, key, field string, perLine bool) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case given["key"] && given["key-field"]:
		return usageError("enqueue", "give --key or --key-field, not both")
	case given["key-field"] && !perLine:
		return usageError("enqueue", "--key-field goes with --lines")
	case given["key-field"] && field == "":
		return usageError("enqueue", "--key-field must name a field")
	case given["key"]:
		if err := jobs.CheckKey(key); err != nil {
			return usageError("enqueue", "--key %q: %s; leave --key out for jobs without a key", key, reason(err))
		}
	}
	return nil
}

// enqueueLines is enqueue --lines: the whole of stdin is read and checked
// (the keys too) before Redis is dialled, so a bad line enqueues nothing.
func enqueueLines(ctx context.Context, getenv func(string) string, args []string, key, field string, in io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError("enqueue", "--lines reads the jobs from stdin and takes no arguments")
	}
	payloads, err := lines.Read(in, jobs.BatchLines(), nil)
	var bad *lines.Error
	switch {
	case errors.As(err, &bad):
		return inputError("enqueue: %v; nothing enqueued", bad)
	case err != nil:
		return fmt.Errorf("enqueue: read stdin: %w", err)
	}
	items, err := jobs.Keyed(payloads, key, field)
	if err != nil {
		return inputError("enqueue: %s; nothing enqueued", reason(err))
	}
	p, ctx, done, err := oneShot(ctx, "enqueue", getenv)
	if err != nil {
		return err
	}
	defer done()
	ids, err := p.Queues.EnqueueMany(ctx, items)
	var partial *jobs.PartialError
	switch {
	case errors.As(err, &partial):
		ids = partial.IDs
		n := len(ids) - len(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id != "" }))
		err = say(err, "enqueue: %d of %d jobs enqueued (their IDs printed, - for the others); the rest: %s", n, len(ids), cause(partial.Err))
	case err != nil:
		return enqueueFailed(err)
	}
	w := bufio.NewWriter(stdout)
	for _, id := range ids {
		fmt.Fprintln(w, cmp.Or(id, "-"))
	}
	return cmp.Or(w.Flush(), err)
}

// enqueueFailed is an enqueue's error that is not the input's, as one
// sentence: what Redis did, and what it means for the jobs.
func enqueueFailed(err error) error {
	var refused redis.Error
	switch {
	case errors.Is(err, jobs.ErrInvalidInput):
		return inputError("enqueue: %s", reason(err))
	case errors.Is(err, jobs.ErrRedisFull):
		return say(err, "enqueue: %s; nothing enqueued", reason(jobs.ErrRedisFull))
	case errors.Is(err, jobs.ErrNotReplicated):
		// Written: not "nothing enqueued". The setting that explains it,
		// and the ways out.
		return say(err, "enqueue: %s: it is in the queue and may run, or be lost if the master fails over now "+
			"(enqueue again only where a duplicate is harmless); REDIS_MIN_REPLICAS (1 by default with Sentinel and Cluster) "+
			"is how many replicas must acknowledge each enqueue, and a master with fewer online replicas never does: "+
			"give the master a replica, or set REDIS_MIN_REPLICAS=0 to take that risk", reason(jobs.ErrNotReplicated))
	case errors.Is(err, jobs.ErrOutcomeUnknown):
		return say(err, "enqueue: Redis did not answer (%s): the jobs were enqueued whole or not at all", cause(err))
	case errors.As(err, &refused):
		return say(err, "enqueue: Redis refused (%s); nothing enqueued", cause(err))
	}
	return say(err, "enqueue: Redis did not answer (%s): the job may or may not be enqueued", cause(err))
}

// readPayload is the arguments joined by spaces, or stdin when there are
// none, read up to one byte past the queue's bound.
func readPayload(args []string, in io.Reader) ([]byte, error) {
	if len(args) > 0 {
		payload := []byte(strings.Join(args, " "))
		if len(payload) == 0 {
			return nil, usageError("enqueue", "no payload: give it as arguments or on stdin")
		}
		return payload, nil
	}
	payload, err := io.ReadAll(io.LimitReader(in, jobs.MaxPayload+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("enqueue: read the payload from stdin: %w", err)
	case len(payload) == 0:
		return nil, usageError("enqueue", "no payload: give it as arguments or on stdin")
	}
	return payload, nil
}
