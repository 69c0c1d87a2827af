// Package dashboard is lockworker's live web page: the state chart drawn
// from the machine's own graph with this replica's state marked, the fleet,
// the queue with its dead letters, the leadership history, and the
// operator's actions. Plain HTML, CSS and JavaScript embedded in the
// binary: no build step, nothing fetched from elsewhere. Updates arrive
// over Server-Sent Events.
//
// It guarantees:
//   - the chart comes from machine.Describe, placed by package chartsvg,
//     so a new state or trigger shows up without a change here (or New
//     fails, if chartsvg's table does not place it);
//   - nothing secret leaves it: Snapshot has no field for a URL, password,
//     lock value or the admin token, and every string in a snapshot is
//     scrubbed (package redact) of URL passwords, Authorization values and
//     key=value credentials where they stand, and of the admin token and
//     Config.Secrets of at least redact.MinLiteral bytes wherever they are,
//     before it is sent;
//     a Source's errors are logged, never shown;
//   - actions need the admin token (Authorization: Bearer, compared in
//     constant time; 401 otherwise); with no token configured the action
//     endpoints do not exist (404) and the page offers none;
//   - the page runs under a Content-Security-Policy that allows only its
//     own script, style and connections, and writes data into the DOM as
//     text, never as markup;
//   - one Run goroutine reads the Source for all streams, at most once per
//     MinInterval however often it is told of changes, and not at all
//     while nobody watches (a new stream reads once more, for its first
//     snapshot); a slow client gets the latest snapshot, never a backlog;
//     each stream is the request's own goroutine and ends when the client
//     leaves, a write stalls for WriteTimeout, or Run returns.
//
// It does not guarantee:
//   - that a snapshot is one atomic view: the Source decides how it reads;
//   - that a push reaches a client: a client that reconnects gets a fresh
//     snapshot instead, which is what the page needs;
//   - that redaction catches a secret of a place it does not know that
//     nobody listed in Config.Secrets, or that is shorter than
//     redact.MinLiteral (searching for a short one would point at it);
//   - who pressed a button: the admin token is shared, so actions are
//     logged with the client's address only, and a skip of a parked key
//     is recorded as by "dashboard (address)" when the request says it
//     comes from the page (X-Lockworker-Client), "api (address)" else:
//     a label for people, not an authentication. Serve it over TLS (or behind
//     a proxy that terminates TLS) wherever the token crosses a network.
package dashboard
