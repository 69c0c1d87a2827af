package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/partition"
)

// jobsPerKey is how many jobs the partitioned run enqueues for each of its
// keys (one per partition): with WORK_DURATION 3s, a key's jobs keep its
// partition busy for 15s, through both moves.
const jobsPerKey = 5

// partitionResult is what the partitioned run found (beside its result's
// file, project and startup).
type partitionResult struct {
	partitions int
	shares     []string // the first share-out, then the one after docker stop
	stop, kill moveSample
	jobs, keys int
	tokens     map[string][]int64 // by key, in delivery order
}

// moveSample is one worker's partitions moving to others.
type moveSample struct {
	from     string
	parts    []int
	worst    time.Duration // the call → the last of its partitions' new leaders' to=working line
	exitCode int
}

// fleetStatus is what the partitioned run reads of `status --json`.
type fleetStatus struct {
	Committed    int64 `json:"committed"`
	Pending      int64 `json:"pending"`
	DeadLettered int64 `json:"deadLettered"`
	Partitions   int   `json:"partitions"`
	Replicas     []struct {
		WorkerID   string `json:"workerId"`
		Partitions []struct {
			Partition int   `json:"partition"`
			Token     int64 `json:"token"`
		} `json:"partitions"`
	} `json:"replicas"`
}

// runPartitions is the scenario with PARTITIONS > 1: three healthy workers
// share the partitions to within one; keyed jobs are enqueued (a key per
// partition); docker stop
// of the busiest worker moves each of its partitions to another within
// handoverLimit, and the two left share them to within one; docker kill of
// the busier of those moves its partitions to the last once their leases
// can have ended; every job committed, each key's in enqueue order, and
// each moved partition's key's under two tokens at least.
func (st *stack) runPartitions(ctx context.Context, pr *partitionResult) error {
	if err := st.start(ctx); err != nil {
		return err
	}
	own, err := st.shared(ctx)
	if err != nil {
		return err
	}
	pr.shares = append(pr.shares, st.shares(own))
	st.progress("%d workers healthy, %d partitions shared: %s", replicas, st.s.partitions, pr.shares[0])
	keyOf, err := st.enqueueKeyed(ctx)
	if err != nil {
		return err
	}
	pr.jobs, pr.keys = len(st.jobs), st.s.partitions
	if pr.stop, err = st.move(ctx, own, false); err != nil {
		return err
	}
	if own, err = st.shared(ctx); err != nil {
		return err
	}
	pr.shares = append(pr.shares, st.shares(own))
	st.progress("docker stop %s: its partitions %v led elsewhere within %s; now %s", pr.stop.from, pr.stop.parts, ms(pr.stop.worst), pr.shares[1])
	if pr.kill, err = st.move(ctx, own, true); err != nil {
		return err
	}
	st.progress("docker kill %s: its partitions %v led elsewhere within %s", pr.kill.from, pr.kill.parts, ms(pr.kill.worst))
	if _, err := st.shared(ctx); err != nil {
		return err
	}
	if err := st.drain(ctx); err != nil {
		return err
	}
	if pr.tokens, err = st.keyOrder(ctx, keyOf); err != nil {
		return err
	}
	// A moved partition's key had jobs left: its next owner ran them.
	for _, p := range slices.Concat(pr.stop.parts, pr.kill.parts) {
		if key := keyOfPartition(p, st.s.partitions); len(pr.tokens[key]) < 2 {
			return fmt.Errorf("partition %d moved with jobs of %s pending, yet they ran under token(s) %v only", p, key, pr.tokens[key])
		}
	}
	st.progress("%d jobs of %d keys committed, each key's in enqueue order", len(st.jobs), pr.keys)
	return nil
}

// fleet reads `status --json` through a running worker.
func (st *stack) fleet(ctx context.Context) (fleetStatus, error) {
	live, err := st.live(ctx)
	if err != nil {
		return fleetStatus{}, err
	}
	out, err := st.p.exec(ctx, live[0], "/lockworker", "status", "--json")
	if err != nil {
		return fleetStatus{}, err
	}
	var s fleetStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return s, fmt.Errorf("status --json: %w: %q", err, out)
	}
	return s, nil
}

// shared waits until the registry says every partition is led by a
// running worker and their shares differ by at most one, and returns the
// owner of each partition (a workerId).
func (st *stack) shared(ctx context.Context) (map[int]string, error) {
	var own map[int]string
	err := waitFor(ctx, 60*time.Second, fmt.Sprintf("%d partitions shared by the running workers", st.s.partitions), func() (bool, string, error) {
		live, err := st.live(ctx)
		if err != nil {
			return false, "", err
		}
		s, err := st.fleet(ctx)
		if err != nil {
			return false, "", err
		}
		if s.Partitions != st.s.partitions {
			return false, "", fmt.Errorf("status says %d partitions, want %d", s.Partitions, st.s.partitions)
		}
		own = map[int]string{}
		count := map[string]int{}
		for _, c := range live {
			count[st.ids[c.ID]] = 0
		}
		for _, r := range s.Replicas {
			if _, ok := count[r.WorkerID]; !ok {
				continue // a record not yet expired, of a worker no longer running
			}
			for _, p := range r.Partitions {
				own[p.Partition] = r.WorkerID
				count[r.WorkerID]++
			}
		}
		n := slices.Collect(maps.Values(count))
		seen := fmt.Sprintf("%d partitions led, shares %v", len(own), count)
		return len(own) == st.s.partitions && slices.Max(n)-slices.Min(n) <= 1, seen, nil
	})
	return own, err
}

// shares says how many partitions each worker leads.
func (st *stack) shares(own map[int]string) string {
	count := map[string]int{}
	for _, w := range own {
		count[w]++
	}
	var out []string
	for _, w := range slices.Sorted(maps.Keys(count)) {
		out = append(out, fmt.Sprintf("%s %d", w, count[w]))
	}
	return strings.Join(out, ", ")
}

// keyOfPartition is the run's key of partition p: the first of
// "customer-0", "customer-1", ... that partition.Of puts there.
func keyOfPartition(p, n int) string {
	for i := 0; ; i++ {
		if k := "customer-" + strconv.Itoa(i); partition.Of(k, n) == p {
			return k
		}
	}
}

// enqueueKeyed adds jobsPerKey jobs for the key of each partition, round
// robin, in one `lockworker enqueue --lines --key-field key` (one Compose
// exec takes seconds), and returns each job's key.
func (st *stack) enqueueKeyed(ctx context.Context) (map[string]string, error) {
	live, err := st.live(ctx)
	if err != nil {
		return nil, err
	}
	var lines strings.Builder
	var keys []string
	for i := range jobsPerKey {
		for p := range st.s.partitions {
			key := keyOfPartition(p, st.s.partitions)
			fmt.Fprintf(&lines, "{\"key\":%q,\"job\":%d}\n", key, i+1)
			keys = append(keys, key)
		}
	}
	out, err := st.p.execStdin(ctx, live[0], lines.String(), "/lockworker", "enqueue", "--lines", "--key-field", "key")
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	if len(ids) != len(keys) {
		return nil, fmt.Errorf("enqueue --lines printed %q, want %d job IDs", out, len(keys))
	}
	keyOf := map[string]string{}
	for i, id := range ids {
		st.jobs = append(st.jobs, id)
		keyOf[id] = keys[i]
	}
	return keyOf, nil
}

// move stops (docker stop) or kills (docker kill -s KILL) the worker that
// leads the most partitions, and waits until another running worker logs
// acquiring_lock → working for each of them. A stop must move every one
// within handoverLimit and exit 0; after a kill none may be led before the
// killed worker's lease can have ended: its last renewal is at most one
// RENEW_INTERVAL before the kill, so not before the kill + LOCK_TTL -
// RENEW_INTERVAL.
func (st *stack) move(ctx context.Context, own map[int]string, kill bool) (moveSample, error) {
	var victim container
	best := -1
	for _, c := range st.workers {
		n := 0
		for _, w := range own {
			if w == st.ids[c.ID] {
				n++
			}
		}
		if n > best {
			victim, best = c, n
		}
	}
	s := moveSample{from: st.ids[victim.ID]}
	for p, w := range own {
		if w == s.from {
			s.parts = append(s.parts, p)
		}
	}
	slices.Sort(s.parts)
	t0 := time.Now()
	args, bound := []string{"stop", victim.ID}, 10*time.Second
	if kill {
		args, bound = []string{"kill", "-s", "KILL", victim.ID}, st.s.ttl+st.s.retry+10*time.Second
	}
	if _, err := docker(ctx, args...); err != nil {
		return s, err
	}
	won := map[int]time.Time{}
	err := waitFor(ctx, bound, fmt.Sprintf("%s's partitions %v led elsewhere", s.from, s.parts), func() (bool, string, error) {
		live, err := st.live(ctx)
		if err != nil {
			return false, "", err
		}
		for _, c := range live {
			if c.ID == victim.ID {
				continue
			}
			lines, err := containerLog(ctx, c)
			if err != nil {
				return false, "", err
			}
			for _, l := range lines {
				p, err := strconv.Atoi(l.attrs["partition"])
				if err != nil || l.at.Before(t0) || !slices.Contains(s.parts, p) || !l.isTransition(machine.AcquiringLock, machine.Working) {
					continue
				}
				if at, ok := won[p]; !ok || l.at.Before(at) {
					won[p] = l.at
				}
			}
		}
		return len(won) == len(s.parts), fmt.Sprintf("%d of %d led elsewhere", len(won), len(s.parts)), nil
	})
	if err != nil {
		return s, err
	}
	floor := t0.Add(st.s.ttl - st.s.renew)
	for p, at := range won {
		s.worst = max(s.worst, at.Sub(t0))
		if kill && at.Before(floor) {
			return s, fmt.Errorf("partition %d led again %s after the kill, before %s's lease could have ended", p, ms(at.Sub(t0)), s.from)
		}
	}
	if !kill && s.worst > handoverLimit {
		return s, fmt.Errorf("%s's partitions led elsewhere %s after docker stop, want within %s", s.from, ms(s.worst), handoverLimit)
	}
	old, err := refresh(ctx, victim)
	if err != nil {
		return s, err
	}
	if old.Running || (!kill && old.ExitCode != 0) {
		return s, fmt.Errorf("%s after docker %s: %s, exit code %d", old, args[0], old.Status, old.ExitCode)
	}
	s.exitCode = old.ExitCode
	return s, nil
}

// keyOrder checks each key's deliveries, merged from every worker's log,
// against the key's enqueue order (checkOrder), and returns the tokens
// each key's jobs ran under.
func (st *stack) keyOrder(ctx context.Context, keyOf map[string]string) (map[string][]int64, error) {
	var all []delivery
	for _, c := range st.workers {
		id, lines, err := workerLog(ctx, c)
		if err != nil {
			return nil, err
		}
		ds, err := deliveries(id, lines)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		all = append(all, ds...)
	}
	tokens := map[string][]int64{}
	for p := range st.s.partitions {
		key := keyOfPartition(p, st.s.partitions)
		var jobs []string
		for _, id := range st.jobs {
			if keyOf[id] == key {
				jobs = append(jobs, id)
			}
		}
		ds := slices.DeleteFunc(slices.Clone(all), func(d delivery) bool { return keyOf[d.jobID] != key })
		r, err := checkOrder(jobs, ds)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
		tokens[key] = r.tokens
	}
	return tokens, nil
}

// runPartitioned runs docker-compose.yml (-partitions-file) again with
// PARTITIONS=o.partitions: runPartitions on a project of its own.
func runPartitioned(ctx context.Context, o options, tool composeTool, tmp string, log io.Writer) (result, error) {
	s := o.settings
	s.partitions = o.partitions
	res := result{file: o.partsFile, parts: &partitionResult{partitions: o.partitions}}
	err := onStack(ctx, o.root, s, tool, o.partsFile, tmp, log, &res, func(st *stack) error {
		return st.runPartitions(ctx, res.parts)
	})
	return res, err
}
