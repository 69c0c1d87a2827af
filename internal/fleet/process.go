package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/tail"
)

// Spec describes a process to start.
type Spec struct {
	// Name identifies the process in errors and output; required.
	Name string
	// Path is the executable; required.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env is the child's whole environment ("KEY=value"); nothing is
	// inherited. PORT is appended to it.
	Env []string
	// Port is the child's PORT. Default: a free loopback port.
	Port int
	// Output, if set, receives a copy of the child's stdout and stderr as
	// they arrive. It is written from another goroutine and must be safe
	// for that.
	Output io.Writer
	// Dir is the working directory. Default: the supervisor's.
	Dir string
}

// Process is one child process.
type Process struct {
	// Name is Spec.Name.
	Name string
	// Port is the child's PORT.
	Port int

	cmd  *exec.Cmd
	out  *tail.Buffer
	http *http.Client
	done chan struct{}

	mu     sync.Mutex // guards exited and err, and orders signals before reaping
	exited bool
	err    error
}

// maxOutput bounds what a Process keeps of its child's output.
const maxOutput = 4 << 20

func start(spec Spec) (*Process, error) {
	if spec.Name == "" {
		return nil, errors.New("fleet: Spec.Name is required")
	}
	if spec.Path == "" {
		return nil, fmt.Errorf("fleet: %s: Spec.Path is required", spec.Name)
	}
	port := spec.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	p := &Process{
		Name: spec.Name,
		Port: port,
		out:  &tail.Buffer{Max: maxOutput},
		http: &http.Client{Timeout: time.Second},
		done: make(chan struct{}),
	}
	var out io.Writer = p.out
	if spec.Output != nil {
		out = io.MultiWriter(p.out, spec.Output)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(append([]string(nil), spec.Env...), "PORT="+strconv.Itoa(port))
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild that keeps the output pipe open must not hang Wait.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fleet: start %s: %w", spec.Name, err)
	}
	p.cmd = cmd
	go p.reap()
	return p, nil
}

// reap marks the child exited before its PID is released: signals check
// exited under mu, so none can reach another process that reuses the PID.
func (p *Process) reap() {
	waitExited(p.cmd.Process.Pid)
	p.mu.Lock()
	p.exited = true
	p.mu.Unlock()
	err := p.cmd.Wait()
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	close(p.done)
}

// PID is the child's process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// URL is the base URL of the child's HTTP server.
func (p *Process) URL() string { return "http://127.0.0.1:" + strconv.Itoa(p.Port) }

// Output returns what the child has written to stdout and stderr so far
// (the last 4 MiB).
func (p *Process) Output() string { return p.out.String() }

// LastLines returns the last n lines of the child's output, for errors.
func (p *Process) LastLines(n int) string { return p.out.Lines(n) }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the child's exit error (nil for exit status 0), valid once Done
// is closed.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Wait waits for the child to exit and returns its exit error (nil for
// exit status 0), or ctx's error if ctx ends first.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.Err()
	case <-ctx.Done():
		return fmt.Errorf("fleet: %s still running: %w", p.Name, ctx.Err())
	}
}

// ErrExited is returned for a signal to a process that has already exited.
var ErrExited = errors.New("fleet: process has exited")

// Signal sends sig to the child, if it has not been reaped yet.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return ErrExited
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("fleet: %v to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Terminate sends SIGTERM: a lockworker replica stops work, releases the
// lock and exits 0 within SHUTDOWN_TIMEOUT.
func (p *Process) Terminate() error { return p.Signal(syscall.SIGTERM) }

// Pause sends SIGSTOP and returns once every thread of the child has
// stopped: it keeps its sockets but does nothing.
func (p *Process) Pause() error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	if !WaitStopped(p.PID(), 5*time.Second) {
		return fmt.Errorf("fleet: %s did not stop within 5s of SIGSTOP", p.Name)
	}
	return nil
}

// Resume sends SIGCONT to a paused child.
func (p *Process) Resume() error { return p.Signal(syscall.SIGCONT) }

// Kill sends SIGKILL to the child's process group (after a SIGCONT, so a
// paused child dies too) without waiting; see Wait. Killing a child that
// has exited is not an error.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return nil
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		// Not a group leader after all: fall back to the process alone.
		if err := p.cmd.Process.Kill(); err != nil {
			return fmt.Errorf("fleet: kill %s: %w", p.Name, err)
		}
	}
	return nil
}

// Status reads the child's GET /status.
func (p *Process) Status(ctx context.Context) (statusdoc.Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/status", nil)
	if err != nil {
		return statusdoc.Status{}, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return statusdoc.Status{}, fmt.Errorf("fleet: %s /status: %w", p.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusdoc.Status{}, fmt.Errorf("fleet: %s /status: %s", p.Name, resp.Status)
	}
	var s statusdoc.Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return statusdoc.Status{}, fmt.Errorf("fleet: %s /status: %w", p.Name, err)
	}
	return s, nil
}

// String names the process.
func (p *Process) String() string {
	return fmt.Sprintf("%s (pid %d, port %d)", p.Name, p.PID(), p.Port)
}
