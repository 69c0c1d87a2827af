package backoff

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy is exponential backoff with jitter: try n waits Base*2^(n-1),
// capped at Max, drawn at random from [d/2, d).
type Policy struct {
	// Base is the first step; > 0.
	Base time.Duration
	// Max caps every step; >= Base.
	Max time.Duration
}

// Validate reports a policy that cannot work.
func (p Policy) Validate() error {
	var errs []error
	if p.Base <= 0 {
		errs = append(errs, fmt.Errorf("backoff: Base must be positive, got %s", p.Base))
	}
	if p.Max < p.Base {
		errs = append(errs, fmt.Errorf("backoff: Max (%s) must not be below Base (%s)", p.Max, p.Base))
	}
	return errors.Join(errs...)
}

// Delay is the wait after the n-th consecutive failure (n >= 1; smaller n
// counts as 1).
func (p Policy) Delay(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// Jitter spreads d at random by ±frac (0 <= frac < 1), for periodic work
// such as polling that must not run in lockstep across replicas.
func Jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 || frac <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}

// Sleep waits for d, or until ctx is done. It reports whether the full
// wait passed (false: ctx ended it).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
