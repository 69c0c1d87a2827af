package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// The writer's environment: StoreEnv is the coordinator's URL, WorkEnv how
// long the job works between Begin and its write.
const (
	StoreEnv = "CHAOS_STORE_URL"
	WorkEnv  = "CHAOS_WORK"
)

// Exit codes of the writer.
const (
	exitStale = 3
	exitError = 1
)

// BeginReply is the coordinator's answer to a writer's Begin: Fail asks
// the run to fail (a key failing for a while, or a poisoned job).
type BeginReply struct {
	Fail bool `json:"fail"`
}

// RunWriter is the job: run by the exec handler with the job's sequence
// number on stdin (a schedule's tick: the schedule's payload, its tick in
// LOCKWORKER_SCHEDULE and LOCKWORKER_SCHEDULED_AT) and the LOCKWORKER_*
// variables in its environment (its partition, key and that partition's
// token among them), it reports a Begin (where a test may hold it, and
// whose reply may tell it to fail: it then reports the failure and exits
// 1), works for CHAOS_WORK, then writes its effect to the fenced store.
// It exits 0 when the store accepted the write, 3 when it was rejected as
// stale and 1 on any other error. It has no timeout of its own: SIGTERM
// from the daemon, when leadership ends, ends it.
func RunWriter(stdin io.Reader, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "writer:", err)
		if errors.Is(err, fencecheck.ErrStale) {
			return exitStale
		}
		return exitError
	}
	w, err := writeOf(stdin)
	if err != nil {
		return fail(err)
	}
	url := os.Getenv(StoreEnv)
	ctx := context.Background()
	c := &http.Client{}
	var rep BeginReply
	if err := post(c, url+"/begin", Begin{Write: w, PID: os.Getpid()}, &rep); err != nil {
		return fail(err)
	}
	if rep.Fail {
		if err := post(c, url+"/fail", w, nil); err != nil {
			return fail(err)
		}
		return fail(errors.New("failing on purpose, as the coordinator asked"))
	}
	// The work: a window in which faults find the job mid-write.
	if d, err := time.ParseDuration(os.Getenv(WorkEnv)); err == nil {
		time.Sleep(d)
	}
	if err := fencecheck.Post(ctx, c, url, w); err != nil {
		return fail(err)
	}
	return 0
}

// writeOf is the write this run would make, from its input and
// environment.
func writeOf(stdin io.Reader) (fencecheck.Write, error) {
	in, err := io.ReadAll(io.LimitReader(stdin, 64))
	if err != nil {
		return fencecheck.Write{}, err
	}
	w := fencecheck.Write{
		Worker: os.Getenv("LOCKWORKER_WORKER_ID"),
		JobID:  os.Getenv("LOCKWORKER_JOB_ID"),
		Key:    os.Getenv("LOCKWORKER_KEY"),
		Run:    os.Getenv("LOCKWORKER_WORKER_ID") + "/" + strconv.Itoa(os.Getpid()),
	}
	if w.Schedule = os.Getenv("LOCKWORKER_SCHEDULE"); w.Schedule != "" {
		w.Seq = -1
		if w.ScheduledAt, err = time.Parse(time.RFC3339Nano, os.Getenv("LOCKWORKER_SCHEDULED_AT")); err != nil {
			return w, fmt.Errorf("LOCKWORKER_SCHEDULED_AT: %w", err)
		}
	} else if w.Seq, err = strconv.Atoi(strings.TrimSpace(string(in))); err != nil {
		return w, fmt.Errorf("payload %q is not a sequence number", in)
	}
	if w.Token, err = strconv.ParseInt(os.Getenv("LOCKWORKER_FENCING_TOKEN"), 10, 64); err != nil {
		return w, fmt.Errorf("LOCKWORKER_FENCING_TOKEN: %w", err)
	}
	w.Attempt, _ = strconv.Atoi(os.Getenv("LOCKWORKER_JOB_ATTEMPT"))
	if w.Partition, err = strconv.Atoi(os.Getenv("LOCKWORKER_PARTITION")); err != nil {
		return w, fmt.Errorf("LOCKWORKER_PARTITION: %w", err)
	}
	return w, nil
}

// post sends v as JSON to url and decodes a 200 answer into out (if not
// nil); any answer other than 200 or 204 is an error.
func post(c *http.Client, url string, v, out any) error {
	body, _ := json.Marshal(v)
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if out != nil {
			return json.NewDecoder(resp.Body).Decode(out)
		}
	case http.StatusNoContent:
	default:
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}
