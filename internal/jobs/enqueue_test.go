package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// streamJob is a queued job as a test reads it.
type streamJob struct{ id, payload string }

// streamJobs is q's unfinished jobs, group by group, each in its order
// (keyless jobs of one partition: the serial queue, in enqueue order).
func streamJobs(t testing.TB, q *Queue) []streamJob {
	t.Helper()
	jobs, err := q.Unfinished(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]streamJob, len(jobs))
	for i, j := range jobs {
		out[i] = streamJob{j.ID, string(j.Payload)}
	}
	return out
}

func batchOf(prefix string, n int) [][]byte {
	p := make([][]byte, n)
	for i := range p {
		p[i] = []byte(prefix + strconv.Itoa(i))
	}
	return p
}

func batchQueue(t testing.TB, c redis.Cmdable, cfg Config) *Queue {
	t.Helper()
	cfg.Client = c
	if cfg.Keys.IsZero() {
		cfg.Keys = testKeys
	}
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestEnqueueManyInOrder: a batch lands in the queue in its order, after
// what came before and before what comes after, and its IDs come back in
// that order, as ULIDs; so does a batch of one.
func TestEnqueueManyInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := batchQueue(t, e.c, Config{})
	first, err := q.Enqueue(t.Context(), "", []byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := q.EnqueueMany(t.Context(), items(batchOf("job ", 50)))
	if err != nil {
		t.Fatal(err)
	}
	last, err := q.Enqueue(t.Context(), "", []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := q.EnqueueMany(t.Context(), items([][]byte{[]byte("alone")}))
	if err != nil || len(alone) != 1 {
		t.Fatalf("a batch of one: %v, %v", alone, err)
	}
	if len(ids) != 50 || !slices.IsSorted(ids) || len(ids[0]) != 26 {
		t.Fatalf("ids not 50 ULIDs in order: %v", ids)
	}
	want := []streamJob{{first, "before"}}
	for i, id := range ids {
		want = append(want, streamJob{id, "job " + strconv.Itoa(i)})
	}
	want = append(want, streamJob{last, "after"}, streamJob{alone[0], "alone"})
	if got := streamJobs(t, q); !slices.Equal(got, want) {
		t.Fatalf("queue = %v\nwant %v", got, want)
	}
}

// TestEnqueueManyRefusesWhole: a batch with any fault is refused before
// Redis sees it, and the error says which job and why.
func TestEnqueueManyRefusesWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := batchQueue(t, e.c, Config{})
	big := bytes.Repeat([]byte("x"), MaxPayload)
	middle := func(bad []byte) [][]byte { p := batchOf("ok ", 5); p[2] = bad; return p }
	for _, tc := range []struct {
		name  string
		batch [][]byte
		want  error
		index int // of the BatchError; -1 when none
	}{
		{"no jobs", nil, ErrNoJobs, -1},
		{"too many jobs", batchOf("x", MaxBatch+1), ErrTooManyJobs, -1},
		{"an empty payload in the middle", middle(nil), ErrEmptyPayload, 2},
		{"a payload too large in the middle", middle(append(big, 'x')), ErrPayloadTooLarge, 2},
		{"too many bytes in all", slices.Repeat([][]byte{big}, MaxBatchBytes/MaxPayload+1), ErrBatchTooLarge, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := q.EnqueueMany(t.Context(), items(tc.batch))
			if !errors.Is(err, tc.want) || ids != nil {
				t.Fatalf("EnqueueMany = %v, %v; want %v", ids, err, tc.want)
			}
			var be *BatchError
			if got := errors.As(err, &be); got != (tc.index >= 0) || got && be.Index != tc.index {
				t.Fatalf("error %v: want a BatchError at %d", err, tc.index)
			}
			if n := len(streamJobs(t, q)); n != 0 {
				t.Fatalf("%d jobs enqueued, want none", n)
			}
		})
	}
	// The largest batch allowed goes through whole.
	ids, err := q.EnqueueMany(t.Context(), items(slices.Repeat([][]byte{big}, MaxBatchBytes/MaxPayload)))
	if err != nil || len(ids) != MaxBatchBytes/MaxPayload {
		t.Fatalf("a batch of exactly MaxBatchBytes: %d ids, %v", len(ids), err)
	}
}

// TestEnqueueManyRedisRefusal: when Redis refuses the script (here a user
// that may not RPUSH, denied at the script's first write) no job of it is
// written, and the error says so.
func TestEnqueueManyRedisRefusal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	if err := e.c.Do(ctx, "ACL", "SETUSER", "producer", "on", ">pw", "~*", "&*", "+@all", "-rpush").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), Username: "producer", Password: "pw", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	q := batchQueue(t, c, Config{})
	if ids, err := q.EnqueueMany(ctx, items(batchOf("x", 10))); err == nil || ids != nil || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("EnqueueMany without RPUSH = %v, %v; want a refusal that says nothing was enqueued", ids, err)
	}
	if n := len(streamJobs(t, batchQueue(t, e.c, Config{}))); n != 0 {
		t.Fatalf("%d jobs enqueued, want none", n)
	}
}

// TestEnqueueManyOutcomeUnknown: a batch whose answer never came (Redis
// frozen past the client's read timeout) is reported as maybe enqueued,
// and it was: whole, once Redis ran again.
func TestEnqueueManyOutcomeUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	q := batchQueue(t, c, Config{})
	// Connected, and the replica count read (it is good for a second),
	// before the freeze: the batch itself goes unanswered.
	if _, _, err := q.acks.conn(ctx, c, q.ready); err != nil {
		t.Fatal(err)
	}
	if err := enqueueScript.Load(ctx, c).Err(); err != nil { // a warm server runs EVALSHA
		t.Fatal(err)
	}
	e.srv.Freeze()
	t.Cleanup(e.srv.Thaw)
	ids, err := q.EnqueueMany(ctx, items(batchOf("x", 10)))
	e.srv.Thaw()
	if !errors.Is(err, ErrOutcomeUnknown) || ids != nil {
		t.Fatalf("EnqueueMany to a frozen Redis = %v, %v; want ErrOutcomeUnknown", ids, err)
	}
	seen := batchQueue(t, e.c, Config{})
	poll.Until(t, 10*time.Second, "the batch, sent before the freeze, in the queue", func() bool {
		return len(streamJobs(t, seen)) > 0
	})
	if n := len(streamJobs(t, seen)); n != 10 {
		t.Fatalf("%d jobs enqueued, want the whole batch of 10", n)
	}
}

// TestEnqueueManyNotInterleaved: batches of concurrent producers are each
// one contiguous run in the serial queue, in their own order: the script
// keeps other jobs out from between a batch's jobs.
func TestEnqueueManyNotInterleaved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := batchQueue(t, e.c, Config{})
	// Batches far above Redis's 16 KiB read size, so that without a
	// transaction the server would serve other producers between reads.
	const producers, batches, size = 4, 5, 500
	pad := strings.Repeat("-", 100)
	var wg sync.WaitGroup
	errs := make(chan error, producers*batches)
	for p := range producers {
		wg.Go(func() {
			for b := range batches {
				if _, err := q.EnqueueMany(context.Background(), items(batchOf(fmt.Sprintf("%s%d/%d/", pad, p, b), size))); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := streamJobs(t, q)
	if len(got) != producers*batches*size {
		t.Fatalf("%d jobs, want %d", len(got), producers*batches*size)
	}
	for start := 0; start < len(got); start += size {
		var p, b int
		if _, err := fmt.Sscanf(strings.TrimPrefix(got[start].payload, pad), "%d/%d/0", &p, &b); err != nil {
			t.Fatalf("entry %d = %q: not the start of a batch", start, got[start].payload)
		}
		for i := range size {
			if want := fmt.Sprintf("%s%d/%d/%d", pad, p, b, i); got[start+i].payload != want {
				t.Fatalf("entry %d = %q, want %q: batches interleaved", start+i, got[start+i].payload, want)
			}
		}
	}
}

// TestEnqueueManyNotice: a batch wakes the leader with one notice, its last
// ID, sent after the jobs are in the queue.
func TestEnqueueManyNotice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := batchQueue(t, e.c, Config{})
	testBatchNotice(t, e.c.Subscribe(t.Context(), q.EnqueuedChannel()), e.c, q)
}

// TestEnqueueManyCluster: the same script and notice in Redis Cluster,
// with the queue's keys and channel under one hash tag and sharded pub/sub.
func TestEnqueueManyCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, fleet.ClusterSpec{})
	var addrs []string
	for _, u := range cl.URLs() {
		addrs = append(addrs, strings.TrimPrefix(u, "redis://"))
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	q := batchQueue(t, c, Config{Keys: keyspace.MustNew("t").Lease(), ShardedNotices: true})
	testBatchNotice(t, c.SSubscribe(t.Context(), q.EnqueuedChannel()), c, q)
}

func testBatchNotice(t *testing.T, ps *redis.PubSub, c redis.Cmdable, q *Queue) {
	t.Helper()
	t.Cleanup(func() { _ = ps.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	ids, err := q.EnqueueMany(ctx, items(batchOf("job ", 3)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Payload != ids[2] {
		t.Fatalf("notice %q, want the batch's last ID %s", m.Payload, ids[2])
	}
	got := streamJobs(t, q)
	if len(got) != 3 || got[0].id != ids[0] || got[2] != (streamJob{ids[2], "job 2"}) {
		t.Fatalf("queue = %v, want the batch %v", got, ids)
	}
}

// BenchmarkEnqueue: jobs/s one Enqueue at a time (one round trip each)
// against EnqueueMany in batches, from one producer; 64-byte payloads.
func BenchmarkEnqueue(b *testing.B) {
	e := newEnv(b)
	q := batchQueue(b, e.c, Config{})
	ctx := context.Background()
	payload := bytes.Repeat([]byte("p"), 64)
	fresh := func(b *testing.B) {
		b.Helper()
		if err := e.c.Del(ctx, q.group(memberSerial), q.ready, q.counters).Err(); err != nil {
			b.Fatal(err)
		}
		if err := e.c.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
	}
	b.Run("one-by-one", func(b *testing.B) {
		fresh(b)
		for range b.N {
			if _, err := q.Enqueue(ctx, "", payload); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	})
	for _, size := range []int{1, 10, 100, 1000} {
		batch := slices.Repeat([][]byte{payload}, size)
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			fresh(b)
			for range b.N {
				if _, err := q.EnqueueMany(ctx, items(batch)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "jobs/s")
			b.StopTimer()
			if us, ok := scriptMicros(b, e.c); ok {
				b.ReportMetric(us, "µs-script")
			}
		})
	}
}

// scriptMicros is how long Redis spent in one enqueue script (EVALSHA),
// on average, since the stats were last reset (false: none since): the
// time a batch keeps Redis from serving anyone else.
func scriptMicros(b *testing.B, c *redis.Client) (float64, bool) {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for kv := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					f, err := strconv.ParseFloat(v, 64)
					return f, err == nil
				}
			}
		}
	}
	return 0, false
}

// items are payloads as items without a key.
func items(payloads [][]byte) []Item {
	out := make([]Item, len(payloads))
	for i, p := range payloads {
		out[i].Payload = p
	}
	return out
}
