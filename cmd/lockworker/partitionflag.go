package main

import (
	"flag"

	"github.com/lockworker/lockworker/internal/backend"
)

// partitionFlag adds --partition N to fs: which partition a command acts
// on (PARTITIONS > 1). Its value is -1 when not given.
func partitionFlag(fs *flag.FlagSet, what string) *int {
	return fs.Int("partition", -1, what)
}

// onePartition is the partition a command that acts on one must act on:
// the one --partition names (p), or without partitions the only one. With
// partitions, --partition is required.
func onePartition(cmd string, b *backend.Backend, p int) (int, error) {
	switch {
	case p == -1 && b.Partitions == 1:
		return 0, nil
	case p == -1:
		return 0, usageError(cmd, "the fleet has %d partitions: say which with --partition N (0 to %d)", b.Partitions, b.Partitions-1)
	case p < 0 || p >= b.Partitions:
		return 0, usageError(cmd, "--partition %d: the fleet has %d partitions (0 to %d)", p, b.Partitions, b.Partitions-1)
	}
	return p, nil
}
