// Package redisopt holds go-redis client settings that every client
// lockworker builds shares, in the daemon, its tests and its benchmarks.
package redisopt

import "github.com/redis/go-redis/v9/maintnotifications"

// NoMaintNotifications turns go-redis's maintenance notifications off.
// They serve Redis Cloud/Enterprise; in their default auto mode the first
// handshake a server refuses writes the mode into options that a client
// shares with its Conn (the lock's WAIT step uses one) and with a cluster
// client's node clients, while those read it: a data race in go-redis
// v9.23.
func NoMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
