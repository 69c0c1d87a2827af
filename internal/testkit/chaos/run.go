package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// Config configures a Run.
type Config struct {
	Cluster ClusterConfig
	// Seed drives every random choice of the run (which fault, which
	// target, how long an outage lasts). Timing still varies from run to
	// run; the seed makes the sequence of faults repeatable.
	Seed uint64
	// Faults is how many faults to inject, dealt from a shuffled deck of
	// Kinds (each kind once per len(Kinds) faults). Default 50.
	Faults int
	// Kinds are the faults to draw from. Default: all of Kinds.
	Kinds []Kind
	// Unfenced switches the store's fencing off (see fencecheck.Config).
	Unfenced bool
	// Backlog is how many jobs are kept queued in each partition while
	// faults are injected, so every leader always has work. Default 16
	// without partitions, 4 with.
	Backlog int
	// KeysPer is how many ordering keys each partition's jobs cycle
	// through, with partitions (without, jobs have no key). Default 4.
	KeysPer int
	// Logf, if set, is told of each fault.
	Logf func(format string, args ...any)
}

// KindStats are the figures for one kind of fault.
type KindStats struct {
	// Count faults were injected, OnLeader of them on the leader.
	Count, OnLeader int
	// Worst and Total time from a heal until a leader's write was accepted.
	Worst, Total time.Duration
}

// Summary is the outcome of a run.
type Summary struct {
	Seed   uint64
	Faults int
	// Partitions is PARTITIONS, Keys the ordering keys the jobs used (0
	// without partitions).
	Partitions, Keys int
	// Batch is the replicas' JOB_BATCH: the run of a key a new leader
	// may redo (fencecheck.CheckPartitions).
	Batch         int
	ByKind        map[Kind]*KindStats
	Jobs          int
	LeaderChanges int
	Accepted      int
	Rejected      int
	Violations    []fencecheck.Violation
	// WorstGap is the longest time between two accepted writes while
	// faults were being injected: the worst leaderless (or idle) stretch.
	WorstGap time.Duration
	// WorstRecovery is the longest time from a heal to the next accepted
	// write, over all faults.
	WorstRecovery time.Duration
	Wall          time.Duration
}

// Run starts a cluster, keeps jobs flowing, injects cfg.Faults faults one
// after another, waits until every job is committed, stops the replicas
// and checks the store's history. An error means the run could not be
// carried out (or a liveness safety net tripped); violations are in the
// Summary.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	start := time.Now()
	cfg.defaults()
	sum := Summary{Seed: cfg.Seed, ByKind: map[Kind]*KindStats{}}
	coord, err := NewCoordinator(fencecheck.Config{Unfenced: cfg.Unfenced})
	if err != nil {
		return sum, err
	}
	defer coord.Close()
	c, err := StartCluster(ctx, cfg.Cluster, coord)
	if err != nil {
		return sum, err
	}
	defer c.Close()
	sum.Batch, sum.Partitions = c.cfg.Batch, c.cfg.Partitions
	in := &injector{c: c, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), ttl: c.cfg.TTL}
	keysOf := partitionKeys(c.cfg.Partitions, cfg.KeysPer)
	for _, ks := range keysOf {
		sum.Keys += len(ks)
	}
	enq := startEnqueuer(ctx, c, cfg.Backlog, keysOf)
	defer enq.stop()
	if !waitFor(ctx, 30*time.Second, func() bool { _, ok := coord.Store().Last(); return ok }) {
		return sum, fail(c, "chaos: no job was done within 30s of the start")
	}
	phase := time.Now()
	if err := runFaults(ctx, cfg, in, enq, &sum); err != nil {
		return sum, err
	}
	phaseEnd := time.Now()
	jobs, err := enq.stop()
	if err != nil {
		return sum, err
	}
	drained := waitFor(ctx, 60*time.Second, func() bool {
		q, err := c.Router()
		if err != nil {
			return false
		}
		st, err := q.Stats(ctx)
		return err == nil && st.Pending == 0
	})
	if !drained {
		return sum, fail(c, "chaos: liveness: the queue did not drain within 60s after the last fault")
	}
	c.StopWorkers(ctx)
	sum.Jobs = len(jobs)
	sum.Accepted, sum.Rejected = coord.Store().Counts()
	sum.summarize(coord.Store().History(), jobs, phase, phaseEnd)
	sum.Wall = time.Since(start)
	return sum, nil
}

func (cfg *Config) defaults() {
	if cfg.Faults == 0 {
		cfg.Faults = 50
	}
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = Kinds
	}
	if cfg.Backlog == 0 {
		cfg.Backlog = 16
		if cfg.Cluster.Partitions > 1 {
			cfg.Backlog = 4
		}
	}
	if cfg.KeysPer == 0 {
		cfg.KeysPer = 4
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
}

// runFaults deals the faults from a shuffled deck of the kinds, so every
// kind comes up once in each len(Kinds) faults, and waits after each for a
// leader's accepted write.
func runFaults(ctx context.Context, cfg Config, in *injector, enq *enqueuer, sum *Summary) error {
	var deck []Kind
	for i := range cfg.Faults {
		if err := enq.failed(); err != nil {
			return err
		}
		if len(deck) == 0 {
			deck = slices.Clone(cfg.Kinds)
			in.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		k := deck[0]
		deck = deck[1:]
		f, err := in.inject(ctx, k)
		if err != nil {
			return fmt.Errorf("chaos: fault %d (%s on %s): %w", i+1, k, f.target, err)
		}
		var back time.Duration
		ok := waitFor(ctx, 60*time.Second, func() bool {
			r, ok := in.c.coord.Store().Last()
			back = r.At.Sub(f.healed)
			return ok && back >= 0
		})
		if !ok {
			return fail(in.c, fmt.Sprintf("chaos: liveness: no leader worked within 60s after fault %d (%s on %s) healed", i+1, k, f.target))
		}
		sum.record(k, f.leader, back)
		of := ""
		if in.c.cfg.Partitions > 1 {
			of = fmt.Sprintf("partition %d, ", f.part)
		}
		cfg.Logf("fault %d/%d: %s on %s (leader=%v, %stoken %d); a leader worked %s after the heal",
			i+1, cfg.Faults, k, f.target, f.leader, of, f.token, back.Round(time.Millisecond))
	}
	return nil
}

// record counts one fault of kind k and the time a leader took to work
// again after its heal.
func (s *Summary) record(k Kind, onLeader bool, back time.Duration) {
	ks := s.ByKind[k]
	if ks == nil {
		ks = &KindStats{}
		s.ByKind[k] = ks
	}
	ks.Count++
	if onLeader {
		ks.OnLeader++
	}
	ks.Total += back
	ks.Worst = max(ks.Worst, back)
	s.WorstRecovery = max(s.WorstRecovery, back)
	s.Faults++
}

// summarize checks the history and counts leader changes (with
// partitions, of each partition's leader) and the worst gap between
// accepted writes during the fault phase.
func (s *Summary) summarize(h []fencecheck.Record, jobs []fencecheck.Job, phase, phaseEnd time.Time) {
	s.Violations = fencecheck.CheckPartitions(h, jobs, s.Partitions, s.Batch)
	var prev *fencecheck.Record
	tokenOf := map[int]int64{} // partition -> token of its last accepted write
	for i := range h {
		r := &h[i]
		if !r.Accepted {
			continue
		}
		if tok, ok := tokenOf[r.Partition]; ok && r.Token != tok {
			s.LeaderChanges++
		}
		tokenOf[r.Partition] = r.Token
		if prev != nil && !r.At.Before(phase) && !prev.At.After(phaseEnd) {
			s.WorstGap = max(s.WorstGap, r.At.Sub(prev.At))
		}
		prev = r
	}
}

// enqueuer keeps backlog jobs queued so a leader always has work, and
// stops at the first error: an enqueue that failed may have been applied,
// and retrying it could enqueue a number twice.
type enqueuer struct {
	jobs     []fencecheck.Job // enqueued, by seq; the enqueuer's until it is stopped
	err      error
	stopCh   chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func startEnqueuer(ctx context.Context, c *Cluster, backlog int, keysOf [][]string) *enqueuer {
	e := &enqueuer{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for {
			if e.err = topUp(ctx, c, &e.jobs, backlog, keysOf); e.err != nil {
				return
			}
			select {
			case <-e.stopCh:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return e
}

// failed is the enqueuer's error once it stopped on one, else nil.
func (e *enqueuer) failed() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// stop stops the enqueuer, waits for it, and returns the jobs it enqueued
// and the error it stopped on, if any.
func (e *enqueuer) stop() ([]fencecheck.Job, error) {
	e.stopOnce.Do(func() { close(e.stopCh) })
	<-e.done
	return e.jobs, e.err
}

// topUp enqueues jobs, numbered from len(*jobs) on, until backlog are
// pending in each partition; with partitions each partition's jobs cycle
// through its keys (keysOf), so every key has a queue of its own to keep
// in order.
func topUp(ctx context.Context, c *Cluster, jobs *[]fencecheck.Job, backlog int, keysOf [][]string) error {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	r, err := c.Router()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stats, err := r.PartitionStats(ctx)
	if err != nil {
		return fmt.Errorf("chaos: queue stats: %w", err)
	}
	for p, st := range stats {
		for i := st.Pending; i < int64(backlog); i++ {
			var j fencecheck.Job
			if len(stats) > 1 {
				ks := keysOf[p]
				j = fencecheck.Job{Key: ks[len(*jobs)%len(ks)], Partition: p}
			}
			seq := len(*jobs)
			if _, _, err := r.Enqueue(ctx, j.Key, []byte(strconv.Itoa(seq))); err != nil {
				return fmt.Errorf("chaos: enqueue job %d: %w", seq, err)
			}
			*jobs = append(*jobs, j)
		}
	}
	return nil
}

// partitionKeys picks ordering keys ("k0", "k1", ...) for each of n
// partitions, per of each by partition.Of; nil without partitions.
func partitionKeys(n, per int) [][]string {
	if n <= 1 {
		return nil
	}
	out := make([][]string, n)
	for i, full := 0, 0; full < n; i++ {
		k := "k" + strconv.Itoa(i)
		p := partition.Of(k, n)
		if len(out[p]) < per {
			out[p] = append(out[p], k)
			if len(out[p]) == per {
				full++
			}
		}
	}
	return out
}

// fail describes a run that could not go on, with the end of the store's
// history (the replicas' output goes to ClusterConfig.LogDir).
func fail(c *Cluster, msg string) error {
	h := c.coord.Store().History()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nlast writes (of %d; %d begun since the last reset):", msg, len(h), c.coord.Begun())
	for _, r := range h[max(0, len(h)-10):] {
		fmt.Fprintf(&b, "\n  %+v", r)
	}
	return errors.New(b.String())
}

// waitFor polls cond every 10ms until it holds (true) or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		backoff.Sleep(ctx, 10*time.Millisecond)
	}
}

// Table renders the summary for people.
func (s Summary) Table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "seed\t%d\n", s.Seed)
	fmt.Fprintf(w, "faults\t%d\n", s.Faults)
	fmt.Fprintf(w, "PARTITIONS\t%d\n", max(s.Partitions, 1))
	if s.Keys > 0 {
		fmt.Fprintf(w, "ordering keys\t%d\n", s.Keys)
	}
	fmt.Fprintf(w, "JOB_BATCH\t%d\n", s.Batch)
	fmt.Fprintf(w, "leader changes\t%d\n", s.LeaderChanges)
	fmt.Fprintf(w, "jobs\t%d\n", s.Jobs)
	fmt.Fprintf(w, "writes accepted\t%d\n", s.Accepted)
	fmt.Fprintf(w, "stale writes rejected\t%d\n", s.Rejected)
	fmt.Fprintf(w, "violations\t%d\n", len(s.Violations))
	fmt.Fprintf(w, "worst leaderless gap\t%s\n", s.WorstGap.Round(time.Millisecond))
	fmt.Fprintf(w, "worst recovery after a heal\t%s\n", s.WorstRecovery.Round(time.Millisecond))
	fmt.Fprintf(w, "wall time\t%s\n", s.Wall.Round(time.Second))
	fmt.Fprintf(w, "\nfault\tcount\ton leader\trecovery mean\trecovery worst\n")
	for _, k := range Kinds {
		ks := s.ByKind[k]
		if ks == nil {
			continue
		}
		mean := ks.Total / time.Duration(ks.Count)
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", k, ks.Count, ks.OnLeader, mean.Round(time.Millisecond), ks.Worst.Round(time.Millisecond))
	}
	_ = w.Flush()
	for _, v := range s.Violations {
		fmt.Fprintf(&b, "%v\n", v)
	}
	return b.String()
}

// Round is the outcome of one StaleWrites round.
type Round struct {
	// Late is the paused leader's write as the store recorded it.
	Late fencecheck.Record
	// Violations are what Check found in the round's history.
	Violations []fencecheck.Violation
}

// StaleWrites runs the pause scenario rounds times on one cluster: each
// round enqueues one job, stops its leader (and the job's writer right
// before it writes) until another replica has taken over and done the job,
// then lets the stale writer write first. Each round's history is checked
// on its own.
func StaleWrites(ctx context.Context, cfg Config, rounds int) ([]Round, error) {
	scfg := fencecheck.Config{Unfenced: cfg.Unfenced}
	coord, err := NewCoordinator(scfg)
	if err != nil {
		return nil, err
	}
	defer coord.Close()
	c, err := StartCluster(ctx, cfg.Cluster, coord)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	in := &injector{c: c, ttl: c.cfg.TTL}
	var out []Round
	for r := range rounds {
		coord.Reset(scfg)
		round, err := staleRound(ctx, in, r+1)
		if err != nil {
			return out, err
		}
		out = append(out, round)
	}
	return out, nil
}

// staleRound is round n of StaleWrites.
func staleRound(ctx context.Context, in *injector, n int) (Round, error) {
	c, coord := in.c, in.c.coord
	s, _ := c.WaitLeader(ctx, 30*time.Second)
	if s == nil {
		return Round{}, fail(c, fmt.Sprintf("chaos: round %d: no leader", n))
	}
	trap := coord.Arm(s.name)
	q, err := c.Queue()
	if err != nil {
		return Round{}, err
	}
	if _, err := q.Enqueue(ctx, "", []byte("0")); err != nil {
		return Round{}, err
	}
	var b Begin
	select {
	case b = <-trap.Caught():
	case <-time.After(30 * time.Second):
		coord.Disarm(trap)
		return Round{}, fail(c, fmt.Sprintf("chaos: round %d: %s did not start the job", n, s.name))
	}
	err = c.pause(s, b.PID)
	coord.Disarm(trap)
	if err != nil {
		return Round{}, err
	}
	if !in.takeover(ctx, b.Partition, b.Token) {
		return Round{}, fail(c, fmt.Sprintf("chaos: round %d: no replica took over from %s", n, s.name))
	}
	before := len(coord.Store().History())
	if err := syscallCont(b.PID); err != nil {
		return Round{}, err
	}
	in.lateWrite(ctx, b, before)
	if err := c.resume(s); err != nil {
		return Round{}, err
	}
	h := coord.Store().History()
	var round Round
	for _, rec := range h {
		if rec.Token == b.Token && rec.Worker == b.Worker {
			round.Late = rec
		}
	}
	if round.Late.Worker == "" {
		return round, errors.New("chaos: the paused writer never wrote (killed before it could)")
	}
	round.Violations = fencecheck.Check(h, 1)
	// The next round needs the job committed.
	if !waitFor(ctx, 30*time.Second, func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Pending == 0
	}) {
		return round, fail(c, fmt.Sprintf("chaos: round %d: the job was not committed", n))
	}
	return round, nil
}
