package redistest

import (
	"context"
	"testing"
	"time"
)

func TestStartFreezeRestart(t *testing.T) {
	t.Parallel() // each starts servers of its own
	s := Start(t, Options{AppendOnly: true})
	c := s.Client()
	ctx := t.Context()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := c.Get(short, "k").Err(); err == nil {
		t.Fatal("a frozen server answered")
	}
	s.Thaw()
	s.Restart()
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after AOF restart: got %q, %v; want v", got, err)
	}
	if s.Port == 6379 {
		t.Fatal("test server on 6379")
	}
}
