package main

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// ourPackages matches the name of one of lockworker's packages used as a
// message's prefix ("jobs: "), which no command's error may show.
var ourPackages = regexp.MustCompile(`\b(jobs|redislock|operator|backend|roster|history|config|keyspace|partition|notice|scriptpipe|lines|guest|httpapi|machine): `)

// TestCLIErrorsAreOneSentence: every subcommand's error, from the binary,
// is one line that names the command and says what it could not do and
// why, in the words of whoever refused (Redis, the queue's rules), with
// no chain of package names ("jobs: requeue X: jobs: no such dead
// letter"): a dead letter that does not exist, nobody leading, a bad key,
// no replica on PORT, an ACL that forbids writes, keys of the wrong type.
func TestCLIErrorsAreOneSentence(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOCK_KEY=sentences")
	keys := keyspace.MustNew("sentences")
	lockworker := func(env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := lockworker(env, "enqueue", "x"); code != 0 { // records the partition count
		t.Fatalf("enqueue: exit %d\n%s", code, out)
	}
	ctx := t.Context()
	if err := r.Client().Do(ctx, "ACL", "SETUSER", "reader", "on", ">reader-pw", "%R~*", "~"+keys.Partitions(), "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	reader := append(fastEnv("redis://reader:reader-pw@"+r.Addr()), "LOCK_KEY=sentences")
	type run struct {
		env  []string
		args []string
		want string // the whole line, or its start when it ends with "…"
		code int
	}
	freePort := strconv.Itoa(redistest.FreePort(t))
	runs := []run{
		{env, []string{"requeue", "NOPE"}, "requeue: no dead letter NOPE (lockworker deadletters lists them)", 1},
		{env, []string{"requeue", "A", "B"}, "requeue: no dead letter A, B (lockworker deadletters lists them)", 1},
		{env, []string{"stepdown"}, "stepdown: no replica leads, so none can step down", 1},
		{append(env, "PORT="+freePort), []string{"healthcheck"},
			"healthcheck: no answer from a replica on port " + freePort + " (PORT): connection refused", 1},
		{env, []string{"enqueue", "--key", "a\tb", "x"},
			`enqueue: --key "a\tb": ordering key with a control character; leave --key out for jobs without a key (lockworker enqueue -h for help)`, 2},
		{reader, []string{"pause"}, "pause: write the pause: NOPERM …", 1},
		{reader, []string{"resume"}, "resume: lift the pause: NOPERM …", 1},
		{reader, []string{"enqueue", "y"}, "enqueue: Redis refused (NOPERM …", 1},
	}
	// Then every key a command reads holds a hash: WRONGTYPE everywhere.
	wrong := []string{keys.Lease().Epoch(), keys.History(), keys.Lease().Dead(), keys.Lease().Ready()}
	after := []run{
		{env, []string{"status"}, "status: read the lock: WRONGTYPE …", 1},
		{env, []string{"partitions"}, "partitions: read the partitions: WRONGTYPE …", 1},
		{env, []string{"epoch"}, "epoch: read the epoch: WRONGTYPE …", 1},
		{env, []string{"epoch", "--raise-to", "9"}, "epoch: raise the epoch: WRONGTYPE …", 1},
		{env, []string{"stepdown"}, "stepdown: ask the leader to step down: WRONGTYPE …", 1},
		{env, []string{"history"}, "history: read the leaderships: WRONGTYPE …", 1},
		{env, []string{"deadletters"}, "deadletters: read the dead letters: WRONGTYPE …", 1},
		{env, []string{"enqueue", "z"}, "enqueue: Redis refused (WRONGTYPE …", 1},
	}
	check := func(rn run) {
		t.Helper()
		out, code := lockworker(rn.env, rn.args...)
		line, ok := strings.CutPrefix(strings.TrimSuffix(out, "\n"), "lockworker: ")
		want, prefix := strings.CutSuffix(rn.want, "…")
		switch {
		case code != rn.code:
			t.Errorf("%q: exit %d, want %d\n%s", rn.args, code, rn.code, out)
		case !ok || strings.Contains(line, "\n"):
			t.Errorf("%q: not one line after %q:\n%s", rn.args, "lockworker: ", out)
		case ourPackages.MatchString(strings.TrimPrefix(line, rn.args[0]+": ")):
			t.Errorf("%q names a package: %s", rn.args, line)
		case prefix && !strings.HasPrefix(line, want), !prefix && line != want:
			t.Errorf("%q printed\n%s\nwant\n%s", rn.args, line, rn.want)
		}
	}
	for _, rn := range runs {
		check(rn)
	}
	for _, k := range wrong {
		if err := r.Client().Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.Client().HSet(ctx, k, "not", "what you think").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, rn := range after {
		check(rn)
	}
	// Every command first checks the partition count against the
	// registry's live records.
	if err := r.Client().Del(ctx, keys.Replicas()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Client().HSet(ctx, keys.Replicas(), "not", "what you think").Err(); err != nil {
		t.Fatal(err)
	}
	check(run{env, []string{"status"}, "status: read the partition count: WRONGTYPE …", 1})
}
