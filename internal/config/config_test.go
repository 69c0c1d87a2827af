package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLoadDefaults(t *testing.T) {
	c, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3000 || c.LockKey != "lockworker:leader" || c.LockTTL != 15*time.Second ||
		c.RenewInterval != 5*time.Second || c.RetryInterval != 5*time.Second ||
		c.RedisNodeTimeout != time.Second || len(c.RedisURLs) != 1 || c.RedisURLs[0] != "redis://127.0.0.1:6379" ||
		c.LogFormat != "text" || c.JobHandler != "log" || c.JobMaxAttempts != 5 || !c.ReleaseNotices {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if len(c.WorkerID) != 26 {
		t.Fatalf("default WORKER_ID %q is not a ULID", c.WorkerID)
	}
	other, _ := Load(nil)
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
		{[]string{"WORKER_ID=a b"}, "WORKER_ID"},
		{[]string{"RELEASE_NOTICES=maybe"}, "RELEASE_NOTICES"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.env, " "), func(t *testing.T) {
			_, err := Load(tt.env)
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

func TestPasswordNeverInErrors(t *testing.T) {
	_, err := Load([]string{"REDIS_URLS=redis://user:s3cret@a:1,redis://user:s3cret@b:1"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v: want an error without the password", err)
	}
	got := Redacted([]string{"rediss://app:s3cret@h:6380/0"})
	if strings.Contains(got[0], "s3cret") || !strings.Contains(got[0], "h:6380") {
		t.Fatalf("Redacted = %q", got)
	}
}

func TestRedlockAndTLSURLsAccepted(t *testing.T) {
	c, err := Load([]string{"REDIS_URLS=rediss://app:pw@a:6380,redis://b:1,redis://c:1", "LOCK_TTL=3s", "RENEW_INTERVAL=1s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RedisURLs) != 3 || c.RedisNodeTimeout != 300*time.Millisecond {
		t.Fatalf("got %+v", c)
	}
}
