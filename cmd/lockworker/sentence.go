package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A command's error is one sentence for a person at a terminal: what the
// command could not do, then why, in the words of whoever said no (Redis,
// the system, the queue's rules), never the chain of Go packages the
// error passed through ("jobs: requeue X: jobs: no such dead letter").
// The commands write the sentences of the errors they expect themselves
// (a dead letter that does not exist, nobody leading), and quote the
// cause of the others (failed).

// sentence is an error whose message a command wrote for a person; it
// keeps the error it stands for, so exit codes still follow it.
type sentence struct {
	msg string
	err error
}

func (s *sentence) Error() string { return s.msg }
func (s *sentence) Unwrap() error { return s.err }

// say is err as the sentence format makes of args.
func say(err error, format string, args ...any) error {
	return &sentence{msg: fmt.Sprintf(format, args...), err: err}
}

// failed is an error a command met while doing something and does not
// expect (Redis refused, a key of the wrong type, an ACL): "cmd: doing:
// cause".
func failed(cmd, doing string, err error) error {
	return say(err, "%s: %s: %s", cmd, doing, cause(err))
}

// reason is a refusal of the queue (jobs.ErrInvalidInput and the like) in
// its own words, without the package's name, which its messages carry
// once.
func reason(err error) string { return strings.TrimPrefix(err.Error(), "jobs: ") }

// pkgPrefix is the name of one of our packages at the start of an error
// message (house style: "operator: no leader holds the lock"), which
// says nothing to a person. Redis's own messages start in capitals
// ("WRONGTYPE ...", "NOPERM ..."), the system's have no such prefix.
var pkgPrefix = regexp.MustCompile(`^[a-z]+: `)

// cause is the innermost error of err's chain (the first, where an error
// joins several), without a package's name: what Redis or the system
// said, such as "WRONGTYPE Operation against a key holding the wrong kind
// of value" or "connection refused".
func cause(err error) string {
	for {
		var next error
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			next = e.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := e.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			break
		}
		err = next
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	return pkgPrefix.ReplaceAllString(err.Error(), "")
}
