// Package poll waits in tests for a condition to hold, with a bound, so no
// test sleeps to synchronise. It is imported only by tests.
//
// Guaranteed: Until returns as soon as a check finds the condition true
// (within Interval of it becoming true) and fails the test once the limit
// has passed. Not guaranteed: that a condition true only briefly, between
// two checks, is ever seen.
package poll
