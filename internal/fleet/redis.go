package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RedisSpec describes a redis-server to start.
type RedisSpec struct {
	// Name identifies the server; default "redis".
	Name string
	// Path is the redis-server executable. Default: "redis-server" from PATH.
	Path string
	// Dir holds the data files and the log. Default: a new temporary
	// directory, removed by Fleet.Close once every process is reaped (so a
	// server killed and restarted on it keeps its AOF until then).
	Dir string
	// AppendOnly turns on AOF with appendfsync always.
	AppendOnly bool
	// Args are extra redis-server arguments, e.g. "--requirepass", "x".
	Args []string
	// ConfigFile, when set, is loaded first (redis-server's first
	// argument); a sentinel needs one it can rewrite.
	ConfigFile string
	// Port is the server's port. Default: a free loopback port (never 6379).
	Port int
	// ReadyTimeout bounds the wait for PING to answer; default 10s.
	ReadyTimeout time.Duration
}

// Redis is a redis-server process of the fleet.
type Redis struct {
	*Process
	// Dir holds the server's data and its log, redis.log.
	Dir string
}

// ErrNoRedisServer means redis-server is not installed (not in PATH).
var ErrNoRedisServer = errors.New("fleet: redis-server not found in PATH")

// StartRedis starts a redis-server on a free loopback port, bound to
// 127.0.0.1 only, and waits until it answers PING.
func (f *Fleet) StartRedis(ctx context.Context, spec RedisSpec) (*Redis, error) {
	if err := spec.fill(); err != nil {
		return nil, err
	}
	temp := spec.Dir == ""
	if temp {
		dir, err := os.MkdirTemp("", "lockworker-redis-")
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		spec.Dir = dir
	}
	p, err := f.Start(Spec{Name: spec.Name, Path: spec.Path, Args: spec.args(), Env: []string{}, Port: spec.Port, Dir: spec.Dir})
	if err != nil {
		if temp {
			_ = os.RemoveAll(spec.Dir)
		}
		return nil, err
	}
	if temp {
		f.removeOnClose(spec.Dir)
	}
	r := &Redis{Process: p, Dir: spec.Dir}
	ctx, cancel := context.WithTimeout(ctx, spec.ReadyTimeout)
	defer cancel()
	if err := r.waitReady(ctx); err != nil {
		_ = p.Kill()
		<-p.Done()
		return nil, err
	}
	return r, nil
}

// fill sets the defaults that need no directory.
func (spec *RedisSpec) fill() error {
	if spec.Name == "" {
		spec.Name = "redis"
	}
	if spec.ReadyTimeout <= 0 {
		spec.ReadyTimeout = 10 * time.Second
	}
	var err error
	if spec.Path == "" {
		if spec.Path, err = lookRedis(); err != nil {
			return err
		}
	}
	if spec.Port == 0 {
		spec.Port, err = FreePort()
	}
	return err
}

// args is the server's command line: loopback only, no RDB snapshots, the
// log in Dir, AOF (appendfsync always) when asked.
func (spec *RedisSpec) args() []string {
	var args []string
	if spec.ConfigFile != "" {
		args = append(args, spec.ConfigFile)
	}
	args = append(args,
		"--port", strconv.Itoa(spec.Port),
		"--bind", "127.0.0.1",
		"--dir", spec.Dir,
		"--save", "",
		"--daemonize", "no",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(spec.Dir, "redis.log"),
	)
	if spec.AppendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, spec.Args...)
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)) }

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return "redis://" + r.Addr() }

// Log returns the server's log file, for error messages.
func (r *Redis) Log() string {
	b, _ := os.ReadFile(filepath.Join(r.Dir, "redis.log"))
	return string(b)
}

func (r *Redis) waitReady(ctx context.Context) error {
	var err error
	for {
		if err = ping(ctx, r.Addr()); err == nil {
			return nil
		}
		select {
		case <-r.Done():
			return fmt.Errorf("fleet: %s exited before answering PING: %v\n%s", r.Name, r.Err(), r.Log())
		case <-ctx.Done():
			return fmt.Errorf("fleet: %s not answering PING: %w (last: %v)", r.Name, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ping sends one RESP PING; it needs no client library.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// lookRedis finds redis-server in PATH.
func lookRedis() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoRedisServer
	}
	return p, nil
}
