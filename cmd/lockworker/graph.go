package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/machine"
)

// runGraph prints the chart from the machine itself, so the picture cannot
// drift from the code. It needs no configuration and no Redis.
func runGraph(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	format := fs.String("format", "dot", "dot or mermaid")
	if help, err := parseFlags(fs, args, "usage: lockworker graph [--format dot|mermaid]", stdout); help || err != nil {
		return err
	}
	if *format != "dot" && *format != "mermaid" {
		return usageError("graph: --format must be dot or mermaid, got %q", *format)
	}
	out, err := machine.Chart(*format)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, out)
	return err
}
