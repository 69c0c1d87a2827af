package demo

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/partition"
)

// The partitioned story's jobs: keysN customers, jobsPerKey jobs each.
const (
	keysN      = 4
	jobsPerKey = 3
)

// owner is who leads a partition, as its replica's /status says.
type owner struct {
	p     *fleet.Process
	token int64
}

// runPartitions tells the story of a fleet sharing d.parts partitions:
// the share-out, a SIGTERM (each partition working elsewhere within
// milliseconds), a kill -9 (its partitions taken once their leases ran
// out), the queue finished in order per key.
func (d *demo) runPartitions() error {
	d.say("lockworker demo: %d replicas share %d partitions, a lease and a queue each (PARTITIONS=%d, LOCK_TTL=3s, RENEW_INTERVAL=1s, RETRY_INTERVAL=1s)", replicas, d.parts, d.parts)
	d.say("")
	if err := d.startRedis(); err != nil {
		return err
	}
	if err := d.startReplicas(); err != nil {
		return err
	}
	if err := d.waitShared(d.replicas, 20*time.Second); err != nil {
		return err
	}
	own := d.owners(d.replicas)
	first := d.busiest(own)
	d.mark("fleet balanced: %s", d.shares(own, d.replicas))
	d.say("✓ every partition has one owner, shared to within one: %s", d.shares(own, d.replicas))
	if err := d.enqueueKeyed(); err != nil {
		return err
	}
	if err := d.waitCommitted(first, 1, 15*time.Second); err != nil {
		return err
	}
	d.say("  the partitions work at the same time: %s", d.queueLineOf(first, keysN*jobsPerKey))
	d.say("")

	d.say("▸ SIGTERM → %s: it leaves the registry, then releases each of its partitions with a notice", first.Name)
	handover, err := d.move(first, false, d.others(first), 10*time.Second)
	if err != nil {
		return err
	}
	if err := d.waitExit(first, 10*time.Second); err != nil {
		return err
	}
	d.mark("%s exited", first.Name)
	rest := d.others(first)
	if err := d.waitShared(rest, 20*time.Second); err != nil {
		return err
	}
	own = d.owners(rest)
	d.mark("fleet balanced: %s", d.shares(own, rest))
	d.say("  %s exited; the two left share the %d partitions: %s", first.Name, d.parts, d.shares(own, rest))
	d.say("")

	second := d.busiest(own)
	last := d.others(first, second)
	d.say("▸ kill -9 → %s: a crash; its leases stay in Redis until they run out (LOCK_TTL 3s)", second.Name)
	failover, err := d.move(second, true, last, demoTTL+10*time.Second)
	if err != nil {
		return err
	}
	total := int64(keysN * jobsPerKey)
	if err := d.waitCommitted(last[0], total, 60*time.Second); err != nil {
		return err
	}
	d.mark("all %d jobs committed", total)
	d.say("  %s finished the queue: %s, each key's jobs in enqueue order", last[0].Name, d.queueLineOf(last[0], total))
	d.say("")
	d.say("▸ SIGTERM → %s", last[0].Name)
	_ = last[0].Terminate()
	if err := d.waitExit(last[0], 10*time.Second); err != nil {
		return err
	}
	d.mark("%s exited", last[0].Name)
	d.say("")
	d.say("timeline (seconds since the demo started)")
	d.printEvents()
	d.say("")
	d.say("handover after SIGTERM: %-8s (worst of %s's partitions: released with a notice, taken at once)", ms(handover), first.Name)
	d.say("failover after kill -9: %-8s (worst of %s's partitions, bounded by LOCK_TTL=%s)", ms(failover), second.Name, demoTTL)
	d.say("each partition has its own fencing token: a late write by an old owner of a partition is rejected by that partition's fence")
	return nil
}

// move signals from (SIGTERM, or SIGKILL when kill) and reports, for each
// partition it led, who leads it next and how long after the signal; it
// returns the longest of those times.
func (d *demo) move(from *fleet.Process, kill bool, to []*fleet.Process, limit time.Duration) (time.Duration, error) {
	before := d.owners(d.others())
	var parts []int
	for p, o := range before {
		if o.p == from {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	sig := "SIGTERM to"
	if kill {
		sig = "kill -9 of"
	}
	t0 := time.Now()
	d.mark("%s %s (%d partitions)", sig, from.Name, len(parts))
	var err error
	if kill {
		err = from.Kill()
	} else {
		err = from.Terminate()
	}
	if err != nil {
		return 0, err
	}
	took := map[int]time.Duration{}
	next := map[int]owner{}
	err = d.pollEvery(time.Millisecond, limit, fmt.Sprintf("%s's partitions to be led elsewhere", from.Name), func() bool {
		now := d.owners(to)
		for _, p := range parts {
			if o, ok := now[p]; ok {
				if _, seen := took[p]; !seen {
					took[p], next[p] = time.Since(t0), o
				}
			}
		}
		return len(took) == len(parts)
	})
	if err != nil {
		return 0, err
	}
	var worst time.Duration
	var lines []string
	for _, p := range parts {
		worst = max(worst, took[p])
		lines = append(lines, fmt.Sprintf("p%d → %s (token %d) %s", p, next[p].p.Name, next[p].token, ms(took[p])))
		d.markAt(t0.Add(took[p]), "partition %d led by %s (token %d)", p, next[p].p.Name, next[p].token)
	}
	how := "graceful handover"
	if kill {
		how = "failover once each lease ran out"
	}
	d.say("✓ %s's %d partitions are led elsewhere (%s): %s", from.Name, len(parts), how, strings.Join(lines, ", "))
	return worst, nil
}

// owners asks procs which partitions they lead.
func (d *demo) owners(procs []*fleet.Process) map[int]owner {
	out := map[int]owner{}
	for _, p := range procs {
		if p.Exited() {
			continue
		}
		s, err := p.Status(d.ctx)
		if err != nil {
			continue
		}
		for _, l := range s.Leads {
			out[l.Partition] = owner{p: p, token: l.Token}
		}
	}
	return out
}

// waitShared waits until every partition is led by one of procs and their
// shares differ by at most one.
func (d *demo) waitShared(procs []*fleet.Process, limit time.Duration) error {
	return d.poll(limit, fmt.Sprintf("%d partitions shared by %d replicas", d.parts, len(procs)), func() bool {
		own := d.owners(procs)
		if len(own) != d.parts {
			return false
		}
		n := d.counts(own, procs)
		return slices.Max(n)-slices.Min(n) <= 1
	})
}

func (d *demo) counts(own map[int]owner, procs []*fleet.Process) []int {
	n := make([]int, len(procs))
	for _, o := range own {
		n[slices.Index(procs, o.p)]++
	}
	return n
}

// busiest is the replica that leads the most partitions (the first such).
func (d *demo) busiest(own map[int]owner) *fleet.Process {
	n := map[*fleet.Process]int{}
	for _, o := range own {
		n[o.p]++
	}
	var best *fleet.Process
	for _, p := range d.replicas {
		if best == nil || n[p] > n[best] {
			best = p
		}
	}
	return best
}

// shares says how many partitions, and which, each of procs leads.
func (d *demo) shares(own map[int]owner, procs []*fleet.Process) string {
	var out []string
	for _, p := range procs {
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(own)) {
			if own[k].p == p {
				ps = append(ps, fmt.Sprintf("p%d", k))
			}
		}
		out = append(out, fmt.Sprintf("%s %d (%s)", p.Name, len(ps), strings.Join(ps, " ")))
	}
	return strings.Join(out, ", ")
}

// enqueueKeyed adds jobsPerKey jobs for each of keysN customers with
// `lockworker enqueue --key`, round robin, as a person would.
func (d *demo) enqueueKeyed() error {
	var keys []string
	for k := range keysN {
		keys = append(keys, fmt.Sprintf("customer-%d", k+1))
	}
	for i := range jobsPerKey {
		for _, key := range keys {
			if err := d.enqueueOne("--key", key, fmt.Sprintf("%s-job-%d", key, i+1)); err != nil {
				return err
			}
		}
	}
	var where []string
	for _, key := range keys {
		where = append(where, fmt.Sprintf("%s → p%d", key, partition.Of(key, d.parts)))
	}
	d.mark("%d jobs enqueued", keysN*jobsPerKey)
	d.say("▸ enqueued %d jobs with `lockworker enqueue --key`, %d per customer; a key's partition is xxhash64(key) mod %d: %s",
		keysN*jobsPerKey, jobsPerKey, d.parts, strings.Join(where, ", "))
	return nil
}

// queueLineOf is queueLine for a queue of total jobs.
func (d *demo) queueLineOf(p *fleet.Process, total int64) string {
	s, err := p.Status(d.ctx)
	if err != nil || s.Queue == nil {
		return "(queue figures unavailable)"
	}
	return fmt.Sprintf("%d of %d jobs committed, %d pending, %d dead letters", s.Queue.Committed, total, s.Queue.Pending, s.Queue.DeadLettered)
}
