package main

import (
	"context"
	"strings"
	"sync/atomic"

	redigo "github.com/gomodule/redigo/redis"
)

// monitor splits the commands Redis executes, from its MONITOR feed, into
// those a client sent (its round trips, a script call being one) and
// those scripts ran ("[0 lua]"): INFO commandstats counts both alike, and
// Redis 7.0 keeps no per-client count. The bench's own INFO is left out.
//
// MONITOR is read with redigo: go-redis's MonitorCmd reads from a
// goroutine of its own that cannot be waited for (as cmd/peerbench found).
type monitor struct {
	conn      redigo.Conn
	done      chan struct{}
	sent, lua atomic.Int64
}

func startMonitor(ctx context.Context, addr string) (*monitor, error) {
	conn, err := redigo.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Do("MONITOR"); err != nil {
		_ = conn.Close()
		return nil, err
	}
	m := &monitor{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			line, err := redigo.String(conn.Receive())
			if err != nil {
				return
			}
			switch {
			case strings.Contains(line, " lua] "):
				m.lua.Add(1)
			case strings.Contains(line, `"info" "commandstats"`):
			default:
				m.sent.Add(1)
			}
		}
	}()
	return m, nil
}

// stop ends the feed and returns the counts.
func (m *monitor) stop() (sent, lua int64) {
	_ = m.conn.Close()
	<-m.done
	return m.sent.Load(), m.lua.Load()
}
