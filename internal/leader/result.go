package leader

// AcquireResult is how an acquire attempt went, as the Observer is told.
type AcquireResult int

// How an acquire attempt goes.
const (
	AcquireError AcquireResult = iota // no answer, or the attempt failed (it was released)
	Acquired                          // the lock is ours, with a fresh token
	Held                              // another holder has it
)

var acquireResults = [...]string{AcquireError: "error", Acquired: "acquired", Held: "held"}

// String is the result as metrics label it: "error", "acquired" or "held".
func (r AcquireResult) String() string { return acquireResults[r] }

// RenewResult is how a renew attempt went, as the Observer is told.
type RenewResult int

// How a renew attempt goes.
const (
	RenewError RenewResult = iota // no answer from enough nodes; retried while time is left
	Renewed                       // the lease is extended
	Lost                          // the lease is gone
)

var renewResults = [...]string{RenewError: "error", Renewed: "renewed", Lost: "lost"}

// String is the result as metrics label it: "error", "renewed" or "lost".
func (r RenewResult) String() string { return renewResults[r] }
