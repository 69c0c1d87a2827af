package statusdoc

import "github.com/lockworker/lockworker/internal/jobs/figures"

// Status is the body of GET /status.
type Status struct {
	WorkerID  string `json:"workerId"`
	State     string `json:"state"`
	Leader    bool   `json:"leader"`
	Token     int64  `json:"token"`
	LockKey   string `json:"lockKey"`
	LeaseLeft int64  `json:"leaseLeftMs"`
	Mode      string `json:"mode"`
	Nodes     int    `json:"redisNodes"`
	RedisOK   bool   `json:"redisOk"`
	Version   string `json:"version"`
	// Holder is who holds the lock, as Redis says (the lock value carries
	// the holder's worker ID and token): on a follower, who leads.
	Holder *Holder `json:"holder,omitempty"`
	Queue  *Queue  `json:"queue,omitempty"`
	// Schedules are the fleet's schedules, by name, each with its last
	// and next tick ([] for none); SchedulesError is "unavailable" when
	// they could not be read in time.
	Schedules      []figures.Schedule `json:"schedules"`
	SchedulesError string             `json:"schedulesError,omitempty"`
	// Partitions is the fleet's partition count (PARTITIONS).
	Partitions int `json:"partitions"`
	// Leads lists the partitions this replica leads, with their tokens,
	// when the fleet has more than one (State, Leader and Token then
	// speak of all of them: working and true when it leads any).
	Leads []LeadStatus `json:"leads,omitempty"`
	// Lanes lists this replica's lanes, one per partition, each with its
	// chart state and why it does not lead.
	Lanes []LaneStatus `json:"lanes"`
	// JobSlots is this replica's job slots (JOB_CONCURRENCY) and how
	// many its jobs hold now.
	JobSlots JobSlots `json:"jobSlots"`
	// Eviction is each Redis master's maxmemory-policy as this replica
	// last read it. Safe false: a master evicts keys (or none has
	// answered yet), and this replica does not lead (/readyz says 503).
	Eviction *Eviction `json:"redisEviction,omitempty"`
	// Replicas, when set, is why no lease can be taken: a Redis master
	// has fewer online replicas than REDIS_MIN_REPLICAS asks, so no
	// fencing epoch bump is acknowledged there (/readyz says 503).
	Replicas *ReplicaShortage `json:"redisReplicas,omitempty"`
}

// ReplicaShortage is the masters short of replicas, in /status.
type ReplicaShortage struct {
	// Reason says what is short, and the two ways out.
	Reason  string          `json:"reason"`
	Masters []ReplicaMaster `json:"masters"`
}

// ReplicaMaster is one master short of replicas: how many it has online
// and how many REDIS_MIN_REPLICAS asks for.
type ReplicaMaster struct {
	Master         string `json:"master"`
	OnlineReplicas int    `json:"onlineReplicas"`
	MinReplicas    int    `json:"minReplicas"`
}

// Eviction is the Redis masters' eviction policies, in /status.
type Eviction struct {
	Safe bool `json:"safe"`
	// Reason says why not safe, and the fix.
	Reason string         `json:"reason,omitempty"`
	Nodes  []EvictionNode `json:"nodes"`
}

// EvictionNode is one master's maxmemory-policy ("" when never read),
// and the error of its last read, if it failed.
type EvictionNode struct {
	Node   string `json:"node"`
	Policy string `json:"policy,omitempty"`
	Error  string `json:"error,omitempty"`
}

// LeadStatus is one partition this replica leads, in /status.
type LeadStatus struct {
	Partition   int   `json:"partition"`
	Token       int64 `json:"token"`
	LeaseLeftMs int64 `json:"leaseLeftMs"`
}

// JobSlots is a replica's share of the work in /status: Size is
// JOB_CONCURRENCY, the most jobs it runs at once over every partition it
// leads; InUse how many run now.
type JobSlots struct {
	Size  int `json:"size"`
	InUse int `json:"inUse"`
}

// LaneStatus is one lane of this replica (one partition's leadership),
// in /status.
type LaneStatus struct {
	Partition int    `json:"partition"`
	State     string `json:"state"`
	// Token and LeaseLeftMs are the lease's while the lane leads; 0
	// otherwise.
	Token       int64 `json:"token"`
	LeaseLeftMs int64 `json:"leaseLeftMs"`
	// Reason says why the lane does not lead (who holds the lock, not
	// this replica's share, Redis evicts keys, a hold after a step-down,
	// ...), or that it leads a paused queue ("paused: ..."); empty while
	// it leads and works.
	Reason string `json:"reason"`
}

// Holder is the lock as Redis holds it, in /status: Held false when it is
// free, Error "unavailable" when Redis did not answer in time.
type Holder struct {
	Held     bool   `json:"held"`
	WorkerID string `json:"workerId,omitempty"`
	Token    int64  `json:"token,omitempty"`
	// LeaseLeftMs is how long the holder keeps the lock if it does not
	// renew (Redis's TTL of the key; with Redlock, of the quorum's keys).
	LeaseLeftMs int64  `json:"leaseLeftMs,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Queue is the job queue's figures in /status, or, when they could not be
// read in time, zeros and why.
type Queue struct {
	figures.Queue
	Error string `json:"error,omitempty"`
}
