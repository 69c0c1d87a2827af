package jobs

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrHostFault marks a job that could not start because the host is out
// of descriptors, processes or memory: the host's fault, not the job's.
// Such a delivery costs the job no attempt (it is given back as never
// started); when it happens HostFaultLimit times in a row, Process
// returns an error wrapping ErrHostFault, which ends the leadership so a
// healthy replica takes the work.
var ErrHostFault = errors.New("jobs: the host is out of resources")

// hostErrnos are the errors of a host out of resources: descriptors
// (EMFILE for the process, ENFILE for the system), processes or threads
// (EAGAIN from fork or clone) and memory (ENOMEM).
var hostErrnos = []error{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.ENOMEM}

// hostFault returns err wrapped in ErrHostFault when it is, or wraps, one
// of hostErrnos or ErrHostFault; nil otherwise.
func hostFault(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrHostFault) {
		return err
	}
	for _, e := range hostErrnos {
		if errors.Is(err, e) {
			return fmt.Errorf("%w: %w", ErrHostFault, err)
		}
	}
	return nil
}
