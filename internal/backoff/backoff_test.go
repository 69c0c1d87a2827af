package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelayGrowsWithinBounds(t *testing.T) {
	p := Policy{Base: 100 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		n      int
		lo, hi time.Duration // [lo, hi)
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second}, // 1.6s capped at Max
		{60, 500 * time.Millisecond, time.Second},
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(tc.n)
			if d < tc.lo || d >= tc.hi {
				t.Fatalf("Delay(%d) = %s, want in [%s, %s)", tc.n, d, tc.lo, tc.hi)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("Delay(%d) returned one value 200 times: no jitter", tc.n)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []Policy{{}, {Base: -1, Max: time.Second}, {Base: time.Second, Max: time.Millisecond}} {
		if p.Validate() == nil {
			t.Errorf("%+v: want an error", p)
		}
	}
	if err := (Policy{Base: time.Millisecond, Max: time.Millisecond}).Validate(); err != nil {
		t.Errorf("Base == Max: %v", err)
	}
}

func TestJitter(t *testing.T) {
	for range 200 {
		d := Jitter(time.Second, 0.1)
		if d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("Jitter(1s, 0.1) = %s", d)
		}
	}
	if d := Jitter(time.Second, 0); d != time.Second {
		t.Fatalf("Jitter(1s, 0) = %s", d)
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(t.Context(), time.Millisecond) {
		t.Fatal("Sleep(1ms) on a live context reported an early end")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a cancelled context reported a full wait")
	}
}
