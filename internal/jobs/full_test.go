package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestFullRedisRefusesEnqueue: on a noeviction Redis whose memory is
// full, Enqueue and EnqueueMany fail with ErrRedisFull and write
// nothing, and every job acknowledged before is still in the queue (an
// evicting Redis would have dropped some to make room).
func TestFullRedisRefusesEnqueue(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory", "3mb", "--maxmemory-policy", "noeviction"}})
	c := s.Client()
	keys := keyspace.MustNew("full")
	queues := make([]*Queue, 2)
	for p := range queues {
		q, err := New(Config{Client: c, Keys: keys.Partition(p, len(queues)), Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		queues[p] = q
	}
	r, err := NewRouter(queues, c, true)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 64<<10))
	var acked []string
	var refused error
	for i := 0; i < 1000 && refused == nil; i++ {
		var id string
		id, _, refused = r.Enqueue(t.Context(), "k"+strings.Repeat("y", i%7), payload)
		if refused == nil {
			acked = append(acked, id)
		}
	}
	if !errors.Is(refused, ErrRedisFull) || !strings.Contains(refused.Error(), "Redis is full") {
		t.Fatalf("enqueue on a full Redis: %v, want ErrRedisFull", refused)
	}
	if len(acked) == 0 {
		t.Fatal("the Redis was full before the first job")
	}
	_, err = r.EnqueueMany(t.Context(), []Item{{Key: "a", Payload: payload}, {Key: "b", Payload: payload}, {Key: "c", Payload: payload}})
	if !errors.Is(err, ErrRedisFull) {
		t.Fatalf("bulk enqueue on a full Redis: %v, want ErrRedisFull", err)
	}
	var stored []string
	for _, q := range queues {
		for _, j := range streamJobs(t, q) {
			stored = append(stored, j.id)
		}
	}
	if len(stored) != len(acked) {
		t.Fatalf("%d jobs acknowledged, %d in the queues", len(acked), len(stored))
	}
	have := map[string]bool{}
	for _, id := range stored {
		have[id] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Fatalf("acknowledged job %s is gone", id)
		}
	}
}
