package tail

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps the last Max bytes written (all of
// them when Max is 0). The zero value keeps everything and is ready to use.
type Buffer struct {
	// Max bounds what is kept; 0 keeps everything.
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write appends p, dropping the oldest bytes beyond Max. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; b.Max > 0 && over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Lines returns the last n lines kept (all when fewer), without the final
// newline.
func (b *Buffer) Lines(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
