package jobs

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/testkit/layout"
)

// keysLine is a script header's line naming a key: "-- KEYS[<at>] <name>".
var keysLine = regexp.MustCompile(`^-- KEYS\[([^\]]+)\]\s+(\S+)`)

// scriptKeys reads the KEYS lines of a script's header: where each name
// goes (its first index, with r, the queues of a batch, taken as 1) and
// the name.
func scriptKeys(t *testing.T, file string) map[int]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := keysLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, _, _ := strings.Cut(m[1], "..")
		at = strings.NewReplacer("3r", "3", "2r", "2", "r", "1").Replace(at)
		n := 0
		for term := range strings.SplitSeq(at, "+") {
			v, err := strconv.Atoi(term)
			if err != nil {
				t.Fatalf("%s: KEYS[%s]: %v", file, m[1], err)
			}
			n += v
		}
		out[n] = strings.TrimSuffix(m[2], ":")
	}
	return out
}

// TestScriptsNameTheLayout holds each script's header, and the keys the
// code passes it, to the layout package keyspace writes down (its
// doc.go): every key a header names is a layout name, and the key the
// code passes at that place is the one the name stands for.
func TestScriptsNameTheLayout(t *testing.T) {
	names, err := layout.Read("../keyspace/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	q, err := New(Config{Client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.cfg.Client.(*redis.Client).Close() })
	enqueueKeys, _, _ := appendArgs([]*Queue{q}, [][]int{{0}}, []string{"01J"}, []Item{{Key: "a", Payload: []byte("x")}}, time.UnixMilli(0))
	vals := map[string]string{"member": "k:a", "id": "01J"}
	for _, sc := range []struct {
		file string
		keys []string
	}{
		{"step.lua", q.stepKeys()},
		{"enqueue.lua", enqueueKeys},
		{"requeue.lua", q.requeueKeys("01J")},
		{"retry.lua", q.retryKeys()},
		{"skip.lua", q.skipKeys()},
		{"stats.lua", q.statsKeys()},
		{"schedule_add.lua", q.scheduleAddKeys()},
		{"schedule_remove.lua", q.scheduleRemoveKeys()},
	} {
		header := scriptKeys(t, sc.file)
		if len(header) != len(sc.keys) {
			t.Errorf("%s: its header names %d keys, the code passes %d", sc.file, len(header), len(sc.keys))
		}
		for i, key := range sc.keys {
			name := header[i+1]
			switch {
			case name == "F":
				if key != q.fence {
					t.Errorf("%s: KEYS[%d] is %s, not the fence %s", sc.file, i+1, key, q.fence)
				}
			case !slices.Contains(names, name):
				t.Errorf("%s: KEYS[%d] is named %q, which is no name of keyspace's layout", sc.file, i+1, name)
			default:
				if want := layout.Expand(name, testKeys.Lock(), testKeys.Lock(), vals); key != want {
					t.Errorf("%s: KEYS[%d] (%s) is %s in the code, %s in the layout", sc.file, i+1, name, key, want)
				}
			}
		}
	}
}
