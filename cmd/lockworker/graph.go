package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/machine"
)

const graphUsage = `usage: lockworker graph [--format dot|mermaid]

Prints the state chart every replica runs (its states, triggers, guards
and entry actions) from the machine itself, so the picture cannot drift
from the code: the names are those of the logs, /status and the
dashboard. Render DOT with Graphviz (lockworker graph | dot -Tsvg);
Mermaid renders in Markdown. Needs no configuration and no Redis.
  --format F  dot (default) or mermaid`

// runGraph prints the chart from the machine itself, so the picture cannot
// drift from the code. It needs no configuration and no Redis.
func runGraph(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	var format machine.Format
	fs.TextVar(&format, "format", machine.FormatDOT, "dot or mermaid")
	if help, err := noArgs(fs, args, graphUsage, stdout); help || err != nil {
		return err
	}
	out, err := machine.Chart(format)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, out)
	return err
}
