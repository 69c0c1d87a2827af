package figures

// Queue is a snapshot of the job queue. The JSON names are what /status
// and the dashboard have always shown.
type Queue struct {
	// Pending counts jobs not yet committed or dead-lettered, the one in
	// flight included.
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
	// OldestPendingMs is how long, in milliseconds, the oldest pending job
	// has waited since it was enqueued, on the Redis server's clock,
	// rounded up (its stream ID holds the enqueue time to the
	// millisecond), so it is 0 only when none is pending.
	OldestPendingMs int64 `json:"oldestPendingMs"`
}
