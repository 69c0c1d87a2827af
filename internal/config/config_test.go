package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
)

func TestLoadDefaults(t *testing.T) {
	c, err := Load(Getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3000 || c.LockKey != "lockworker:leader" || c.LockTTL != 15*time.Second ||
		c.RenewInterval != 5*time.Second || c.RetryInterval != 5*time.Second ||
		c.RedisNodeTimeout != time.Second || len(c.RedisURLs) != 1 || c.RedisURLs[0] != "redis://127.0.0.1:6379" ||
		c.LogFormat != "text" || c.JobHandler != "log" || c.JobMaxAttempts != jobs.DefaultMaxAttempts || !c.ReleaseNotices ||
		c.JobRetryBase != time.Second || c.JobRetryMax != time.Minute || c.JobOnFailure != "park" ||
		c.JobConcurrency != jobs.DefaultConcurrency {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if c.JobBatch != jobs.DefaultBatch || c.Partitions != 1 || c.LogLevel != LevelInfo || c.LogLevel.String() != "info" {
		t.Fatalf("JOB_BATCH %d, PARTITIONS %d, LOG_LEVEL %v; want the jobs package's %d, 1 and info",
			c.JobBatch, c.Partitions, c.LogLevel, jobs.DefaultBatch)
	}
	if c.JobIdempotencyTTL != jobs.DefaultIdempotencyTTL {
		t.Fatalf("JOB_IDEMPOTENCY_TTL %s, want the jobs package's %s", c.JobIdempotencyTTL, jobs.DefaultIdempotencyTTL)
	}
	if len(c.WorkerID) != 26 {
		t.Fatalf("default WORKER_ID %q is not a ULID", c.WorkerID)
	}
	other, _ := Load(Getenv(nil))
	if other.WorkerID == c.WorkerID {
		t.Fatal("two loads share a worker ID")
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"PORT=abc"}, "PORT"},
		{[]string{"PORT=70000"}, "PORT"},
		{[]string{"LOCK_TTL=-5s"}, "LOCK_TTL"},
		{[]string{"LOCK_TTL=soon"}, "LOCK_TTL"},
		{[]string{"RENEW_INTERVAL=8s"}, "RENEW_INTERVAL"},
		{[]string{"RENEW_INTERVAL=-1s"}, "RENEW_INTERVAL"},
		{[]string{"RETRY_INTERVAL=0s"}, "RETRY_INTERVAL"},
		{[]string{"REDIS_URLS=http://x:1"}, "REDIS_URLS"},
		{[]string{"REDIS_URLS=redis://a:1,redis://b:1"}, "REDIS_URLS"},
		{[]string{"REDIS_URLS=redis://a:1,redis://b:1,redis://c:1,redis://d:1"}, "REDIS_URLS"},
		{[]string{"REDIS_URLS=redis://:1"}, "REDIS_URLS"},
		{[]string{"REDIS_NODE_TIMEOUT=6s"}, "REDIS_NODE_TIMEOUT"},
		{[]string{"CLOCK_DRIFT_FACTOR=0.7"}, "CLOCK_DRIFT_FACTOR"},
		{[]string{"LOG_LEVEL=loud"}, "LOG_LEVEL"},
		{[]string{"LOG_FORMAT=xml"}, "LOG_FORMAT"},
		{[]string{"SHUTDOWN_TIMEOUT=-1s"}, "SHUTDOWN_TIMEOUT"},
		{[]string{"JOB_HANDLER=exec"}, "JOB_COMMAND"},
		{[]string{"JOB_HANDLER=python"}, "JOB_HANDLER"},
		{[]string{"JOB_MAX_ATTEMPTS=0"}, "JOB_MAX_ATTEMPTS"},
		{[]string{"JOB_RETRY_BASE=0s"}, "JOB_RETRY_BASE"},
		{[]string{"JOB_RETRY_BASE=2m"}, "JOB_RETRY_MAX"},
		{[]string{"JOB_ON_FAILURE=skip"}, "JOB_ON_FAILURE"},
		{[]string{"JOB_CONCURRENCY=0"}, "JOB_CONCURRENCY"},
		{[]string{"JOB_CONCURRENCY=1025"}, "JOB_CONCURRENCY"},
		{[]string{"JOB_BATCH=0"}, "JOB_BATCH"},
		{[]string{"PARTITIONS=0"}, "PARTITIONS"},
		{[]string{"PARTITIONS=1025"}, "PARTITIONS"},
		{[]string{"PARTITIONS=x"}, "PARTITIONS"},
		{[]string{"JOB_BATCH=-3"}, "JOB_BATCH"},
		{[]string{"JOB_BATCH=1001"}, "JOB_BATCH"},
		{[]string{"JOB_BATCH=many"}, "JOB_BATCH"},
		{[]string{"JOB_IDEMPOTENCY_TTL=500ms"}, "JOB_IDEMPOTENCY_TTL"},
		{[]string{"JOB_IDEMPOTENCY_TTL=-1h"}, "JOB_IDEMPOTENCY_TTL"},
		{[]string{"WORKER_ID=a b"}, "WORKER_ID"},
		{[]string{"WORKER_ID=a\x1b[2Jb"}, "WORKER_ID"},
		{[]string{"WORKER_ID=wörker"}, "WORKER_ID"},
		{[]string{"WORKER_ID=" + strings.Repeat("w", 129)}, "WORKER_ID"},
		{[]string{"RELEASE_NOTICES=maybe"}, "RELEASE_NOTICES"},
		{[]string{"JOB_ENV=REDIS_URLS"}, "JOB_ENV"},
		{[]string{"JOB_ENV=HTTP_PROXY,REDIS_PASSWORD"}, "JOB_ENV"},
		{[]string{"JOB_ENV=JOBS_TOKEN"}, "JOB_ENV"},
		{[]string{"JOB_ENV=ADMIN_TOKEN"}, "JOB_ENV"},
		{[]string{"JOB_ENV=LOCKWORKER_FENCING_TOKEN"}, "JOB_ENV"},
		{[]string{"JOB_ENV=A,,B"}, "JOB_ENV"},
		{[]string{"JOB_ENV=A=B"}, "JOB_ENV"},
		{[]string{"JOB_STOP_GRACE=0s"}, "JOB_STOP_GRACE"},
		{[]string{"JOB_STOP_GRACE=-1s"}, "JOB_STOP_GRACE"},
		{[]string{"JOB_STOP_GRACE=soon"}, "JOB_STOP_GRACE"},
		{[]string{"LOCK_TTL=3ms"}, "LOCK_TTL"},
		{[]string{"WORK_DURATION=0"}, "WORK_DURATION"},
		{[]string{"WORK_DURATION=-1s"}, "WORK_DURATION"},
		{[]string{"HTTP_MAX_CONNS=0"}, "HTTP_MAX_CONNS"},
		{[]string{"HTTP_MAX_BODY_BYTES=1048576"}, "HTTP_MAX_BODY_BYTES"},
		{[]string{"REDIS_URLS=redis://a:1,redis://b:1,redis://a:1"}, "REDIS_URLS"},
		{[]string{"REDIS_URLS=redis://A,redis://b:1,redis://a:6379/2"}, "REDIS_URLS"},
		{[]string{"REDIS_URLS=redis://localhost:7,redis://b:1,rediss://u:p@127.0.0.1:7"}, "REDIS_URLS"},
		{[]string{"REDIS_MODE=ring"}, "REDIS_MODE"},
		{[]string{"REDIS_MODE=redlock"}, "REDIS_MODE"}, // a topology, named from standalone's URLs
		{[]string{"REDIS_MODE=sentinel", "REDIS_URLS=redis://s1:26379"}, "REDIS_SENTINEL_MASTER"},
		{[]string{"REDIS_SENTINEL_MASTER=mymaster"}, "REDIS_SENTINEL_MASTER"},
		{[]string{"REDIS_MODE=cluster", "REDIS_SENTINEL_PASSWORD=x"}, "REDIS_SENTINEL_PASSWORD"},
		{[]string{"REDIS_MODE=cluster", "REDIS_SENTINEL_USERNAME=x"}, "REDIS_SENTINEL_USERNAME"},
		{[]string{"REDIS_MODE=cluster", "REDIS_URLS=redis://a:1/2"}, "REDIS_URLS"},
		{[]string{"REDIS_MODE=cluster", "REDIS_URLS=redis://u:p@a:1,redis://b:1"}, "REDIS_URLS"},
		{[]string{"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=m", "REDIS_URLS=rediss://a:1,redis://b:1"}, "REDIS_URLS"},
		{[]string{"LOCK_KEY=}x"}, "LOCK_KEY"},
		{[]string{"REDIS_MIN_REPLICAS=-2"}, "REDIS_MIN_REPLICAS"},
		{[]string{"REDIS_MIN_REPLICAS=one"}, "REDIS_MIN_REPLICAS"},
		{[]string{"JOB_HANDLER=http"}, "JOB_URL"},
		{[]string{"JOB_HANDLER=http", "JOB_URL=ftp://h/jobs"}, "JOB_URL"},
		{[]string{"JOB_URL=http:///jobs"}, "JOB_URL"},
		{[]string{"JOB_URL=store:8080"}, "JOB_URL"},
		{[]string{"JOB_URL=http://h/jobs", "JOB_URL_CA=/etc/ca.pem"}, "JOB_URL_CA"},
		{[]string{"JOB_URL_TOKEN=two words"}, "JOB_URL_TOKEN"},
		{[]string{"JOB_TIMEOUT=0s"}, "JOB_TIMEOUT"},
		{[]string{"JOB_TIMEOUT=-1s"}, "JOB_TIMEOUT"},
		{[]string{"JOB_TIMEOUT=soon"}, "JOB_TIMEOUT"},
		{[]string{"JOBS_TOKEN=short"}, "JOBS_TOKEN"},
		{[]string{"LOCK_TTL=9ms"}, "LOCK_TTL"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.env, " "), func(t *testing.T) {
			_, err := Load(Getenv(tt.env))
			var ce *Error
			if !errors.As(err, &ce) || ce.Var != tt.want {
				t.Fatalf("Load(%v) = %v; want an error naming %s", tt.env, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want+": ") {
				t.Fatalf("message %q does not start with the variable", err)
			}
		})
	}
}

// TestLoadReportsEveryVariable: every bad variable is reported in one run,
// each once, in the order of the configuration table, whether its value
// cannot be read or breaks a rule, and a value that cannot be read is
// said in words, not in strconv's.
func TestLoadReportsEveryVariable(t *testing.T) {
	_, err := Load(Getenv([]string{"PORT=abc", "WORKER_ID=two words", "RENEW_INTERVAL=LOCK_TTL", "LOG_LEVEL=loud"}))
	want := []string{
		`PORT: "abc" is not a port number`,
		`RENEW_INTERVAL: "LOCK_TTL" is not a duration such as 5s or 500ms`,
		`WORKER_ID: must be 1 to 128 printable ASCII characters without spaces (it is also the replica's Redis client name), got "two words"`,
		`LOG_LEVEL: must be debug, info, warn or error, got "loud"`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Load = %v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	for env, msg := range map[string]string{
		"LOCK_TTL=soon":          `LOCK_TTL: "soon" is not a duration such as 5s or 500ms`,
		"RELEASE_NOTICES=maybe":  `RELEASE_NOTICES: "maybe" is not true or false`,
		"CLOCK_DRIFT_FACTOR=x":   `CLOCK_DRIFT_FACTOR: "x" is not a number`,
		"JOB_BATCH=many":         `JOB_BATCH: "many" is not a whole number`,
		"HTTP_MAX_BODY_BYTES=1k": `HTTP_MAX_BODY_BYTES: "1k" is not a whole number`,
		"JOB_HANDLER=python":     `JOB_HANDLER: must be log, exec or http, got "python"`,
		"LOG_FORMAT=xml":         `LOG_FORMAT: must be text or json, got "xml"`,
	} {
		if _, err := Load(Getenv([]string{env})); err == nil || err.Error() != msg {
			t.Errorf("%s: %v, want %s", env, err, msg)
		}
	}
	// A value that cannot be read counts as its default for the others'
	// relations, and is reported once: not again as 0 breaking a rule.
	_, err = Load(Getenv([]string{"LOCK_TTL=soon", "RENEW_INTERVAL=2s"}))
	if err == nil || err.Error() != `LOCK_TTL: "soon" is not a duration such as 5s or 500ms` {
		t.Fatalf("Load = %v; want only LOCK_TTL's error", err)
	}
}

// TestTypedSettings: JOB_HANDLER, LOG_FORMAT and LOG_LEVEL are read into
// their types, in any of the spellings slog accepts for a level.
func TestTypedSettings(t *testing.T) {
	c, err := Load(Getenv([]string{"JOB_HANDLER=exec", "JOB_COMMAND=cat", "LOG_FORMAT=json", "LOG_LEVEL=WARN"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.JobHandler != HandlerExec || c.LogFormat != LogJSON || c.LogLevel != LevelWarn || c.LogLevel.Level() != slog.LevelWarn {
		t.Fatalf("JOB_HANDLER %v, LOG_FORMAT %v, LOG_LEVEL %v", c.JobHandler, c.LogFormat, c.LogLevel)
	}
	if s := c.String(); !strings.Contains(s, "JOB_HANDLER=exec") || !strings.Contains(s, "LOG_FORMAT=json") || !strings.Contains(s, "LOG_LEVEL=warn") {
		t.Fatalf("String = %s", s)
	}
	if c, err := Load(Getenv([]string{"LOG_LEVEL=debug-4"})); err != nil || c.LogLevel.Level() != slog.LevelDebug-4 {
		t.Fatalf("LOG_LEVEL=debug-4: %v, %v", c.LogLevel, err)
	}
	bad := Config{JobHandler: "python", LogFormat: "xml"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "JOB_HANDLER: must be") || !strings.Contains(err.Error(), "LOG_FORMAT: must be") {
		t.Fatalf("Validate of a Config built with bad values: %v", err)
	}
}

func TestPasswordNeverInErrors(t *testing.T) {
	_, err := Load(Getenv([]string{"REDIS_URLS=redis://user:s3cret@a:1,redis://user:s3cret@b:1"}))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v: want an error without the password", err)
	}
	got := Redacted([]string{"rediss://app:s3cret@h:6380/0"})
	if strings.Contains(got[0], "s3cret") || !strings.Contains(got[0], "h:6380") {
		t.Fatalf("Redacted = %q", got)
	}
}

func TestRedlockAndTLSURLsAccepted(t *testing.T) {
	c, err := Load(Getenv([]string{"REDIS_URLS=rediss://app:pw@a:6380,redis://b:1,redis://c:1", "LOCK_TTL=3s", "RENEW_INTERVAL=1s"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RedisURLs) != 3 || c.RedisNodeTimeout != 300*time.Millisecond {
		t.Fatalf("got %+v", c)
	}
}

// TestModesAccepted: each mode with what it needs; Cluster takes any
// number of seeds, Sentinel any number of sentinels.
func TestModesAccepted(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		topo Mode
	}{
		{[]string{"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=mymaster", "REDIS_URLS=redis://:pw@s1:26379,redis://:pw@s2:26379",
			"REDIS_SENTINEL_USERNAME=sen", "REDIS_SENTINEL_PASSWORD=spw"}, ModeSentinel},
		{[]string{"REDIS_MODE=cluster", "REDIS_URLS=redis://a:7000,redis://b:7000/0,redis://c:7000,redis://d:7000"}, ModeCluster},
		{[]string{"REDIS_MODE=standalone", "LOCK_KEY=app:{leader}"}, ModeStandalone},
		{[]string{"REDIS_URLS=redis://a:1,redis://b:1,redis://c:1"}, ModeRedlock},
	} {
		c, err := Load(Getenv(tt.env))
		if err != nil {
			t.Errorf("%v: %v", tt.env, err)
		} else if c.Topology() != tt.topo {
			t.Errorf("%v: topology %q, want %q", tt.env, c.Topology(), tt.topo)
		}
	}
	if c, _ := Load(Getenv(nil)); c.RedisMode != ModeStandalone || c.RedisMinReplicas != 0 {
		t.Fatalf("defaults: REDIS_MODE %q, REDIS_MIN_REPLICAS %d; want standalone, 0", c.RedisMode, c.RedisMinReplicas)
	}
	for env, want := range map[string]int{
		"REDIS_MODE=cluster": 1, "REDIS_MODE=cluster REDIS_MIN_REPLICAS=0": 0, "REDIS_MODE=standalone REDIS_MIN_REPLICAS=2": 2,
	} {
		if c, err := Load(Getenv(strings.Fields(env))); err != nil || c.RedisMinReplicas != want {
			t.Errorf("%s: REDIS_MIN_REPLICAS %d (%v), want %d", env, c.RedisMinReplicas, err, want)
		}
	}
}

// TestSecretsNeverPrinted: every way a Config can reach a log (%v, %+v, %#v,
// String, slog text and JSON) names the variables and hides the secrets.
func TestSecretsNeverPrinted(t *testing.T) {
	c, err := Load(Getenv([]string{"REDIS_URLS=rediss://app:s3cret-pw@h:6380", "JOBS_TOKEN=tok-s3cret-0123456789",
		"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=m", "REDIS_SENTINEL_PASSWORD=sen-s3cret",
		"JOB_HANDLER=http", "JOB_URL=https://svc:url-s3cret@store:8443/jobs", "JOB_URL_TOKEN=jtok-s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("config", "cfg", c)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("config", "cfg", c)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"String": c.String(), "slog text": text.String(), "slog JSON": js.String(),
	} {
		for _, secret := range []string{"s3cret-pw", "tok-s3cret", "sen-s3cret", "url-s3cret", "jtok-s3cret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows %q: %s", name, secret, out)
			}
		}
		for _, want := range []string{"REDIS_URLS", "h:6380", "JOBS_TOKEN", "[redacted]", "LOCK_TTL", "15s", "REDIS_SENTINEL_PASSWORD",
			"JOB_URL", "store:8443/jobs", "JOB_URL_TOKEN", "JOB_TIMEOUT"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q: %s", name, want, out)
			}
		}
	}
	if empty, _ := Load(Getenv(nil)); strings.Contains(empty.String(), "[redacted]") {
		t.Errorf("an unset token shows as redacted: %s", empty)
	}
}

func TestJobEnvAndStopGrace(t *testing.T) {
	c, err := Load(Getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.JobEnv) != 0 || c.JobStopGrace != 5*time.Second {
		t.Fatalf("defaults: JobEnv %q, JobStopGrace %s; want none and 5s", c.JobEnv, c.JobStopGrace)
	}
	c, err = Load(Getenv([]string{"JOB_ENV=HTTP_PROXY, NO_PROXY", "JOB_STOP_GRACE=250ms"}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.JobEnv, "|") != "HTTP_PROXY|NO_PROXY" || c.JobStopGrace != 250*time.Millisecond {
		t.Fatalf("got JobEnv %q, JobStopGrace %s", c.JobEnv, c.JobStopGrace)
	}
}

// The message names the variable it refuses and why, for the operator.
func TestJobEnvRefusalSaysWhy(t *testing.T) {
	_, err := Load(Getenv([]string{"JOB_ENV=HTTP_PROXY,REDIS_URLS"}))
	if err == nil || !strings.Contains(err.Error(), `JOB_ENV: "REDIS_URLS" is a Redis setting`) {
		t.Fatalf("Load = %v; want JOB_ENV's refusal of REDIS_URLS, with the reason", err)
	}
}

// The duplicate-server message says which URLs, without their passwords.
func TestDuplicateServersNamed(t *testing.T) {
	_, err := Load(Getenv([]string{"REDIS_URLS=redis://:s3cret@h:1,redis://b:1,redis://:s3cret@H:1/3"}))
	want := "REDIS_URLS: URL 1 and URL 3 name the same server (h:1); Redlock needs independent servers"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Load = %v; want %q", err, want)
	}
	if _, err := Load(Getenv([]string{"REDIS_URLS=redis://a:1,redis://a:2,redis://b:1", "LOCK_TTL=10ms", "RENEW_INTERVAL=4ms", "RETRY_INTERVAL=5ms"})); err != nil {
		t.Fatalf("distinct servers and the minimum TTL refused: %v", err)
	}
}

// The http handler's settings: accepted, with JOB_TIMEOUT's default; the
// URL's password and the token are taken out where they stand; a refused
// URL is never quoted.
func TestJobURL(t *testing.T) {
	c, err := Load(Getenv([]string{"JOB_HANDLER=http", "JOB_URL=https://svc:pw%2Fs3cret@store:8443/jobs",
		"JOB_URL_TOKEN=jtok-s3cret", "JOB_URL_CA=/etc/ca.pem"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.JobTimeout != 30*time.Second {
		t.Fatalf("JOB_TIMEOUT default %s, want 30s", c.JobTimeout)
	}
	scrubbed := c.Scrub("sent to https://svc:pw%2Fs3cret@store:8443/jobs with Authorization: Bearer jtok-s3cret")
	if strings.Contains(scrubbed, "s3cret") {
		t.Fatalf("Scrub left a secret: %s", scrubbed)
	}
	_, err = Load(Getenv([]string{"JOB_HANDLER=http", "JOB_URL=gopher://u:pw-s3cret@h/"}))
	if err == nil || !strings.Contains(err.Error(), `JOB_URL: scheme must be http or https, got "gopher"`) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Load = %v; want JOB_URL's refusal without the password", err)
	}
}
