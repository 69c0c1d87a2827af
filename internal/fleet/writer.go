package fleet

import (
	"io"
	"sync"
)

// LockedWriter serialises writes to W, so a supervisor and its children's
// output copiers (Spec.Output) can share one writer without interleaving
// within a write.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}
