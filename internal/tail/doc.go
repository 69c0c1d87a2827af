// Package tail keeps the last bytes written to it: the end of a child's
// output for an error message, or a test's view of a process's log.
//
// Guaranteed: writes from several goroutines never interleave within one
// Write, and what is kept is always the most recent Max bytes (all of it
// when Max is 0). Not guaranteed: that a kept text starts on a line or
// rune boundary once older bytes were dropped.
package tail
