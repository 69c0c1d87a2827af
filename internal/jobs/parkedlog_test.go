package jobs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// A key that parks is one WARN line (key, partition, job, error), and its
// retries are not a line each: the first failure warns, the retries
// after it speak at DEBUG only.
func TestParkedKeyIsLoggedOnce(t *testing.T) {
	e := newEnv(t)
	logs := &tail.Buffer{}
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, Partition: 2, Partitions: 4}, HandlerFunc(func(context.Context, Job, Lease) error {
		return errors.New("downstream says no")
	}), func(c *WorkerConfig) {
		c.MaxAttempts = 5
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ids := e.enqueueKey(t, q, "ledger-7", "entry ", 3)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 5*time.Second, "the key parked", func() bool { return stats(t, q).Parked == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var parked, failedWarn, failedDebug int
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not a JSON log line: %q", sc.Text())
		}
		switch msg, _ := l["msg"].(string); {
		case strings.HasPrefix(msg, "key parked"):
			parked++
			if l["level"] != "WARN" || l["key"] != "ledger-7" || l["partition"] != float64(2) || l["jobId"] != ids[0] ||
				l["attempts"] != float64(5) || !strings.Contains(l["err"].(string), "downstream says no") {
				t.Errorf("the parked line lacks what an operator needs: %s", sc.Text())
			}
		case strings.HasPrefix(msg, "job failed") && l["level"] == "WARN":
			failedWarn++
		case strings.HasPrefix(msg, "job failed"):
			failedDebug++
		}
	}
	if parked != 1 || failedWarn != 1 || failedDebug != 3 {
		t.Fatalf("%d parked lines, %d failure warnings, %d retries at debug; want 1, 1 and 3:\n%s", parked, failedWarn, failedDebug, logs.String())
	}
}
