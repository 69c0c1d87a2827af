package keyspace

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/testkit/layout"
)

// TestNamesStay holds every name of the default LOCK_KEY as released
// versions use them: a change here is a keyspace change, which ships with
// its migration.
func TestNamesStay(t *testing.T) {
	b := MustNew("lockworker:leader")
	l := b.Lease()
	for _, tt := range []struct{ got, want string }{
		{b.Key(), "{lockworker:leader}"},
		{b.Replicas(), "{lockworker:leader}:replicas"},
		{b.Replica("w-1"), "{lockworker:leader}:replica:w-1"},
		{b.FleetChannel(), "{lockworker:leader}:fleet"},
		{b.History(), "{lockworker:leader}:history"},
		{b.Skips(), "{lockworker:leader}:skips"},
		{l.HistoryEnded(), "{lockworker:leader}:history:ended"},
		{l.StepDown(), "{lockworker:leader}:stepdown"},
		{b.ControlChannel(), "{lockworker:leader}:control"},
		{b.Partitions(), "{lockworker:leader}:partitions"},
		{l.Lock(), "{lockworker:leader}"},
		{l.Epoch(), "{lockworker:leader}:epoch"},
		{l.EpochLast(), "{lockworker:leader}:epoch:last"},
		{l.Fence(), "{lockworker:leader}:epoch:fence"},
		{l.ReleasedChannel(), "{lockworker:leader}:released"},
		{l.Group("k:a"), "{lockworker:leader}:jobs:g:k:a"},
		{l.GroupPrefix(), "{lockworker:leader}:jobs:g:"},
		{l.Ready(), "{lockworker:leader}:jobs:ready"},
		{l.InFlight(), "{lockworker:leader}:jobs:inflight"},
		{l.Parked(), "{lockworker:leader}:jobs:parked"},
		{l.Attempts(), "{lockworker:leader}:jobs:attempts"},
		{l.Stale(), "{lockworker:leader}:jobs:stale"},
		{l.Counters(), "{lockworker:leader}:jobs:counters"},
		{l.Last(), "{lockworker:leader}:jobs:last"},
		{l.Dead(), "{lockworker:leader}:jobs:dead"},
		{l.DeadLetter("01J"), "{lockworker:leader}:jobs:dead:01J"},
		{l.DeadLetterPrefix(), "{lockworker:leader}:jobs:dead:"},
		{l.Paused(), "{lockworker:leader}:jobs:paused"},
		{l.Delayed(), "{lockworker:leader}:jobs:delayed"},
		{l.Idempotency("k-1"), "{lockworker:leader}:jobs:idem:k-1"},
		{l.IdempotencyPrefix(), "{lockworker:leader}:jobs:idem:"},
		{l.Schedules(), "{lockworker:leader}:jobs:schedules"},
		{l.ScheduleNext(), "{lockworker:leader}:jobs:schedule:next"},
		{l.ScheduleLast(), "{lockworker:leader}:jobs:schedule:last"},
		{l.EnqueuedChannel(), "{lockworker:leader}:jobs:enqueued"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
}

// TestOneSlot: every name carries the key's own hash tag, so all of them
// hash to one Redis Cluster slot.
func TestOneSlot(t *testing.T) {
	for _, k := range []string{"lockworker:leader", "app:{leader}", "x"} {
		b := MustNew(k)
		l := b.Lease()
		tag := HashTag(b.Key())
		for _, name := range []string{b.Key(), b.Replicas(), b.Replica("w"), b.FleetChannel(), b.History(), b.Skips(),
			l.HistoryEnded(), l.StepDown(), b.ControlChannel(), b.Partitions(), l.Lock(), l.Epoch(), l.EpochLast(), l.Fence(),
			l.ReleasedChannel(), l.Group("k:x"), l.Ready(), l.InFlight(), l.Parked(), l.Attempts(), l.Stale(),
			l.Counters(), l.Last(), l.Dead(), l.DeadLetter("id"), l.Paused(), l.EnqueuedChannel(),
			l.Delayed(), l.Idempotency("k"), l.Schedules(), l.ScheduleNext(), l.ScheduleLast()} {
			if tag == "" || HashTag(name) != tag || !strings.HasPrefix(name, b.Key()) {
				t.Errorf("LOCK_KEY %q: %q has tag %q, want %q under %q", k, name, HashTag(name), tag, b.Key())
			}
		}
	}
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		lockKey, key string // key "" means refused
	}{
		{"lockworker:leader", "{lockworker:leader}"},
		{"app:{leader}", "app:{leader}"},
		{"{a}b{c}", "{a}b{c}"},
		{"a{}b", "{a{}b}"}, // an empty tag is none: tagged whole
		{"", ""},
		{"}x", ""}, // "{}x}" would start with the empty tag
	} {
		b, err := New(tt.lockKey)
		switch {
		case tt.key == "" && (err == nil || !b.IsZero()):
			t.Errorf("New(%q) = %q, %v; want refused", tt.lockKey, b.Key(), err)
		case tt.key != "" && (err != nil || b.Key() != tt.key):
			t.Errorf("New(%q) = %q, %v; want %q", tt.lockKey, b.Key(), err, tt.key)
		}
		if ValidLockKey(tt.lockKey) != (tt.key != "") {
			t.Errorf("ValidLockKey(%q) = %v", tt.lockKey, !(tt.key != ""))
		}
	}
}

func TestHashTag(t *testing.T) {
	for _, tt := range []struct{ key, tag string }{
		{"{a}", "a"}, {"x{a}y", "a"}, {"{}a", ""}, {"{a", ""}, {"a}", ""}, {"{a}{b}", "a"}, {"", ""},
	} {
		if got := HashTag(tt.key); got != tt.tag {
			t.Errorf("HashTag(%q) = %q, want %q", tt.key, got, tt.tag)
		}
	}
}

func ExampleBase() {
	b := MustNew("lockworker:leader")
	fmt.Println(b.Replicas())
	fmt.Println(b.Lease().Epoch())
	fmt.Println(b.Lease().Ready())
	// Output:
	// {lockworker:leader}:replicas
	// {lockworker:leader}:epoch
	// {lockworker:leader}:jobs:ready
}

// With one partition a partition's names are the Base's lease's; with more,
// each partition has a hash tag of its own, made from the Base's, and its
// HistoryEnded stays under the Base's tag beside the history.
func TestPartitions(t *testing.T) {
	for _, k := range []string{"lockworker:leader", "app:{leader}:x", "a{}b"} {
		b := MustNew(k)
		if b.Partition(0, 1) != b.Lease() {
			t.Errorf("%q: partition 0 of 1 is not the lease", k)
		}
		tags := map[string]bool{HashTag(b.Key()): true}
		for n := range 16 {
			l := b.Partition(n, 16)
			tag := HashTag(l.Lock())
			if want := HashTag(b.Key()) + ":p" + fmt.Sprint(n); tag != want {
				t.Fatalf("%q partition %d: tag %q, want %q", k, n, tag, want)
			}
			if tags[tag] {
				t.Fatalf("%q partition %d: tag %q used twice", k, n, tag)
			}
			tags[tag] = true
			for _, name := range []string{l.Epoch(), l.Fence(), l.ReleasedChannel(), l.Ready(), l.Group("k:x"), l.StepDown(),
				l.DeadLetter("id"), l.Paused(), l.EnqueuedChannel(), l.Delayed(), l.Idempotency("k"), l.Schedules(),
				l.ScheduleNext(), l.ScheduleLast()} {
				if HashTag(name) != tag {
					t.Errorf("%q partition %d: %q has tag %q, want %q", k, n, name, HashTag(name), tag)
				}
			}
			if got := HashTag(l.HistoryEnded()); got != HashTag(b.Key()) {
				t.Errorf("%q partition %d: HistoryEnded %q has tag %q, want the base's", k, n, l.HistoryEnded(), got)
			}
		}
	}
	l := MustNew("lockworker:leader").Partition(3, 8)
	for _, tt := range []struct{ got, want string }{
		{l.Lock(), "{lockworker:leader:p3}"},
		{l.Ready(), "{lockworker:leader:p3}:jobs:ready"},
		{l.HistoryEnded(), "{lockworker:leader}:history:ended:p3"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
}

// TestLayoutIsTheCode holds the layout in doc.go, the one description of
// the keys, to the names this package makes: every name written there is
// one a method returns, and every method's name is written there.
func TestLayoutIsTheCode(t *testing.T) {
	b := MustNew("lockworker:leader")
	one, l := b.Lease(), b.Partition(3, 8) // L is K, and L is not K
	code := map[string]string{
		"K:partitions":       b.Partitions(),
		"K:replicas":         b.Replicas(),
		"K:replica:<worker>": b.Replica("w-1"),
		"K:fleet":            b.FleetChannel(),
		"K:history":          b.History(),
		"K:history:ended":    one.HistoryEnded(),
		"K:skips":            b.Skips(),
		"K:control":          b.ControlChannel(),
		"L":                  l.Lock(),
		"L:epoch":            l.Epoch(),
		"L:epoch:last":       l.EpochLast(),
		"L:epoch:fence":      l.Fence(),
		"L:released":         l.ReleasedChannel(),
		"L:stepdown":         l.StepDown(),
		"J:g:<member>":       l.Group("k:a"),
		"J:ready":            l.Ready(),
		"J:inflight":         l.InFlight(),
		"J:parked":           l.Parked(),
		"J:attempts":         l.Attempts(),
		"J:stale":            l.Stale(),
		"J:counters":         l.Counters(),
		"J:last":             l.Last(),
		"J:dead":             l.Dead(),
		"J:dead:<id>":        l.DeadLetter("01J"),
		"J:paused":           l.Paused(),
		"J:enqueued":         l.EnqueuedChannel(),
		"J:delayed":          l.Delayed(),
		"J:idem:<key>":       l.Idempotency("k-1"),
		"J:schedules":        l.Schedules(),
		"J:schedule:next":    l.ScheduleNext(),
		"J:schedule:last":    l.ScheduleLast(),
	}
	names, err := layout.Read("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{"worker": "w-1", "member": "k:a", "id": "01J", "key": "k-1"}
	for _, name := range names {
		want, ok := code[name]
		if !ok {
			t.Errorf("doc.go names %s, which no method of this package returns", name)
			continue
		}
		if got := layout.Expand(name, b.Key(), l.Lock(), vals); got != want {
			t.Errorf("doc.go's %s is %s; the code names it %s", name, got, want)
		}
	}
	for name := range code {
		if !slices.Contains(names, name) {
			t.Errorf("%s is missing from doc.go's layout", name)
		}
	}
	if got := l.HistoryEnded(); got != b.Key()+":history:ended:p3" {
		t.Errorf("a partition's HistoryEnded is %s", got)
	}
}
