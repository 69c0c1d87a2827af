package backend

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestReach: a one-shot command goes on when the first node and a
// majority answer; otherwise each node that did not answer is named as
// unreachable, and a refusal stays a configuration error.
func TestReach(t *testing.T) {
	t.Parallel()
	up := []string{redistest.Start(t, redistest.Options{}).URL(), redistest.Start(t, redistest.Options{}).URL()}
	locked := redistest.Start(t, redistest.Options{})
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	downAddr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	down := "redis://" + downAddr
	downMsg := "cannot reach Redis at " + downAddr + " (REDIS_URLS): connection refused"
	for _, tc := range []struct {
		name string
		urls []string
		want string // "" for no error
	}{
		{"up", up[:1], ""},
		{"down", []string{down}, downMsg},
		{"unknown host", []string{"redis://no-such-host.invalid:6379"}, "cannot reach Redis at no-such-host.invalid:6379 (REDIS_URLS): lookup no-such-host.invalid"},
		{"Redlock, a later node down", []string{up[0], down, up[1]}, ""},
		{"Redlock, the first node down", []string{down, up[0], up[1]}, downMsg},
		{"wrong password", []string{"redis://:nope@" + locked.Addr()}, "URL 1 (" + locked.Addr() + "): WRONGPASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(config.Getenv([]string{"REDIS_URLS=" + strings.Join(tc.urls, ","), "LOCK_TTL=2s", "RENEW_INTERVAL=500ms"}))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			err = b.Reach(t.Context(), 5*time.Second)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Reach = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Reach = %v, want an error saying %q", err, tc.want)
			case strings.Contains(tc.want, "cannot reach"):
				if ue := (*UnreachableError)(nil); !errors.As(err, &ue) {
					t.Fatalf("Reach = %v, want an *UnreachableError", err)
				}
			case tc.want != "":
				if ce := (*config.Error)(nil); !errors.As(err, &ce) || strings.Contains(err.Error(), "nope") {
					t.Fatalf("Reach = %v, want a REDIS_URLS error without the password", err)
				}
			}
		})
	}
}
