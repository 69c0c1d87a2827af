package replicas

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// reply is a command that already has its answer.
func reply(v any, err error) *redis.Cmd {
	c := redis.NewCmd(context.Background())
	c.SetVal(v)
	c.SetErr(err)
	return c
}

// A count is fresh for TTL after it was read, per master; Forget drops
// one master's, or every one's.
func TestCountsTTL(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := NewCounts(func() time.Time { return now })
	if _, fresh := c.Get("a:1"); fresh {
		t.Fatal("a count never read is fresh")
	}
	if n, err := c.Take("a:1", reply("role:master\r\nslave0:ip=x,port=1,state=online,offset=1,lag=0\r\n", nil)); err != nil || n != 1 {
		t.Fatalf("Take = %d, %v", n, err)
	}
	c.Set("b:1", 3)
	if n, fresh := c.Get("a:1"); n != 1 || !fresh {
		t.Fatalf("Get right after the read = %d, %v", n, fresh)
	}
	now = now.Add(TTL - time.Millisecond)
	if _, fresh := c.Get("a:1"); !fresh {
		t.Fatal("stale before TTL")
	}
	now = now.Add(time.Millisecond)
	if n, fresh := c.Get("a:1"); n != 1 || fresh {
		t.Fatalf("Get at TTL = %d, %v; want the old count, stale", n, fresh)
	}
	c.Set("a:1", 2)
	c.Forget("a:1")
	if _, fresh := c.Get("a:1"); fresh {
		t.Fatal("fresh after Forget")
	}
	c.Set("a:1", 2)
	c.Forget("")
	if _, fresh := c.Get("b:1"); fresh {
		t.Fatal("Forget(\"\") left b's count")
	}
	if _, err := c.Take("a:1", reply("role:slave\r\n", nil)); err == nil {
		t.Fatal("a replica's INFO counted")
	}
	if _, err := c.Take("a:1", reply(nil, errors.New("i/o timeout"))); err == nil {
		t.Fatal("a failed INFO counted")
	}
}

// Acked passes a WAIT that reached want, and otherwise says how many it
// reached and forgets the master's count, so the next write reads it.
func TestAcked(t *testing.T) {
	c := NewCounts(nil)
	c.Set("m:1", 2)
	if err := c.Acked("m:1", reply(int64(2), nil), 2, time.Second); err != nil {
		t.Fatalf("2 of 2: %v", err)
	}
	if _, fresh := c.Get("m:1"); !fresh {
		t.Fatal("a WAIT that passed forgot the count")
	}
	err := c.Acked("m:1", reply(int64(1), nil), 2, time.Second)
	var short *ShortError
	if !errors.As(err, &short) || short.Acked != 1 || short.Want != 2 || err.Error() != "1 of 2 replicas acknowledged within 1s" {
		t.Fatalf("1 of 2: %v", err)
	}
	if _, fresh := c.Get("m:1"); fresh {
		t.Fatal("a WAIT that fell short kept the count")
	}
	cause := errors.New("i/o timeout")
	if err := c.Acked("m:1", reply(nil, cause), 1, time.Second); !errors.Is(err, cause) {
		t.Fatalf("a failed WAIT: %v, want its error", err)
	}
	if Want(0, 0) != 0 || Want(2, 1) != 2 || Want(0, 1) != 1 {
		t.Fatal("Want is not max(online, min)")
	}
}
