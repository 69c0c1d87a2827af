// Package flood opens connections that start an HTTP request and never
// finish its headers (a slowloris flood) from one local address, and asks
// a server things from other addresses meanwhile, counting what it
// answers; for the process tests and the bench, never the daemon.
//
// Guaranteed: every connection is opened from Config.From, sends
// Config.Start and nothing more; one the server closes is closed on this
// side too (the server holds nothing for it then), so the flood needs
// descriptors only for what the server keeps; Close ends every
// goroutine it started. Not guaranteed: a rate; connections are opened
// as fast as Config.Parallel dialers manage.
package flood
