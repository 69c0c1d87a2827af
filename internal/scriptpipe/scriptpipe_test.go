package scriptpipe

import (
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// count increments KEYS[1] and returns the new value.
var count = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

func batch() Batch {
	return Batch{Script: count, Keys: []string{"n"}, Before: [][]any{{"SET", "before", "1"}}, After: [][]any{{"GET", "n"}}}
}

// TestRunFallsBackToEval: on a server without the script, the batch goes
// again with the script's body; the script runs once, and the commands
// after it see its write.
func TestRunFallsBackToEval(t *testing.T) {
	c := redistest.Start(t, redistest.Options{}).Client()
	ctx := t.Context()
	for want := int64(1); want <= 2; want++ { // cold, then cached by the EVAL
		_, r := Run(ctx, c, batch(), nil)
		if n, err := r.Script.Int64(); err != nil || n != want || r.NoScript() {
			t.Fatalf("run %d: script %d, %v", want, n, err)
		}
		if v, err := r.After[0].Text(); err != nil || v != strconv.FormatInt(want, 10) {
			t.Fatalf("run %d: after %q, %v", want, v, err)
		}
		if err := r.Before[0].Err(); err != nil {
			t.Fatalf("run %d: before: %v", want, err)
		}
	}
}

// TestRunAgainDecides: again sees the NOSCRIPT reply and may keep it (the
// script then never ran) or change what the second send carries.
func TestRunAgainDecides(t *testing.T) {
	c := redistest.Start(t, redistest.Options{}).Client()
	ctx := t.Context()
	first, r := Run(ctx, c, batch(), func(first Reply) (Batch, bool) {
		if !first.NoScript() || len(first.After) != 1 {
			t.Errorf("again got %+v", first)
		}
		return Batch{}, false
	})
	if !r.NoScript() || r.Script != first.Script || c.Exists(ctx, "n").Val() != 0 {
		t.Fatalf("kept reply: NOSCRIPT %v, script ran %d times", r.NoScript(), c.Exists(ctx, "n").Val())
	}
	first, r = Run(ctx, c, batch(), func(Reply) (Batch, bool) {
		b := batch()
		b.After = nil
		return b, true
	})
	if n, err := r.Script.Int64(); err != nil || n != 1 || len(r.After) != 0 || !first.NoScript() || len(first.After) != 1 {
		t.Fatalf("second send: script %d, %v, %d after; first NOSCRIPT %v", n, err, len(r.After), first.NoScript())
	}
}
