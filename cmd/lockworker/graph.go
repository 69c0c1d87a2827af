package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/machine"
)

// runGraph prints the chart from the machine itself, so the picture cannot
// drift from the code. It needs no configuration and no Redis.
func runGraph(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "dot", "dot or mermaid")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		_, err = fmt.Fprintln(stdout, "usage: lockworker graph [--format dot|mermaid]")
		return err
	} else if err != nil {
		return usageError("graph: %v (usage: lockworker graph [--format dot|mermaid])", err)
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
