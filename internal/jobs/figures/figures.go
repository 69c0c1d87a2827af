package figures

// Queue is a snapshot of the job queue. The JSON names are what /status
// and the dashboard show.
type Queue struct {
	// Pending counts jobs not yet committed or dead-lettered: the ones
	// waiting, in flight, backing off and held by parked keys.
	Pending int64 `json:"pending"`
	// Committed counts jobs completed since the queue was created.
	Committed int64 `json:"committed"`
	// DeadLettered counts jobs in the dead-letter list now (a requeue
	// removes them).
	DeadLettered int64 `json:"deadLettered"`
	// Epoch is the lock's current fencing epoch (0 before any leader).
	Epoch int64 `json:"epoch"`
	// Paused says an operator paused the queue: the leader takes no new
	// job.
	Paused bool `json:"paused"`
	// OldestPendingMs is how long, in milliseconds, the oldest job that
	// the leader should be working on has waited since it was enqueued:
	// the head of a key that may run now or is in flight, on the Redis
	// server's clock, rounded up; 0 when there is none. Keys that back
	// off after a failure count from when their retry falls due; parked
	// keys count in OldestParkedMs.
	OldestPendingMs int64 `json:"oldestPendingMs"`
	// InFlight counts the keys whose jobs a leader has claimed and runs:
	// at most one job each at a time.
	InFlight int64 `json:"inFlight"`
	// Parked counts the keys held after a job failed for good, until an
	// operator retries or skips it.
	Parked int64 `json:"parked"`
	// OldestParkedMs is how long the longest-parked key has been parked,
	// in milliseconds; 0 when none is.
	OldestParkedMs int64 `json:"oldestParkedMs"`
	// Retries counts the failed attempts retried since the queue was
	// created.
	Retries int64 `json:"retries"`
	// Delayed counts the delayed jobs not yet due: they count in Pending
	// only once they joined their keys' order.
	Delayed int64 `json:"delayed"`
}
