// Package statusdoc is the document GET /status answers: one replica's
// view of itself, the lock and the queue, as JSON. The daemon fills it
// (package httpapi serves it); the demo, the process supervisor (package
// fleet), the tests and the benchmarks decode it.
//
// It is a package of its own, importing only the queue's figures, so that
// a reader of /status does not import the HTTP server, and the server can
// import what it serves (the job queue, whose tests use those readers).
// It holds types only: no behaviour, and no promise about what a replica
// reports beyond each field's comment.
package statusdoc
