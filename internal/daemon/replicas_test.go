package daemon

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// shortageWarn is the start of the WARN line a master short of replicas
// gets.
const shortageWarn = `level=WARN msg="Redis master `

// TestClusterWithoutReplicas: on a Redis Cluster created without replicas
// (--cluster-replicas 0) under the cluster default REDIS_MIN_REPLICAS=1,
// no acquire can succeed. The replica says so once at WARN over many
// retries (the master, its online replicas, what REDIS_MIN_REPLICAS asks,
// the two ways out), /readyz answers 503 with that reason and /status
// names the master. Once the master gets a replica, it clears and the
// replica leads.
func TestClusterWithoutReplicas(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, fleet.ClusterSpec{ReplicasPerMaster: -1})
	cfg := load(t, "REDIS_MODE=cluster", "REDIS_URLS="+strings.Join(c.URLs(), ","), "WORKER_ID=w1")
	if cfg.RedisMinReplicas != 1 {
		t.Fatalf("REDIS_MIN_REPLICAS defaults to %d on a Cluster, want 1", cfg.RedisMinReplicas)
	}
	r := start(t, cfg)
	master, _, err := c.MasterOf(t.Context(), r.d.be.Keys.Key())
	if err != nil {
		t.Fatal(err)
	}

	poll.Until(t, 20*time.Second, "the WARN line", func() bool { return strings.Contains(r.logs.String(), shortageWarn) })
	failed := strings.Count(r.logs.String(), "trigger=ACQUIRE_FAILED")
	poll.Until(t, 30*time.Second, "five more failed acquires", func() bool {
		return strings.Count(r.logs.String(), "trigger=ACQUIRE_FAILED") >= failed+5
	})
	logs := r.logs.String()
	if n := strings.Count(logs, shortageWarn); n != 1 {
		t.Fatalf("the shortage was logged at WARN %d times over %d failed acquires, want once\n%s", n,
			strings.Count(logs, "trigger=ACQUIRE_FAILED"), logs)
	}
	warn := logs[strings.Index(logs, shortageWarn):]
	warn = warn[:strings.IndexByte(warn, '\n')]
	for _, want := range []string{"Redis master " + master + " has 0 online replica(s)", "REDIS_MIN_REPLICAS=1 asks for 1",
		"add replicas", "REDIS_MIN_REPLICAS=0", "master=" + master, "onlineReplicas=0", "minReplicas=1"} {
		if !strings.Contains(warn, want) {
			t.Errorf("the WARN line does not say %q: %s", want, warn)
		}
	}
	// Before the WARN (the 5s grace) and after it, no attempt logs above
	// DEBUG: the lane says "too few replicas" once at INFO.
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, "trigger=ACQUIRE_FAILED") && !strings.Contains(line, "level=DEBUG") {
			t.Fatalf("a failed acquire logged above DEBUG: %s\n%s", line, logs)
		}
	}
	if n := strings.Count(logs, `level=INFO msg="Waiting to lead"`); n != 1 || !strings.Contains(logs, "why=few_replicas") {
		t.Fatalf("the lane said why it waits %d times at INFO (want once, few_replicas)\n%s", n, logs)
	}
	if r.leads() != 0 {
		t.Fatal("a replica leads on a Cluster without replicas")
	}
	code, body := get(t, cfg.Port, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, master) || !strings.Contains(body, "REDIS_MIN_REPLICAS=0") {
		t.Fatalf("/readyz = %d %s, want 503 naming %s and the ways out", code, body, master)
	}
	_, body = get(t, cfg.Port, "/status")
	var st statusdoc.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if rs := st.Replicas; rs == nil || len(rs.Masters) != 1 || rs.Masters[0] != (statusdoc.ReplicaMaster{Master: master, OnlineReplicas: 0, MinReplicas: 1}) ||
		!strings.Contains(rs.Reason, "add replicas") {
		t.Fatalf("/status redisReplicas = %+v", st.Replicas)
	}

	addReplica(t, master)
	poll.Until(t, 30*time.Second, "the replica leads once the master has a replica", func() bool { return r.leads() == 1 })
	if code, body := get(t, cfg.Port, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s once the master has a replica", code, body)
	}
	_, body = get(t, cfg.Port, "/status")
	st = statusdoc.Status{}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Replicas != nil {
		t.Fatalf("/status redisReplicas = %+v once the master has a replica", st.Replicas)
	}
	if !strings.Contains(r.logs.String(), "takes acknowledged epoch bumps again") {
		t.Fatal("the end of the shortage was not logged")
	}
	if n := strings.Count(r.logs.String(), shortageWarn); n != 1 {
		t.Fatalf("the shortage was logged at WARN %d times, want once", n)
	}
}

// addReplica joins a new cluster node to master's cluster as its replica
// and returns once master lists it online.
func addReplica(t *testing.T, master string) {
	t.Helper()
	ctx := t.Context()
	n := redistest.Start(t, redistest.Options{Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"}})
	_, port, _ := strings.Cut(master, ":")
	mc := redis.NewClient(&redis.Options{Addr: master, MaintNotificationsConfig: redisopt.NoMaintNotifications()})
	t.Cleanup(func() { _ = mc.Close() })
	id, err := mc.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	nc := n.Client()
	if err := nc.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", port).Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the new node knows the master", func() bool {
		nodes, err := nc.Do(ctx, "CLUSTER", "NODES").Text()
		return err == nil && strings.Contains(nodes, id)
	})
	poll.Until(t, 30*time.Second, "the new node replicates the master", func() bool {
		return nc.Do(ctx, "CLUSTER", "REPLICATE", id).Err() == nil
	})
	poll.Until(t, 30*time.Second, "the new replica online", func() bool {
		info, err := mc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "state=online")
	})
}

// TestReplicaShortageGrace: a master short of replicas for less than
// shortageGrace (a failover's resync) is not said; past it, once at WARN
// however many acquires meet it, and on /readyz's reason; an acquire that
// succeeds clears it, with one INFO line.
func TestReplicaShortageGrace(t *testing.T) {
	logs := &tail.Buffer{}
	s := newReplicaShortage(slog.New(slog.NewTextHandler(logs, nil)))
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	short := &redislock.ReplicasError{Master: "10.0.0.1:6379", Online: 0, Min: 1, Err: redislock.ErrReplicas}
	for range 4 {
		s.note(0, short)
		now = now.Add(time.Second)
	}
	if s.err() != nil || strings.Contains(logs.String(), "WARN") {
		t.Fatalf("said within the grace: %v\n%s", s.err(), logs)
	}
	if !s.said(short) {
		t.Fatal("a shortage's retries within the grace are not routine: each would log at INFO")
	}
	for range 5 {
		s.note(0, short)
		now = now.Add(time.Second)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !s.said(short) || s.err() == nil ||
		!strings.Contains(s.err().Error(), "Redis master 10.0.0.1:6379 has 0 online replica(s)") {
		t.Fatalf("past the grace: %d WARN lines, err %v\n%s", n, s.err(), logs)
	}
	s.note(0, nil)
	if s.err() != nil || !strings.Contains(logs.String(), "level=INFO") {
		t.Fatalf("not cleared by a successful acquire: %v\n%s", s.err(), logs)
	}
}
