package jobs

import (
	"io"
	"net/http"
	"testing"
)

// The handlers' cost beside each other, in one run (make bench prints
// them as a table with the ratios): no-op jobs through Process, one job
// per round trip to Redis and with group commit, posted to a local HTTP
// server that answers 204 (BenchmarkProcessNoopHTTP*), and run as the
// command `true` by the exec handler, a supervised process per job
// (BenchmarkProcessNoopExec*).

func BenchmarkProcessNoopHTTP(b *testing.B)        { benchHTTP(b, 1) }
func BenchmarkProcessNoopHTTPBatched(b *testing.B) { benchHTTP(b, DefaultBatch) }
func BenchmarkProcessNoopExec(b *testing.B)        { benchExec(b, 1) }
func BenchmarkProcessNoopExecBatched(b *testing.B) { benchExec(b, DefaultBatch) }

func benchHTTP(b *testing.B, batch int) {
	srv, _ := serve(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	benchJobs(b, newHTTP(b, srv.URL, nil), batch)
}

func benchExec(b *testing.B, batch int) {
	benchJobs(b, must(NewExecHandler(ExecConfig{Command: []string{"true"}, AllowEnv: testEnv})), batch)
}
