package dashboard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// runInBubble starts d.Run and returns a stop that cancels it and waits.
func runInBubble(t *testing.T, d *Dashboard) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait()
	return func() { cancel(); wg.Wait() }
}

func pending(s *subscriber) int { return len(s.ch) }

// TestRunCoalesces: a burst of change notices costs one read now and one
// when MinInterval has passed, whatever the burst's size; then nothing
// until the next notice or RefreshInterval.
func TestRunCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(sampleSnapshot(time.Now()))
		d, err := New(Config{Source: src, MinInterval: time.Second, RefreshInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := d.hub.subscribe("192.0.2.1", false)
		stop := runInBubble(t, d)

		src.notify()
		synctest.Wait()
		if n := src.readCount(); n != 1 || pending(sub) != 1 {
			t.Fatalf("after one notice: %d reads, %d pushes pending; want 1, 1", n, pending(sub))
		}
		<-sub.ch

		for range 50 {
			src.notify()
			synctest.Wait()
		}
		if n := src.readCount(); n != 1 {
			t.Errorf("a burst within MinInterval read the source %d more times, want 0 until it passes", n-1)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := src.readCount(); n != 2 || pending(sub) != 1 {
			t.Errorf("after MinInterval: %d reads, %d pending; want 2, 1", n, pending(sub))
		}

		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if n := src.readCount(); n != 2 {
			t.Errorf("%d reads in a quiet half hour, want none", n-2)
		}
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if n := src.readCount(); n != 3 {
			t.Errorf("%d reads after RefreshInterval, want 3", n)
		}
		stop()
		select {
		case <-d.hub.done:
		default:
			t.Error("Run returned without ending the streams")
		}
	})
}

// TestRunIdleWithoutWatchers: nobody subscribed, no reads, however many
// notices.
func TestRunIdleWithoutWatchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(sampleSnapshot(time.Now()))
		d, err := New(Config{Source: src, MinInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBubble(t, d)
		defer stop()
		for range 20 {
			src.notify()
			time.Sleep(time.Second)
		}
		synctest.Wait()
		if n := src.readCount(); n != 0 {
			t.Errorf("%d reads with nobody watching", n)
		}
	})
}

// TestRunPushAfterAction: a successful action pushes at once, even when
// the source sends no notice.
func TestRunPushAfterAction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(sampleSnapshot(time.Now()))
		d, err := New(Config{Source: src, Actions: newFakeActions(), AdminToken: testAdminToken})
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := d.hub.subscribe("192.0.2.1", false)
		stop := runInBubble(t, d)
		defer stop()
		if w := do(d.Handler(), "POST", "/api/queue/pause", testAdminToken); w.Code != 200 {
			t.Fatalf("pause: %d", w.Code)
		}
		synctest.Wait()
		if pending(sub) != 1 {
			t.Error("no push after the action")
		}
	})
}

type closedSource struct{ *fakeSource }

func (*closedSource) Changes() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// TestRunClosedChanges: a closed Changes channel is not a busy loop; the
// periodic refresh still runs. (A spinning Run would keep synctest.Wait
// from returning.)
func TestRunClosedChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &closedSource{newFakeSource(sampleSnapshot(time.Now()))}
		d, err := New(Config{Source: src, RefreshInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := d.hub.subscribe("192.0.2.1", false)
		stop := runInBubble(t, d)
		defer stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := src.readCount(); n != 1 || pending(sub) != 1 {
			t.Errorf("%d reads, %d pending after one refresh; want 1, 1", n, pending(sub))
		}
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := New(Config{Source: newFakeSource(Snapshot{})})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInBubble(t, d)
		defer stop()
		if err := d.Run(t.Context()); !errors.Is(err, ErrRunTwice) {
			t.Errorf("second Run: %v, want ErrRunTwice", err)
		}
	})
}

// TestHubLatestWins: a stream that has not written its pending push gets
// the newer one instead, never a backlog.
func TestHubLatestWins(t *testing.T) {
	h := newHub(2, 2, 0)
	a, _ := h.subscribe("192.0.2.1", false)
	b, _ := h.subscribe("192.0.2.1", false)
	if _, ok := h.subscribe("192.0.2.1", false); ok {
		t.Error("a third stream was let in with a limit of 2")
	}
	h.broadcast([]byte("one"), []byte("one"))
	h.broadcast([]byte("two"), []byte("two"))
	for _, s := range []*subscriber{a, b} {
		if got := string(<-s.ch); got != "two" || pending(s) != 0 {
			t.Errorf("stream got %q with %d more pending, want only two", got, pending(s))
		}
	}
	h.unsubscribe(a)
	if h.count() != 1 {
		t.Errorf("%d streams after one left, want 1", h.count())
	}
	h.close()
	h.close() // twice is fine
	if _, ok := h.subscribe("192.0.2.1", false); ok {
		t.Error("a stream was let in after close")
	}
}
