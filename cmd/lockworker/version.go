package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/buildinfo"
)

const versionUsage = `usage: lockworker version [--json]
       lockworker --version

Prints lockworker's version, the Go toolchain that built it, the commit
(when the build recorded one) and the modules compiled in, from the
binary's own build information, as /status and the metric
lockworker_build_info report it. Needs no configuration and no Redis.
  --json  print JSON`

// runVersion prints the version, the Go toolchain, the commit and the
// modules compiled in, from the binary's own build information. It needs
// no configuration and no Redis.
func runVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := noArgs(fs, args, versionUsage, stdout); help || err != nil {
		return err
	}
	in := buildinfo.Read()
	if *asJSON {
		return printJSON(stdout, in)
	}
	_, err := fmt.Fprint(stdout, in.String())
	return err
}
