package main

import (
	"context"
	"strings"
	"sync"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
)

// commandCounter counts the commands each named client sends, from Redis's
// MONITOR feed. Redis 7.0 keeps no per-client command count (CLIENT LIST
// has no tot-cmds before 7.2), and INFO commandstats is server-wide, so the
// feed is the only per-client source. Commands run inside Lua scripts
// appear as "lua" and are not counted: they are not sent by the client.
//
// MONITOR is read with redigo: go-redis's MonitorCmd reads from a goroutine
// of its own that cannot be waited for.
type commandCounter struct {
	conn  redigo.Conn
	names *redis.Client // answers CLIENT LIST, to name the connections
	done  chan struct{}

	mu     sync.Mutex
	byName map[string]map[string]int // client name -> command -> count
	addrs  map[string]string         // connection address -> client name
	err    error
}

// startCounting opens a MONITOR connection to addr and counts until stop.
func startCounting(ctx context.Context, addr string, o options) (*commandCounter, error) {
	conn, err := redigo.DialContext(ctx, "tcp", addr, redigo.DialConnectTimeout(o.nodeTimeout))
	if err != nil {
		return nil, err
	}
	if _, err := conn.Do("MONITOR"); err != nil {
		_ = conn.Close()
		return nil, err
	}
	c := &commandCounter{
		conn:   conn,
		names:  newClient(addr, o),
		done:   make(chan struct{}),
		byName: map[string]map[string]int{},
		addrs:  map[string]string{},
	}
	go c.read(ctx)
	return c, nil
}

func (c *commandCounter) read(ctx context.Context) {
	defer close(c.done)
	for {
		line, err := redigo.String(c.conn.Receive())
		if err != nil {
			return // stop closed the connection
		}
		addr, cmd, ok := parseMonitorLine(line)
		if !ok || addr == "lua" {
			continue
		}
		name, known := c.addrs[addr]
		if !known {
			c.learnNames(ctx)
			name = c.addrs[addr]
		}
		c.mu.Lock()
		if c.byName[name] == nil {
			c.byName[name] = map[string]int{}
		}
		c.byName[name][cmd]++
		c.mu.Unlock()
	}
}

// learnNames maps every connection's address to its client name. A
// connection that closed before it was looked up stays unnamed ("").
func (c *commandCounter) learnNames(ctx context.Context) {
	list, err := c.names.ClientList(ctx).Result()
	if err != nil {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		return
	}
	for line := range strings.Lines(list) {
		var addr, name string
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "addr="); ok {
				addr = v
			} else if v, ok := strings.CutPrefix(f, "name="); ok {
				name = v
			}
		}
		c.addrs[addr] = name
	}
}

// parseMonitorLine reads `1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" "sha" "1" "k" ...`
// and returns the client address ("lua" for script calls) and the command;
// a script call is labelled with its first key (`EVALSHA k`), which tells
// the lock's scripts from the job queue's.
func parseMonitorLine(line string) (addr, cmd string, ok bool) {
	_, rest, ok := strings.Cut(line, "[")
	if !ok {
		return "", "", false
	}
	src, rest, ok := strings.Cut(rest, "] \"")
	if !ok {
		return "", "", false
	}
	_, addr, ok = strings.Cut(src, " ")
	if !ok {
		return "", "", false
	}
	args := strings.Split(strings.TrimSuffix(rest, "\""), "\" \"")
	cmd = strings.ToUpper(args[0])
	if (cmd == "EVALSHA" || cmd == "EVAL") && len(args) > 3 && args[2] != "0" {
		cmd += " " + args[3]
	}
	return addr, cmd, true
}

// stop ends the feed, waits for the reader and returns the counts per
// client name.
func (c *commandCounter) stop() (map[string]map[string]int, error) {
	_ = c.conn.Close()
	<-c.done
	_ = c.names.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName, c.err
}
