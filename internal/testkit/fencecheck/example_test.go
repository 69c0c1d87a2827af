package fencecheck_test

import (
	"fmt"

	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// A leader (token 1) is paused mid-job; the next leader (token 2) redoes
// the job and goes on; the paused one wakes and writes. With fencing on the
// store rejects the late write and the history is clean; with it off the
// write lands and Check flags it.
func ExampleCheck() {
	for _, unfenced := range []bool{false, true} {
		s := fencecheck.NewStore(fencecheck.Config{Unfenced: unfenced})
		s.Write(fencecheck.Write{Worker: "a", Token: 1, JobID: "j0", Seq: 0})
		s.Write(fencecheck.Write{Worker: "b", Token: 2, JobID: "j1", Seq: 1})
		s.Write(fencecheck.Write{Worker: "b", Token: 2, JobID: "j2", Seq: 2})
		late := s.Write(fencecheck.Write{Worker: "a", Token: 1, JobID: "j1", Seq: 1})
		fmt.Printf("unfenced=%v: late write accepted=%v\n", unfenced, late.Accepted)
		for _, v := range fencecheck.Check(s.History(), 3) {
			fmt.Println(v)
		}
	}
	// Output:
	// unfenced=false: late write accepted=false
	// unfenced=true: late write accepted=true
	// fencecheck: token-decreased at write 3 (worker a, token 1, job j1, seq 1): accepted after token 2: two leaders' effects interleave
}
