//go:build !unix

package daemon

// processGone is unknown here: the process is taken to be alive.
func processGone(int) bool { return false }
