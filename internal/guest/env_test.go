package guest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	environ := []string{
		"PATH=/bin", "HOME=/home/w", "TZ=", "LANG=C.UTF-8",
		"REDIS_URLS=redis://:secret@h:6379", "JOBS_TOKEN=t", "HTTP_PROXY=http://p", "NO_PROXY=",
		"LOCKWORKER_FENCING_TOKEN=999", "OTHER=x", "PATH=/shadowed",
	}
	got := Env(environ, []string{"HTTP_PROXY", "NO_PROXY", "UNSET", "PATH"},
		map[string]string{"LOCKWORKER_JOB_ID": "j1", "LOCKWORKER_FENCING_TOKEN": "7"})
	want := []string{
		"PATH=/bin", "HOME=/home/w", "LANG=C.UTF-8", "TZ=", // set, even empty
		"HTTP_PROXY=http://p", "NO_PROXY=",
		"LOCKWORKER_FENCING_TOKEN=7", "LOCKWORKER_JOB_ID=j1", // the job's, not the daemon's
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Env =\n%q\nwant\n%q", got, want)
	}
	if got := Env(nil, nil, nil); len(got) != 0 {
		t.Fatalf("Env of nothing = %q", got)
	}
}

func TestCheckEnvName(t *testing.T) {
	for _, name := range []string{"HTTP_PROXY", "no_proxy", "_X", "A1"} {
		if err := CheckEnvName(name); err != nil {
			t.Errorf("CheckEnvName(%q) = %v; want nil", name, err)
		}
	}
	tests := []struct{ name, reason string }{
		{"REDIS_URLS", "Redis"},
		{"REDIS_PASSWORD", "Redis"},
		{"REDIS_CA_FILE", "Redis"},
		{"JOBS_TOKEN", "token"},
		{"ADMIN_TOKEN", "token"},
		{"LOCKWORKER_FENCING_TOKEN", "set by the daemon"},
		{"", "not a variable name"},
		{"A B", "not a variable name"},
		{"A=B", "not a variable name"},
		{"1A", "not a variable name"},
	}
	for _, tt := range tests {
		err := CheckEnvName(tt.name)
		var e *EnvNameError
		if !errors.As(err, &e) || e.Name != tt.name || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("CheckEnvName(%q) = %v; want an *EnvNameError saying %q", tt.name, err, tt.reason)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Command is required"},
		{Config{Command: []string{""}}, "Command is required"},
		{Config{Command: []string{"true"}, Grace: -time.Second}, "Grace must not be negative"},
		{Config{Command: []string{"true"}, AllowEnv: []string{"OK", "REDIS_URLS"}}, `AllowEnv: "REDIS_URLS"`},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v; want an error containing %q", tt.cfg, err, tt.want)
		}
	}
	g, err := New(Config{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.Grace != DefaultGrace || g.cfg.Logger == nil || g.cfg.Supervisor != defaultSupervisor {
		t.Fatalf("defaults not filled in: %+v", g.cfg)
	}
}

func TestRunRefusesForeignJobVariables(t *testing.T) {
	g, err := New(Config{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Run(t.Context(), nil, map[string]string{"JOB_ID": "1"}, nil); err == nil || !strings.Contains(err.Error(), "JOB_ID") {
		t.Fatalf("Run with vars JOB_ID = %v; want an error naming it", err)
	}
}

func TestKillTime(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) func() time.Time { return func() time.Time { return now.Add(d) } }
	tests := []struct {
		name     string
		deadline func() time.Time
		want     time.Time
		why      killReason
	}{
		{"no deadline: the grace", nil, now.Add(5 * time.Second), killedAfterGrace},
		{"deadline after the grace", at(time.Minute), now.Add(5 * time.Second), killedAfterGrace},
		{"deadline within the grace", at(200 * time.Millisecond), now.Add(200 * time.Millisecond), killedAtDeadline},
		{"deadline passed: at once", at(-time.Second), now.Add(-time.Second), killedAtDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := killTime(now, 5*time.Second, tt.deadline)
			if !got.Equal(tt.want) || why != tt.why {
				t.Fatalf("killTime = %v, %q; want %v, %q", got.Sub(now), why, tt.want.Sub(now), tt.why)
			}
		})
	}
}
