//go:build !unix

package daemon

// nofileLimit is unknown here: HTTP_MAX_CONNS is taken as given.
func nofileLimit() uint64 { return 0 }
