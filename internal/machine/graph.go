package machine

import (
	"context"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"time"

	"github.com/qmuntal/stateless"
)

// Graph renders the chart as "dot" (stateless's ToGraph) or "mermaid" (a
// stateDiagram-v2 translated from that DOT, so the two cannot disagree).
// It configures a fresh stateless machine with the same chart function,
// so it never reads the running machine and is safe at any time; the
// graph always starts in idle.
func (m *Machine) Graph(format string) (string, error) {
	sm := stateless.NewStateMachine(Idle)
	m.configure(sm)
	// Entry actions are method values, which the runtime names "acquire-fm".
	dot := strings.ReplaceAll(sm.ToGraph(), "-fm", "")
	switch format {
	case "dot":
		return dot, nil
	case "mermaid":
		return mermaid(dot)
	default:
		return "", fmt.Errorf("machine: unknown graph format %q (want dot or mermaid)", format)
	}
}

// Chart renders the chart without any real callbacks, for `lockworker
// graph`, which has no Redis.
func Chart(format string) (string, error) {
	nop := func(context.Context) error { return nil }
	m, err := New(Config{
		Acquire: nop, Renew: nop, Release: nop, StopWork: nop,
		StartWork:     func(func(error)) {},
		RenewInterval: time.Second,
		RetryDelay:    func() time.Duration { return time.Second },
	})
	if err != nil {
		return "", err
	}
	return m.Graph(format)
}

var (
	dotNode = regexp.MustCompile(`^\t+(\S+) \[label="([^"]*)"\];$`)
	dotEdge = regexp.MustCompile(`^\t(\S+) -> (\S+)(?: \[label=(.*)\];)?$`)
	dotRow  = regexp.MustCompile(`<TR><TD(?: ALIGN="LEFT")?>(.*?)</TD></TR>`)
)

// mermaid translates the DOT that stateless writes: nodes with their
// entry actions, edges with their triggers. Ignored and internal triggers
// change no state, so they are left out.
func mermaid(dot string) (string, error) {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	edges := 0
	for line := range strings.SplitSeq(dot, "\n") {
		if n := dotNode.FindStringSubmatch(line); n != nil {
			_, actions, _ := strings.Cut(n[2], "|") // "name|entry / a\nentry / b"
			fmt.Fprintf(&b, "    %s\n", unquote(n[1]))
			for a := range strings.SplitSeq(actions, `\n`) {
				if a != "" {
					fmt.Fprintf(&b, "    %s : %s\n", unquote(n[1]), html.UnescapeString(a))
				}
			}
			continue
		}
		e := dotEdge.FindStringSubmatch(line)
		if e == nil {
			continue
		}
		from, to := unquote(e[1]), unquote(e[2])
		if from == "init" {
			fmt.Fprintf(&b, "    [*] --> %s\n", to)
			continue
		}
		section := ""
		for _, row := range dotRow.FindAllStringSubmatch(e[3], -1) {
			cell := row[1]
			if strings.HasPrefix(cell, "<B>") {
				section = strings.TrimSuffix(strings.TrimPrefix(cell, "<B>"), "</B>")
				continue
			}
			if section == "Ignored" || section == "Internal" {
				continue
			}
			fmt.Fprintf(&b, "    %s --> %s : %s\n", from, to, html.UnescapeString(cell))
			edges++
		}
	}
	if edges == 0 {
		return "", errors.New("machine: no transitions found in the DOT graph")
	}
	return b.String(), nil
}

func unquote(s string) string { return strings.Trim(s, `"`) }
