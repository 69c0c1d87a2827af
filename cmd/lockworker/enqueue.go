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
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/lines"
)

const enqueueUsage = `usage: lockworker enqueue [--key K] [--in D | --at T] [--idempotency-key I] [--] PAYLOAD...
       lockworker enqueue [--key K] [--in D | --at T] [--idempotency-key I] < file
       lockworker enqueue --lines [--key K | --key-field F] [--in D | --at T | --at-field F]
                          [--idempotency-key-field F] < file

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
  --in D         delay the jobs by D (a Go duration such as 90s or 2h):
                 they join their key's order then, as if enqueued then,
                 and hold none of its other jobs back meanwhile
  --at T         the same, due at T (RFC 3339, such as
                 2026-03-01T02:00:00Z); a time past runs at once. At most
                 366 days ahead either way
  --at-field F   with --lines: each line's string field F is its due time
                 (RFC 3339), held to the same rule; every line needs it
  --idempotency-key I
                 enqueue the job only if no job of its partition holds I:
                 while that job is pending, delayed or parked, and for
                 JOB_IDEMPOTENCY_TTL (24h) after it finished, the command
                 enqueues nothing and prints that job's ID. 1 to 255
                 bytes, no space or control character
  --idempotency-key-field F
                 with --lines: each line's string field F, when it has
                 one, is its idempotency key

An enqueued job waits in Redis until the leader takes it; nothing needs
to be running now. For HTTP, a replica's POST /jobs does the same (with
JOBS_TOKEN; Lockworker-Not-Before and Idempotency-Key headers).

` + redisSettings

// enqueueFlags are enqueue's flags, as given.
type enqueueFlags struct {
	fs              *flag.FlagSet
	lines           bool
	key, keyField   string
	in              time.Duration
	at, atField     string
	idem, idemField string
	notBefore       time.Time // from --in or --at, once checked
}

func newEnqueueFlags() *enqueueFlags {
	f := &enqueueFlags{fs: flag.NewFlagSet("enqueue", flag.ContinueOnError)}
	f.fs.BoolVar(&f.lines, "lines", false, "one job per line of stdin")
	f.fs.StringVar(&f.key, "key", "", "the jobs' ordering key")
	f.fs.StringVar(&f.keyField, "key-field", "", "with --lines, the JSON field that holds each line's key")
	f.fs.DurationVar(&f.in, "in", 0, "delay the jobs by this long")
	f.fs.StringVar(&f.at, "at", "", "the jobs' due time (RFC 3339)")
	f.fs.StringVar(&f.atField, "at-field", "", "with --lines, the JSON field that holds each line's due time")
	f.fs.StringVar(&f.idem, "idempotency-key", "", "enqueue once per idempotency key")
	f.fs.StringVar(&f.idemField, "idempotency-key-field", "", "with --lines, the JSON field that holds each line's idempotency key")
	return f
}

// runEnqueue adds one job (the arguments joined by spaces, or stdin when
// there are none), or with --lines one job per line of stdin. It prints
// the IDs: a job whose idempotency key an earlier job holds prints that
// job's ID.
func runEnqueue(ctx context.Context, getenv func(string) string, args []string, in io.Reader, stdout io.Writer) error {
	f := newEnqueueFlags()
	if help, err := parseFlags(f.fs, args, enqueueUsage, stdout); help || err != nil {
		return err
	}
	if err := f.check(time.Now()); err != nil {
		return err
	}
	if f.lines {
		return enqueueLines(ctx, getenv, f, in, stdout)
	}
	payload, err := readPayload(f.fs.Args(), in)
	if err != nil {
		return err
	}
	it := jobs.Item{Key: f.key, Payload: payload, NotBefore: f.notBefore, IdempotencyKey: f.idem}
	if err := jobs.CheckItem(it); err != nil {
		return inputError("enqueue: %s", reason(err))
	}
	p, ctx, done, err := oneShot(ctx, f.fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	r, err := p.Queues.EnqueueItem(ctx, it)
	if err != nil {
		return enqueueFailed(err)
	}
	_, err = fmt.Fprintln(stdout, r.ID)
	return err
}

// check checks the flags that were given, and reads --in or --at into
// notBefore. A --key that is given is held to the queue's rule for keys
// (jobs.CheckKey) even when empty: --key "$CUSTOMER" with the variable
// unset must not drop the jobs' order without a word; so is an
// --idempotency-key.
func (f *enqueueFlags) check(now time.Time) error {
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if err := f.checkLines(given); err != nil {
		return err
	}
	if given["key"] {
		if err := jobs.CheckKey(f.key); err != nil {
			return usageError("enqueue", "--key %q: %s; leave --key out for jobs without a key", f.key, reason(err))
		}
	}
	if given["idempotency-key"] && jobs.CheckIdempotencyKey(f.idem) != nil {
		return usageError("enqueue", "--idempotency-key %q: %s", f.idem, reason(jobs.ErrIdempotencyKeyInvalid))
	}
	return f.checkTime(given, now)
}

// checkLines checks the flags that go with --lines, or without it.
func (f *enqueueFlags) checkLines(given map[string]bool) error {
	for _, name := range []string{"key-field", "at-field", "idempotency-key-field"} {
		switch {
		case given[name] && !f.lines:
			return usageError("enqueue", "--%s goes with --lines", name)
		case given[name] && f.fs.Lookup(name).Value.String() == "":
			return usageError("enqueue", "--%s must name a field", name)
		}
	}
	switch {
	case given["key"] && given["key-field"]:
		return usageError("enqueue", "give --key or --key-field, not both")
	case given["idempotency-key"] && f.lines:
		return usageError("enqueue", "--idempotency-key would make every line one job: give each line its own with --idempotency-key-field")
	case given["at-field"] && (given["at"] || given["in"]):
		return usageError("enqueue", "give --in, --at or --at-field, not two of them")
	}
	return nil
}

// checkTime reads --in or --at.
func (f *enqueueFlags) checkTime(given map[string]bool, now time.Time) error {
	switch {
	case given["in"] && given["at"]:
		return usageError("enqueue", "give --in or --at, not both")
	case given["in"] && f.in < 0:
		return usageError("enqueue", "--in must not be negative, got %s", f.in)
	case given["in"]:
		f.notBefore = now.Add(f.in)
	case given["at"]:
		t, err := time.Parse(time.RFC3339Nano, f.at)
		if err != nil {
			return usageError("enqueue", "--at %q is no RFC 3339 time (such as 2026-03-01T02:00:00Z)", f.at)
		}
		f.notBefore = t
	}
	if f.notBefore.Sub(now) > jobs.MaxDelay {
		return usageError("enqueue", "%s", reason(jobs.ErrTooFarAhead))
	}
	return nil
}

// enqueueLines is enqueue --lines: the whole of stdin is read and checked
// (the keys too) before Redis is dialled, so a bad line enqueues nothing.
func enqueueLines(ctx context.Context, getenv func(string) string, f *enqueueFlags, in io.Reader, stdout io.Writer) error {
	if f.fs.NArg() > 0 {
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
	items, err := jobs.ItemsOf(payloads, jobs.LineFields{Key: f.key, KeyField: f.keyField, NotBefore: f.notBefore,
		NotBeforeField: f.atField, IdempotencyKeyField: f.idemField})
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
