package tail

import (
	"strings"
	"sync"
	"testing"
)

func TestKeepsTheLastMaxBytes(t *testing.T) {
	b := &Buffer{Max: 5}
	for _, s := range []string{"ab", "cdef", "g"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "cdefg" {
		t.Fatalf("kept %q, want %q", got, "cdefg")
	}
	var all Buffer
	_, _ = all.Write([]byte(strings.Repeat("x", 1000)))
	if len(all.String()) != 1000 {
		t.Fatalf("Max 0 kept %d bytes, want all 1000", len(all.String()))
	}
}

func TestLines(t *testing.T) {
	var b Buffer
	_, _ = b.Write([]byte("1\n2\n3\n4\n"))
	if got := b.Lines(2); got != "3\n4" {
		t.Fatalf("Lines(2) = %q", got)
	}
	if got := b.Lines(10); got != "1\n2\n3\n4" {
		t.Fatalf("Lines(10) = %q", got)
	}
}

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("0123456789\n"))
			}
		})
	}
	wg.Wait()
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l != "0123456789" {
			t.Fatalf("interleaved line %q", l)
		}
	}
}
