package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// logLine is one line of a worker's slog text log: its time, message and
// every other key=value pair.
type logLine struct {
	at    time.Time
	msg   string
	attrs map[string]string
}

// parseLogLine reads a slog text line: key=value pairs separated by
// spaces, a value either bare or a Go-quoted string. It needs time and msg.
func parseLogLine(s string) (logLine, error) {
	l := logLine{attrs: map[string]string{}}
	rest := strings.TrimSpace(s)
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return logLine{}, fmt.Errorf("not key=value at %q", rest)
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				return logLine{}, fmt.Errorf("bad quoted value of %s: %w", key, err)
			}
			val, _ = strconv.Unquote(q)
			after = after[len(q):]
		} else {
			i := strings.IndexByte(after, ' ')
			if i < 0 {
				i = len(after)
			}
			val, after = after[:i], after[i:]
		}
		if after != "" && after[0] != ' ' {
			return logLine{}, fmt.Errorf("no space after the value of %s", key)
		}
		l.attrs[key] = val
		rest = strings.TrimLeft(after, " ")
	}
	t, err := time.Parse(time.RFC3339Nano, l.attrs["time"])
	if err != nil {
		return logLine{}, fmt.Errorf("no time: %w", err)
	}
	msg, ok := l.attrs["msg"]
	if !ok {
		return logLine{}, fmt.Errorf("no msg")
	}
	l.at, l.msg = t, msg
	delete(l.attrs, "time")
	delete(l.attrs, "msg")
	return l, nil
}

// parseLog reads a whole log; every line must parse.
func parseLog(out string) ([]logLine, error) {
	var lines []logLine
	for i, s := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		l, err := parseLogLine(s)
		if err != nil {
			return nil, fmt.Errorf("log line %d %q: %w", i+1, s, err)
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// workerID is the one workerId every line carries; an error names the
// first line without it or with another one.
func workerID(lines []logLine) (string, error) {
	if len(lines) == 0 {
		return "", fmt.Errorf("no log lines")
	}
	id := lines[0].attrs["workerId"]
	for i, l := range lines {
		switch got := l.attrs["workerId"]; {
		case got == "":
			return "", fmt.Errorf("log line %d (%q) has no workerId", i+1, l.msg)
		case got != id:
			return "", fmt.Errorf("log line %d (%q) has workerId %s, line 1 %s", i+1, l.msg, got, id)
		}
	}
	return id, nil
}

// isTransition reports whether l is the chart's transition from → to;
// from anyState matches every source state.
func (l logLine) isTransition(from, to machine.State) bool {
	return l.msg == "transition" && l.attrs["to"] == to.String() &&
		(from < 0 || l.attrs["from"] == from.String())
}

// anyState matches every source state in isTransition.
const anyState machine.State = -1

// lastState is the state the log's last transition entered, "" if none.
func lastState(lines []logLine) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].msg == "transition" {
			return lines[i].attrs["to"]
		}
	}
	return ""
}

// intAttr reads an integer attribute.
func (l logLine) intAttr(key string) (int64, error) {
	n, err := strconv.ParseInt(l.attrs[key], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q line at %s: %s: %w", l.msg, l.at.Format(time.RFC3339Nano), key, err)
	}
	return n, nil
}
