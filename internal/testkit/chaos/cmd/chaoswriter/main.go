// Command chaoswriter is the job of the chaos suite's replicas (their
// JOB_COMMAND): see chaos.RunWriter. It is a program of its own, built
// without the race detector, so that starting one per job stays cheap.
package main

import (
	"os"

	"github.com/lockworker/lockworker/internal/testkit/chaos"
)

func main() { os.Exit(chaos.RunWriter(os.Stdin, os.Stderr)) }
