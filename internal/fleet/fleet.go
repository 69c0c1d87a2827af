package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/statusdoc"
)

// Fleet owns a set of child processes and kills them all on Close.
type Fleet struct {
	mu     sync.Mutex
	procs  []*Process
	dirs   []string // temporary directories removed by Close
	closed bool
	stop   func() bool
}

// New returns an empty fleet that is closed when ctx is done.
func New(ctx context.Context) *Fleet {
	f := &Fleet{}
	f.stop = context.AfterFunc(ctx, func() { _ = f.Close() })
	return f
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("fleet: closed")

// Start starts a process and adds it to the fleet.
func (f *Fleet) Start(spec Spec) (*Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Holding mu while starting means Close cannot miss a process that is
	// being started.
	if f.closed {
		return nil, ErrClosed
	}
	p, err := start(spec)
	if err != nil {
		return nil, err
	}
	f.procs = append(f.procs, p)
	return p, nil
}

// Processes returns the processes started so far, in start order.
func (f *Fleet) Processes() []*Process {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.procs)
}

// Close kills every process with SIGKILL and waits until each is reaped.
// It is safe to call more than once and from several goroutines.
func (f *Fleet) Close() error {
	f.mu.Lock()
	f.closed = true
	procs := slices.Clone(f.procs)
	f.mu.Unlock()
	f.stop()
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.Kill())
	}
	for _, p := range procs {
		<-p.Done()
	}
	f.mu.Lock()
	dirs := f.dirs
	f.dirs = nil
	f.mu.Unlock()
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// removeOnClose has Close remove dir after every process is reaped.
func (f *Fleet) removeOnClose(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs = append(f.dirs, dir)
}

// Member is a process with the /status it answered.
type Member struct {
	*Process
	Status statusdoc.Status
}

// Leaders asks every running process among procs for /status and returns
// those that say they lead. Processes that do not answer are skipped.
func Leaders(ctx context.Context, procs []*Process) []Member {
	var out []Member
	for _, p := range procs {
		if p.Exited() {
			continue
		}
		s, err := p.Status(ctx)
		if err == nil && s.Leader {
			out = append(out, Member{Process: p, Status: s})
		}
	}
	return out
}

// SplitBrainError says more than one process claimed leadership in one poll.
type SplitBrainError struct {
	Leaders []Member
}

func (e *SplitBrainError) Error() string {
	names := make([]string, len(e.Leaders))
	for i, m := range e.Leaders {
		names[i] = fmt.Sprintf("%s (token %d)", m.Name, m.Status.Token)
	}
	return fmt.Sprintf("fleet: %d processes claim leadership at once: %v", len(names), names)
}

// WaitLeader polls procs every interval (default 10ms) until one of them
// says it leads, and returns it. More than one leader in a poll is a
// *SplitBrainError; ctx ending first is ctx's error.
func WaitLeader(ctx context.Context, procs []*Process, interval time.Duration) (Member, error) {
	if interval <= 0 {
		interval = 10 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch l := Leaders(ctx, procs); len(l) {
		case 0:
		case 1:
			return l[0], nil
		default:
			return Member{}, &SplitBrainError{Leaders: l}
		}
		select {
		case <-ctx.Done():
			return Member{}, fmt.Errorf("fleet: no leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}
