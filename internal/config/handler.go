package config

import "fmt"

// JobHandler is what runs a job, as JOB_HANDLER names it.
type JobHandler string

// The job handlers.
const (
	// HandlerLog simulates heavy work for WORK_DURATION (the article's demo).
	HandlerLog JobHandler = "log"
	// HandlerExec runs JOB_COMMAND with the job on stdin.
	HandlerExec JobHandler = "exec"
	// HandlerHTTP posts each job to JOB_URL.
	HandlerHTTP JobHandler = "http"
)

func (h JobHandler) String() string { return string(h) }

// UnmarshalText reads JOB_HANDLER, refusing a handler that does not exist.
func (h *JobHandler) UnmarshalText(text []byte) error {
	v := JobHandler(text)
	if err := v.check(); err != nil {
		return err
	}
	*h = v
	return nil
}

func (h JobHandler) check() error {
	switch h {
	case HandlerLog, HandlerExec, HandlerHTTP:
		return nil
	}
	return fmt.Errorf("must be log, exec or http, got %q", string(h))
}
