// Package lines reads a batch of records, one per line, within limits:
// how `lockworker enqueue --lines` and POST /jobs with an NDJSON body turn
// their input into jobs.
//
// Guaranteed: Read returns every non-empty line, in order, or an error and
// no lines at all; it stops reading at the size limit, so an endless input
// costs at most that much memory; an error about one line names it by its
// number in the input, empty lines included.
//
// Not guaranteed: anything about the lines' content beyond the check the
// caller passes (Read does not decode JSON or text encodings).
package lines
