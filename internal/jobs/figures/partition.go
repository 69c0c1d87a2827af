package figures

// Partition is one partition of the fleet as `lockworker partitions`, the
// dashboard and the metrics show it: who owns it and its queue's figures.
type Partition struct {
	Partition int `json:"partition"`
	// Owner is the worker ID of the replica that leads the partition; ""
	// when nobody does.
	Owner string `json:"owner"`
	// Token is the owner's fencing token for this partition; 0 without an
	// owner.
	Token int64 `json:"token"`
	Queue
}

// Sum is the fleet's figures over its partitions' (by partition): the
// counts summed, the oldest pending job and parked key the oldest of all,
// the epoch the highest, paused when any partition is.
func Sum(parts []Queue) Queue {
	var sum Queue
	for _, s := range parts {
		sum.Pending += s.Pending
		sum.Committed += s.Committed
		sum.DeadLettered += s.DeadLettered
		sum.Epoch = max(sum.Epoch, s.Epoch)
		sum.Paused = sum.Paused || s.Paused
		sum.OldestPendingMs = max(sum.OldestPendingMs, s.OldestPendingMs)
		sum.InFlight += s.InFlight
		sum.Parked += s.Parked
		sum.OldestParkedMs = max(sum.OldestParkedMs, s.OldestParkedMs)
		sum.Retries += s.Retries
		sum.Delayed += s.Delayed
	}
	return sum
}
