package backend

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// openURLs opens a backend for the URLs, closed at test end.
func openURLs(t *testing.T, urls ...string) *Backend {
	t.Helper()
	return open(t, "REDIS_URLS="+strings.Join(urls, ","))
}

// TestProbe: refusals that no retry can change are configuration errors
// naming REDIS_URLS and the node; a node that is down, or fine, is not.
func TestProbe(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	locked := redistest.Start(t, redistest.Options{})
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	down := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	for _, tc := range []struct {
		name string
		urls []string
		want string // "" for no error
	}{
		{"up", []string{s.URL()}, ""},
		{"down", []string{down}, ""},
		{"wrong password", []string{"redis://:nope@" + locked.Addr()}, "URL 1 (" + locked.Addr() + "): WRONGPASS"},
		{"no password", []string{locked.URL()}, "URL 1 (" + locked.Addr() + "): NOAUTH"},
		{"right password", []string{"redis://:pw@" + locked.Addr()}, ""},
		{"database out of range", []string{s.URL() + "/42"}, "ERR DB index is out of range"},
		{"TLS to a plain server", []string{"rediss://" + s.Addr()}, "the server does not speak TLS"},
		{"TLS to a server that is down", []string{"rediss://" + strings.TrimPrefix(down, "redis://")}, ""},
		{"third node refuses", []string{s.URL(), down, "redis://:nope@" + locked.Addr()}, "URL 3 ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := openURLs(t, tc.urls...)
			err := b.Probe(t.Context(), time.Second)
			if tc.want != "" && err == nil {
				// A ping that timed out (an overloaded host) is not a
				// refusal: Probe rightly passes it, and the next one is
				// answered.
				poll.Until(t, 10*time.Second, "a refusal", func() bool {
					err = b.Probe(t.Context(), time.Second)
					return err != nil
				})
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Probe = %v, want nil", err)
				}
				return
			}
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Var != "REDIS_URLS" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Probe = %v, want a REDIS_URLS error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "nope") {
				t.Fatalf("the password is in %q", err)
			}
		})
	}
}

// TestProbeWaitsOutASlowAnswer: a node whose first answer does not come
// in REDIS_NODE_TIMEOUT (a handshake slowed by a busy host) is asked
// again within Probe's time, so its refusal is still seen at start-up.
func TestProbeWaitsOutASlowAnswer(t *testing.T) {
	t.Parallel()
	locked := redistest.Start(t, redistest.Options{})
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	// The first connection is read and never answered; the later ones
	// reach the server.
	wg.Go(func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n == 0 {
				wg.Go(func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() })
				continue
			}
			up, err := net.Dial("tcp", locked.Addr())
			if err != nil {
				_ = c.Close()
				continue
			}
			wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		}
	})
	b := openURLs(t, "redis://:nope@"+ln.Addr().String())
	err = b.Probe(t.Context(), 2*time.Second)
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("Probe = %v, want the refusal behind the slow first answer", err)
	}
}
