package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// slogLine writes one line with slog's own text handler, as the daemon
// does, so the parser is tested against the real format.
func slogLine(t *testing.T, at time.Time, msg string, args ...any) string {
	t.Helper()
	var b bytes.Buffer
	h := slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			a.Value = slog.TimeValue(at)
		}
		return a
	}})
	slog.New(h).Info(msg, args...)
	return b.String()
}

func TestParseLogLine(t *testing.T) {
	at := time.Date(2026, 11, 23, 15, 45, 2, 442_000_000, time.UTC)
	line := slogLine(t, at, "Doing some heavy work...", "workerId", "01M84H9C3S", "jobId", "J1",
		"err", `redislock: "x" = y`, "empty", "", "took", time.Second.String())
	l, err := parseLogLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if !l.at.Equal(at) || l.msg != "Doing some heavy work..." {
		t.Errorf("time %s msg %q, want %s %q", l.at, l.msg, at, "Doing some heavy work...")
	}
	want := map[string]string{"level": "INFO", "workerId": "01M84H9C3S", "jobId": "J1",
		"err": `redislock: "x" = y`, "empty": "", "took": "1s"}
	for k, v := range want {
		if got, ok := l.attrs[k]; !ok || got != v {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	if len(l.attrs) != len(want) {
		t.Errorf("attrs %v, want exactly %v", l.attrs, want)
	}
}

func TestParseLogLineRejects(t *testing.T) {
	for _, s := range []string{
		"lockworker: shutdown took longer than SHUTDOWN_TIMEOUT (10s)", // not key=value
		`msg="no time" workerId=W`,
		`time=2026-11-23T15:45:02.442Z workerId=W`,          // no msg
		`time=2026-11-23T15:45:02.442Z msg="open quote`,     // unterminated
		`time=2026-11-23T15:45:02.442Z msg="a"b workerId=W`, // junk after a quoted value
		`time=yesterday msg=x`,
	} {
		if l, err := parseLogLine(s); err == nil {
			t.Errorf("parseLogLine(%q) = %+v, want an error", s, l)
		}
	}
}

func TestWorkerID(t *testing.T) {
	at := time.Now()
	mk := func(ids ...string) []logLine {
		var out string
		for _, id := range ids {
			args := []any{}
			if id != "" {
				args = append(args, "workerId", id)
			}
			out += slogLine(t, at, "transition", args...)
		}
		lines, err := parseLog(out)
		if err != nil {
			t.Fatal(err)
		}
		return lines
	}
	if id, err := workerID(mk("A", "A", "A")); err != nil || id != "A" {
		t.Errorf("workerID = %q, %v; want A", id, err)
	}
	for name, lines := range map[string][]logLine{
		"a line without": mk("A", "", "A"),
		"another id":     mk("A", "A", "B"),
		"no lines":       nil,
	} {
		if id, err := workerID(lines); err == nil {
			t.Errorf("%s: workerID = %q, want an error", name, id)
		}
	}
}

func TestParseLogRejectsAForeignLine(t *testing.T) {
	out := slogLine(t, time.Now(), "lockworker starting", "workerId", "A") + "panic: boom\n"
	if _, err := parseLog(out); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("parseLog = %v, want an error naming line 2", err)
	}
}

// transitions builds a log of transitions, one per 100ms from t0.
func transitions(t *testing.T, t0 time.Time, steps ...[2]machine.State) []logLine {
	t.Helper()
	var out string
	for i, s := range steps {
		out += slogLine(t, t0.Add(time.Duration(i)*100*time.Millisecond), "transition",
			"workerId", "A", "from", s[0].String(), "to", s[1].String())
	}
	lines, err := parseLog(out)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestLastLease(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 100 * time.Millisecond) }
	lines := transitions(t, t0,
		[2]machine.State{machine.Idle, machine.AcquiringLock},    // 0
		[2]machine.State{machine.AcquiringLock, machine.Working}, // 1
		[2]machine.State{machine.Working, machine.RenewLock},     // 2
		[2]machine.State{machine.RenewLock, machine.Working},     // 3: the last lease
		[2]machine.State{machine.Working, machine.RenewLock},     // 4: killed mid-renew
	)
	start, end, err := lastLease(lines)
	if err != nil || !start.Equal(at(2)) || !end.Equal(at(3)) {
		t.Errorf("lastLease = %s, %s, %v; want %s, %s", start, end, err, at(2), at(3))
	}
	if lastState(lines) != machine.RenewLock.String() {
		t.Errorf("lastState = %q, want renew_lock", lastState(lines))
	}
	if _, _, err := lastLease(lines[:1]); err == nil {
		t.Error("lastLease of a log that never led: want an error")
	}
}
