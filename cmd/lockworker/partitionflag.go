package main

import (
	"errors"
	"flag"
	"strconv"

	"github.com/lockworker/lockworker/internal/backend"
)

// partitionArg is --partition N: which partition a command acts on
// (PARTITIONS > 1). A number below 0 is refused when the flag is parsed,
// so no value of it can stand for "not given" or "all of them".
type partitionArg struct {
	n     int
	given bool
}

func (p *partitionArg) String() string {
	if p == nil || !p.given {
		return ""
	}
	return strconv.Itoa(p.n)
}

func (p *partitionArg) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return errors.New("a partition is a number from 0 up")
	}
	p.n, p.given = n, true
	return nil
}

// partitionFlag adds --partition N to fs.
func partitionFlag(fs *flag.FlagSet, what string) *partitionArg {
	p := &partitionArg{}
	fs.Var(p, "partition", what)
	return p
}

// onePartition is the partition a command that acts on one must act on:
// the one --partition names, or without partitions the only one. With
// partitions, --partition is required.
func onePartition(cmd string, b *backend.Backend, p *partitionArg) (int, error) {
	switch {
	case !p.given && b.Partitions == 1:
		return 0, nil
	case !p.given:
		return 0, usageError(cmd, "the fleet has %d partitions: say which with --partition N (0 to %d)", b.Partitions, b.Partitions-1)
	case p.n >= b.Partitions:
		return 0, usageError(cmd, "--partition %d: the fleet has %d partitions (0 to %d)", p.n, b.Partitions, b.Partitions-1)
	}
	return p.n, nil
}
