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

// RunWriter is the job: run by the exec handler with the job's sequence
// number on stdin and the LOCKWORKER_* variables in its environment (its
// partition, key and that partition's token among them), it reports a Begin (where a test may hold it), works for CHAOS_WORK, then writes its effect to the
// fenced store. It exits 0 when the store accepted the write, 3 when it was
// rejected as stale and 1 on any other error. It has no timeout of its own:
// SIGTERM from the daemon, when leadership ends, ends it.
func RunWriter(stdin io.Reader, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "writer:", err)
		if errors.Is(err, fencecheck.ErrStale) {
			return exitStale
		}
		return exitError
	}
	in, err := io.ReadAll(io.LimitReader(stdin, 64))
	if err != nil {
		return fail(err)
	}
	seq, err := strconv.Atoi(strings.TrimSpace(string(in)))
	if err != nil {
		return fail(fmt.Errorf("payload %q is not a sequence number", in))
	}
	token, err := strconv.ParseInt(os.Getenv("LOCKWORKER_FENCING_TOKEN"), 10, 64)
	if err != nil {
		return fail(fmt.Errorf("LOCKWORKER_FENCING_TOKEN: %w", err))
	}
	attempt, _ := strconv.Atoi(os.Getenv("LOCKWORKER_JOB_ATTEMPT"))
	part, err := strconv.Atoi(os.Getenv("LOCKWORKER_PARTITION"))
	if err != nil {
		return fail(fmt.Errorf("LOCKWORKER_PARTITION: %w", err))
	}
	w := fencecheck.Write{
		Worker:    os.Getenv("LOCKWORKER_WORKER_ID"),
		Token:     token,
		JobID:     os.Getenv("LOCKWORKER_JOB_ID"),
		Seq:       seq,
		Attempt:   attempt,
		Partition: part,
		Key:       os.Getenv("LOCKWORKER_KEY"),
	}
	url := os.Getenv(StoreEnv)
	ctx := context.Background()
	c := &http.Client{}
	body, _ := json.Marshal(Begin{Write: w, PID: os.Getpid()})
	resp, err := c.Post(url+"/begin", "application/json", bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The work: a window in which faults find the job mid-write.
	if d, err := time.ParseDuration(os.Getenv(WorkEnv)); err == nil {
		time.Sleep(d)
	}
	if err := fencecheck.Post(ctx, c, url, w); err != nil {
		return fail(err)
	}
	return 0
}
