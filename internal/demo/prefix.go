package demo

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// prefixWriter writes each complete line with a prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
	buf    bytes.Buffer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	r := bufio.NewReader(&p.buf)
	var rest []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			rest = line
			break
		}
		if _, err := io.WriteString(p.w, p.prefix+string(line)); err != nil {
			return 0, err
		}
	}
	p.buf.Reset()
	p.buf.Write(rest)
	return len(b), nil
}
