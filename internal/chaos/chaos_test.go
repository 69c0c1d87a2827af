package chaos_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/chaos"
	"github.com/lockworker/lockworker/internal/fencecheck"
)

var (
	long   = flag.Bool("chaos.long", false, "run the long chaos run (make chaos) instead of the short one")
	seed   = flag.Uint64("chaos.seed", 0, "seed of the fault sequence; 0 picks one from the clock")
	faults = flag.Int("chaos.faults", 0, "number of faults; default 50 short, 300 long")
)

// binary is the lockworker built once for the package.
var binary string

// TestMain builds lockworker, and doubles as the job's writer: the replicas
// run this test binary with CHAOS_WRITER set as their JOB_COMMAND.
func TestMain(m *testing.M) {
	if os.Getenv(chaos.WriterEnv) != "" {
		os.Exit(chaos.RunWriter(os.Stdin, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "lockworker-chaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lockworker")
	build := exec.Command("go", "build", "-o", binary, "github.com/lockworker/lockworker/cmd/lockworker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build lockworker:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	goleak.VerifyTestMain(m)
}

func cluster(t *testing.T) chaos.ClusterConfig {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return chaos.ClusterConfig{Binary: binary, Writer: exe}
}

// TestChaos is the fault-injection suite: with fencing on, no violation
// over every fault, and at least one stale write rejected.
func TestChaos(t *testing.T) {
	cfg := chaos.Config{Cluster: cluster(t), Seed: *seed, Faults: *faults, Logf: t.Logf}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if cfg.Faults == 0 {
		cfg.Faults = 50
		if *long {
			cfg.Faults = 300
		}
	}
	if *long {
		cfg.Cluster.TTL = 2 * time.Second
		cfg.Cluster.Renew = 600 * time.Millisecond
		cfg.Cluster.Retry = 400 * time.Millisecond
	}
	t.Logf("seed %d (rerun: -chaos.seed=%d)", cfg.Seed, cfg.Seed)
	sum, err := chaos.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	t.Logf("summary:\n%s", sum.Table())
	if *long {
		fmt.Printf("chaos summary\n%s", sum.Table())
	}
	if len(sum.Violations) > 0 {
		t.Errorf("seed %d: %d violations; replica output:\n%s", cfg.Seed, len(sum.Violations), sum.Logs)
	}
	if sum.Rejected == 0 {
		t.Errorf("seed %d: no stale write was rejected: the faults never bit", cfg.Seed)
	}
	if sum.Faults < cfg.Faults {
		t.Errorf("seed %d: %d faults injected, want %d", cfg.Seed, sum.Faults, cfg.Faults)
	}
}

// TestCheckerCatchesUnfencedStaleWrites shows the checker is not vacuous:
// with the store's fencing off, a leader paused past its TTL whose writer
// then writes is flagged every time; with fencing on the same write is
// rejected and the history is clean.
func TestCheckerCatchesUnfencedStaleWrites(t *testing.T) {
	if *long {
		t.Skip("the long run is TestChaos only")
	}
	const rounds = 20
	for _, c := range []struct {
		name     string
		unfenced bool
		rounds   int
	}{
		{"fencing off", true, rounds},
		{"fencing on", false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := chaos.Config{Cluster: cluster(t), Unfenced: c.unfenced}
			cfg.Cluster.Nodes, cfg.Cluster.Workers = 1, 2
			res, err := chaos.StaleWrites(t.Context(), cfg, c.rounds)
			if err != nil {
				t.Fatal(err)
			}
			flagged := 0
			for i, r := range res {
				decreased := false
				for _, v := range r.Violations {
					decreased = decreased || v.Kind == fencecheck.TokenDecreased
				}
				if decreased {
					flagged++
				}
				switch {
				case c.unfenced && (!r.Late.Accepted || !decreased):
					t.Errorf("round %d: late write %+v not flagged: %v", i+1, r.Late, r.Violations)
				case !c.unfenced && (r.Late.Accepted || len(r.Violations) > 0):
					t.Errorf("round %d: late write %+v accepted or violations %v", i+1, r.Late, r.Violations)
				}
			}
			t.Logf("%s: %d of %d rounds flagged", c.name, flagged, len(res))
		})
	}
}
