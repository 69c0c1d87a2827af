// Package backoff is lockworker's one retry policy: exponential backoff with
// jitter, and a sleep that ends early when its context does.
//
// Guaranteed: Delay never exceeds the policy's Max, never drops below half
// of the undithered step, and is spread at random so replicas that failed
// together do not retry together (client-go's JitterFactor, redsync's random
// delay). Sleep returns as soon as its context is done.
//
// Not guaranteed: any bound on the number of tries; callers decide when to
// give up (a lease deadline, a context, MaxAttempts).
package backoff
