package poll

import (
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	took := Until(t, time.Second, "three checks", func() bool { n++; return n == 3 })
	if n != 3 || took < 2*Interval {
		t.Fatalf("checked %d times in %s", n, took)
	}
}

// fatalT records Fatalf instead of ending the test.
type fatalT struct {
	testing.TB
	failed bool
}

func (f *fatalT) Helper()               {}
func (f *fatalT) Fatalf(string, ...any) { f.failed = true; panic(f) }

func TestUntilFailsAfterLimit(t *testing.T) {
	f := &fatalT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != f {
				panic(r)
			}
		}()
		Until(f, 20*time.Millisecond, "never", func() bool { return false })
	}()
	if !f.failed {
		t.Fatal("Until returned for a condition that never held")
	}
}
