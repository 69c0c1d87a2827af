package machine_test

import (
	"fmt"

	"github.com/lockworker/lockworker/internal/machine"
)

// The state names are what operators see in logs, metrics and /status.
func ExampleStates() {
	for _, s := range machine.States() {
		fmt.Println(s)
	}
	// Output:
	// idle
	// acquiring_lock
	// working
	// renew_lock
	// pause_work
	// waiting_to_acquire_lock
	// cleanup
	// releasing_lock
}
