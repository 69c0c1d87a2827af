package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestEvictingRedisRefusedAtStart: a replica whose Redis evicts keys
// returns a configuration error (exit 2) at start-up that names the node,
// its policy and the fix, and leads nothing; for both policies the issue
// saw break fencing, with and without partitions.
func TestEvictingRedisRefusedAtStart(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/partitions=%d", policy, p), func(t *testing.T) {
				s := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory-policy", policy}})
				r := start(t, load(t, "REDIS_URLS="+s.URL(), fmt.Sprint("PARTITIONS=", p), "WORKER_ID=w1"))
				var err error
				select {
				case err = <-r.done:
					r.done <- err
				case <-time.After(10 * time.Second):
					t.Fatal("a replica on an evicting Redis kept running")
				}
				var ee *backend.EvictionError
				if !errors.Is(err, config.ErrInvalid) || !errors.As(err, &ee) || ee.Node != s.Addr() || ee.Policy != policy {
					t.Fatalf("Run = %v, want an EvictionError for %s %s", err, s.Addr(), policy)
				}
				for _, want := range []string{s.Addr(), "maxmemory-policy " + policy, "CONFIG SET maxmemory-policy noeviction", "redis.conf"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the message %q does not say %q", err, want)
					}
				}
				if r.leads() != 0 {
					t.Fatal("a lane led on an evicting Redis")
				}
				if n := s.Client().Exists(t.Context(), r.d.be.Keys.Partition(0, p).Lock()).Val(); n != 0 {
					t.Fatal("the lock was taken on an evicting Redis")
				}
			})
		}
	}
}

// TestEvictionPolicyChangedAtRunTime: when a master's policy is changed to
// an evicting one while a replica leads, it gives every leadership up
// (the locks are released), says so on /readyz (503), /status and the
// metric, and acquires nothing; once the policy is noeviction again it
// leads again.
func TestEvictionPolicyChangedAtRunTime(t *testing.T) {
	t.Parallel()
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprint("partitions=", p), func(t *testing.T) {
			s := redistest.Start(t, redistest.Options{})
			cfg := load(t, "REDIS_URLS="+s.URL(), fmt.Sprint("PARTITIONS=", p), "WORKER_ID=w1")
			r := start(t, cfg)
			poll.Until(t, 10*time.Second, "every lane leads", func() bool { return r.leads() == p })
			if code, _ := get(t, cfg.Port, "/readyz"); code != http.StatusOK {
				t.Fatalf("/readyz = %d on a noeviction Redis", code)
			}

			if err := s.Client().ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, 10*time.Second, "every leadership given up and the locks released", func() bool {
				for n := range p {
					if s.Client().Exists(t.Context(), r.d.be.Keys.Partition(n, p).Lock()).Val() != 0 {
						return false
					}
				}
				return r.leads() == 0
			})
			if code, _ := get(t, cfg.Port, "/readyz"); code != http.StatusServiceUnavailable {
				t.Fatalf("/readyz = %d on an evicting Redis, want 503", code)
			}
			_, body := get(t, cfg.Port, "/status")
			var st statusdoc.Status
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatal(err)
			}
			if e := st.Eviction; e == nil || e.Safe || len(e.Nodes) != 1 || e.Nodes[0].Policy != "allkeys-lru" ||
				!strings.Contains(e.Reason, "CONFIG SET maxmemory-policy noeviction") {
				t.Fatalf("/status redisEviction = %+v", st.Eviction)
			}
			_, metrics := get(t, cfg.Port, "/metrics")
			want := fmt.Sprintf(`lockworker_redis_eviction_unsafe{node=%q,policy="allkeys-lru"} 1`, s.Addr())
			if !strings.Contains(metrics, want) {
				t.Fatalf("/metrics lacks %s", want)
			}
			if !strings.Contains(r.logs.String(), "Redis evicts keys") {
				t.Fatal("no error logged")
			}
			// Refused, not merely slow: another check passes and still none leads.
			checks := strings.Count(r.logs.String(), "trigger=ACQUIRE_FAILED")
			poll.Until(t, 10*time.Second, "a refused attempt", func() bool {
				return strings.Count(r.logs.String(), "trigger=ACQUIRE_FAILED") > checks
			})
			if r.leads() != 0 {
				t.Fatal("a lane leads on an evicting Redis")
			}
			// Every lane says why it does not lead.
			_, body = get(t, cfg.Port, "/status")
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatal(err)
			}
			if len(st.Lanes) != p {
				t.Fatalf("/status lanes %+v, want %d", st.Lanes, p)
			}
			for _, l := range st.Lanes {
				if l.Token != 0 || !strings.Contains(l.Reason, "maxmemory-policy allkeys-lru") {
					t.Fatalf("/status lane %+v: want no token and the eviction as its reason", l)
				}
			}

			if err := s.Client().ConfigSet(t.Context(), "maxmemory-policy", "noeviction").Err(); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, 15*time.Second, "every lane leads again", func() bool { return r.leads() == p })
			if code, _ := get(t, cfg.Port, "/readyz"); code != http.StatusOK {
				t.Fatalf("/readyz = %d once noeviction is back", code)
			}
			_, metrics = get(t, cfg.Port, "/metrics")
			if want := fmt.Sprintf(`lockworker_redis_eviction_unsafe{node=%q,policy="noeviction"} 0`, s.Addr()); !strings.Contains(metrics, want) {
				t.Fatalf("/metrics lacks %s", want)
			}
		})
	}
}

// get is the status code and body of GET path on the replica's port.
func get(t *testing.T, port int, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestFollowerObservesTheLeadersToken: a follower learns the leader's
// token (from the lock's value when its acquire is refused, and from the
// registry), so its own next acquire's floor is at least that token.
func TestFollowerObservesTheLeadersToken(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	leader := start(t, load(t, "REDIS_URLS="+s.URL(), "WORKER_ID=w1"))
	poll.Until(t, 10*time.Second, "w1 leads", func() bool { return leader.leads() == 1 })
	token := leader.d.lanes[0].leader.Snapshot().Token
	follower := start(t, load(t, "REDIS_URLS="+s.URL(), "WORKER_ID=w2"))
	poll.Until(t, 10*time.Second, "w2 observes w1's token", func() bool {
		return follower.d.lanes[0].leader.Snapshot().Observed >= token
	})
	if follower.leads() != 0 {
		t.Fatal("w2 leads beside w1")
	}
}
