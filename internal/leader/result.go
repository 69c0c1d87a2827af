package leader

// AcquireResult is how an acquire attempt went, as the Observer is told.
type AcquireResult int

// How an acquire attempt goes.
const (
	AcquireError AcquireResult = iota // no answer, or the attempt failed (it was released)
	Acquired                          // the lock is ours, with a fresh token
	Held                              // another holder has it
)

// String is the result as metrics label it: "error", "acquired", "held".
func (r AcquireResult) String() string {
	switch r {
	case Acquired:
		return "acquired"
	case Held:
		return "held"
	}
	return "error"
}

// RenewResult is how a renew attempt went, as the Observer is told.
type RenewResult int

// How a renew attempt goes.
const (
	RenewError RenewResult = iota // no answer from enough nodes; retried while time is left
	Renewed                       // the lease is extended
	Lost                          // the lease is gone
)

// String is the result as metrics label it: "error", "renewed", "lost".
func (r RenewResult) String() string {
	switch r {
	case Renewed:
		return "renewed"
	case Lost:
		return "lost"
	}
	return "error"
}
