package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/buildinfo"
)

// runVersion prints the version, the Go toolchain, the commit and the
// modules compiled in, from the binary's own build information. It needs
// no configuration and no Redis.
func runVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := parseFlags(fs, args, "usage: lockworker version [--json] (or lockworker --version)", stdout); help || err != nil {
		return err
	}
	in := buildinfo.Read()
	if *asJSON {
		return printJSON(stdout, in)
	}
	_, err := fmt.Fprint(stdout, in.String())
	return err
}
