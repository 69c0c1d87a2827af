package keyspace

// Lease is the keyspace of one lease: the lock key, its fencing epoch and
// fence, its release channel, and the job queue the lease's holder works
// on. The zero Lease names nothing (IsZero).
type Lease struct {
	key  string // the lock key, tagged
	base string // the Base's key, for the names that live beside the fleet's
	part string // "" for a Base's one lease, ":p<n>" for partition n
}

// IsZero reports whether l is the zero Lease, which names nothing.
func (l Lease) IsZero() bool { return l.key == "" }

// Lock is the lock key: "<secret>:<token>:<worker>", PX TTL.
func (l Lease) Lock() string { return l.key }

// Epoch is the fencing counter: a plain integer that only grows, bumped
// once per leadership on the epoch authority.
func (l Lease) Epoch() string { return l.key + ":epoch" }

// EpochLast records which lock value got the last epoch bump, so a
// re-sent bump returns the same token instead of bumping twice.
func (l Lease) EpochLast() string { return l.key + ":epoch:last" }

// Fence is the job store's fence under Redlock: the highest fencing token
// a fenced write has carried (or a bump after a won quorum, or an
// operator's raise). With one lock node the store fences on Epoch instead
// (redislock's (*Locker).FenceKey says which).
func (l Lease) Fence() string { return l.key + ":epoch:fence" }

// ReleasedChannel is the pub/sub channel on which a release publishes the
// releasing worker ID.
func (l Lease) ReleasedChannel() string { return l.key + ":released" }

// jobs is the start of every name of the lease's job queue (J in the
// layout).
func (l Lease) jobs(name string) string { return l.key + ":jobs:" + name }

// Group is the list of one group's unfinished jobs, in order: member is
// the group's name in Ready, InFlight and Parked (package jobs makes it).
func (l Lease) Group(member string) string { return l.GroupPrefix() + member }

// GroupPrefix is what every Group name starts with: the scripts that
// find groups by member build their lists' names from it.
func (l Lease) GroupPrefix() string { return l.jobs("g:") }

// Ready is the sorted set of the groups that may run: member -> the time
// (unix ms) from which it may.
func (l Lease) Ready() string { return l.jobs("ready") }

// InFlight is the hash of the groups a leader has claimed: member -> the
// claim.
func (l Lease) InFlight() string { return l.jobs("inflight") }

// Parked is the hash of the groups held until an operator decides:
// member -> why (JSON).
func (l Lease) Parked() string { return l.jobs("parked") }

// Delayed is the sorted set of the delayed jobs not yet due: "<member>\n<entry>"
// -> due time (unix ms).
func (l Lease) Delayed() string { return l.jobs("delayed") }

// Idempotency is the key that holds the ID of the job enqueued with
// idempotency key k.
func (l Lease) Idempotency(k string) string { return l.IdempotencyPrefix() + k }

// IdempotencyPrefix is what every Idempotency name starts with, for the
// scripts that build them from the keys they are given.
func (l Lease) IdempotencyPrefix() string { return l.jobs("idem:") }

// Schedules is the hash of the schedules this lease's holder runs: name
// -> spec (JSON).
func (l Lease) Schedules() string { return l.jobs("schedules") }

// ScheduleNext is the sorted set of the schedules' next ticks: name ->
// unix ms.
func (l Lease) ScheduleNext() string { return l.jobs("schedule:next") }

// ScheduleLast is the hash of the schedules' last ticks enqueued: name ->
// unix ms.
func (l Lease) ScheduleLast() string { return l.jobs("schedule:last") }

// Attempts is the hash of deliveries per job ID, for jobs delivered again
// (or failed).
func (l Lease) Attempts() string { return l.jobs("attempts") }

// Stale is the hash of the jobs whose store answered "stale token":
// job ID -> how many leaderships in a row met it, and the last one's
// token.
func (l Lease) Stale() string { return l.jobs("stale") }

// Counters is the hash of the queue's totals (pending, committed,
// dead_lettered, retries).
func (l Lease) Counters() string { return l.jobs("counters") }

// Last is the hash describing the last committed job.
func (l Lease) Last() string { return l.jobs("last") }

// Dead is the dead-letter index: job IDs scored by failure time.
func (l Lease) Dead() string { return l.jobs("dead") }

// DeadLetter is the record of the dead job id.
func (l Lease) DeadLetter(id string) string { return l.DeadLetterPrefix() + id }

// DeadLetterPrefix is what every DeadLetter name starts with, for the
// scripts that dead-letter jobs they find.
func (l Lease) DeadLetterPrefix() string { return l.jobs("dead:") }

// Paused is present while an operator has paused the queue.
func (l Lease) Paused() string { return l.jobs("paused") }

// EnqueuedChannel is the pub/sub channel on which an enqueue publishes the
// new job's ID (and a resume "resume").
func (l Lease) EnqueuedChannel() string { return l.jobs("enqueued") }

// StepDown holds the fencing token an operator asked to step down.
func (l Lease) StepDown() string { return l.key + ":stepdown" }

// HistoryEnded is the hash that records how the last leadership of this
// lease that ended on purpose ended. It lives beside the fleet's history
// stream, under the Base's hash tag, so one script writes both.
func (l Lease) HistoryEnded() string { return l.base + ":history:ended" + l.part }
