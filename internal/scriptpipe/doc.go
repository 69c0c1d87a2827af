// Package scriptpipe sends a Lua script in one pipeline with the commands
// that must share its round trip (a WAIT behind an epoch bump, an XRANGE
// behind a queue step), with the NOSCRIPT fallback a pipeline lacks:
// go-redis's Script.Run falls back from EVALSHA to EVAL by itself, but a
// pipeline only queues EVALSHA, and a server that does not have the script
// (new, restarted, or a replica just promoted: scripts are not replicated)
// answers NOSCRIPT without running it.
//
// Guaranteed: the script runs at most once per Run, and is sent with its
// body (EVAL, which also caches it) only after a NOSCRIPT reply, so a
// warm server gets the short EVALSHA. No SCRIPT LOAD is sent: a
// least-privilege ACL user may lack it.
//
// Not guaranteed: that the commands around the script run only once: on
// NOSCRIPT the whole pipeline is sent again (the caller says, through
// Run's again, what the second send carries, or that there is none).
package scriptpipe
