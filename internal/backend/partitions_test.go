package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/roster"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestCheckPartitions: on a fresh Redis the first count is recorded at
// once. After a flush under a live fleet (its replicas still listen on
// the control channel, their records and count not back yet), another
// count waits for them and is refused once a record shows the fleet's;
// with nothing coming back within a registry TTL, it is recorded. A
// recorded count that matches is still refused beside live records of
// another.
func TestCheckPartitions(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t, redistest.Options{})
	c := r.Client()
	url := "REDIS_URLS=" + r.URL()
	b8, b4 := open(t, url, "PARTITIONS=8"), open(t, url, "PARTITIONS=4")
	ctx := t.Context()
	never := func(time.Duration) { t.Error("waited on a Redis no replica listens on") }
	if err := b8.CheckPartitions(ctx, time.Second, never); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(ctx, b8.Keys.Partitions()).Val(); got != "8" {
		t.Fatalf("recorded %q, want 8", got)
	}

	// A fleet of 8 runs: it listens. Redis is flushed.
	ps := c.Subscribe(ctx, b8.Keys.ControlChannel())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan time.Duration, 1)
	done := make(chan error, 1)
	go func() { done <- b4.CheckPartitions(ctx, time.Second, func(d time.Duration) { waited <- d }) }()
	if bound := <-waited; bound <= 0 || bound > b4.Roster.TTL() {
		t.Fatalf("waits up to %v, want up to the registry TTL %v", bound, b4.Roster.TTL())
	}
	if err := b8.Roster.Put(ctx, roster.Record{WorkerID: "w-8", PartitionCount: 8}, false, false); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Var != "PARTITIONS" || !strings.Contains(err.Error(), "4, but the fleet of this LOCK_KEY runs with 8") ||
		!strings.Contains(err.Error(), "w-8") {
		t.Fatalf("PARTITIONS=4 once the fleet's record came back: %v", err)
	}
	if n := c.Exists(ctx, b4.Keys.Partitions()).Val(); n != 0 {
		t.Fatal("the refused count was recorded")
	}

	// Listeners, but nothing comes back: recorded after the bound.
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b4.CheckPartitions(wctx, time.Second, nil); err != nil {
		t.Fatalf("PARTITIONS=4 with nothing coming back: %v", err)
	}
	if got := c.Get(ctx, b4.Keys.Partitions()).Val(); got != "4" {
		t.Fatalf("recorded %q, want 4", got)
	}

	// The count recorded matches, a live record says otherwise.
	if err := b8.Roster.Put(ctx, roster.Record{WorkerID: "w-8", PartitionCount: 8}, false, false); err != nil {
		t.Fatal(err)
	}
	if err := b4.CheckPartitions(ctx, time.Second, never); !errors.As(err, &ce) || !strings.Contains(err.Error(), "w-8") {
		t.Fatalf("PARTITIONS=4 beside a live record of 8: %v", err)
	}
}

// TestFleetListeningOnCluster: in cluster mode the replicas' control
// subscription is sharded, on the channel's slot's master; it is counted
// there.
func TestFleetListeningOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, fleet.ClusterSpec{})
	b := open(t, "REDIS_MODE=cluster", "REDIS_URLS="+strings.Join(cl.URLs(), ","))
	ctx := t.Context()
	if on, err := b.fleetListening(ctx, time.Second); err != nil || on {
		t.Fatalf("before any subscription: listening %v, %v", on, err)
	}
	ps := b.Sources()[0].Subscribe(ctx, b.Keys.ControlChannel())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := b.fleetListening(ctx, time.Second); err != nil || !on {
		t.Fatalf("with a replica's subscription: listening %v, %v", on, err)
	}
}
