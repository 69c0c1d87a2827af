package main

import (
	"fmt"
	"slices"
	"time"
)

// delivery is one run of a job's handler: the log handler's "Doing some
// heavy work..." line, in whichever container it was.
type delivery struct {
	at      time.Time
	worker  string
	jobID   string
	token   int64
	attempt int64
}

// deliveries picks the handler's lines out of one worker's log.
func deliveries(worker string, lines []logLine) ([]delivery, error) {
	var ds []delivery
	for _, l := range lines {
		if l.msg != "Doing some heavy work..." {
			continue
		}
		token, err := l.intAttr("token")
		if err != nil {
			return nil, err
		}
		attempt, err := l.intAttr("attempt")
		if err != nil {
			return nil, err
		}
		ds = append(ds, delivery{at: l.at, worker: worker, jobID: l.attrs["jobId"], token: token, attempt: attempt})
	}
	return ds, nil
}

// orderReport sums up the deliveries of a run.
type orderReport struct {
	jobs, deliveries int
	tokens           []int64 // in the order they appeared
}

// checkOrder checks every worker's deliveries, merged by time (the
// containers share the host's clock), against the enqueue order: every job
// delivered; a job never delivered after a later one was (a job in flight
// when its leader went is delivered again, before any later one); tokens
// never going down; only jobs the e2e enqueued.
func checkOrder(enqueued []string, ds []delivery) (orderReport, error) {
	index := map[string]int{}
	for i, id := range enqueued {
		index[id] = i
	}
	ds = slices.Clone(ds)
	slices.SortStableFunc(ds, func(a, b delivery) int { return a.at.Compare(b.at) })
	r := orderReport{jobs: len(enqueued), deliveries: len(ds)}
	highest := -1
	for _, d := range ds {
		i, ok := index[d.jobID]
		switch {
		case !ok:
			return r, fmt.Errorf("%s delivered job %s, which the e2e did not enqueue", d.worker, d.jobID)
		case i < highest:
			return r, fmt.Errorf("%s delivered job %d (%s) at %s, after job %d had been delivered",
				d.worker, i+1, d.jobID, d.at.Format(time.RFC3339Nano), highest+1)
		case i > highest+1:
			return r, fmt.Errorf("%s delivered job %d (%s) before job %d", d.worker, i+1, d.jobID, highest+2)
		}
		highest = i
		if n := len(r.tokens); n > 0 && d.token < r.tokens[n-1] {
			return r, fmt.Errorf("%s delivered job %d with token %d after token %d", d.worker, i+1, d.token, r.tokens[n-1])
		}
		if n := len(r.tokens); n == 0 || d.token != r.tokens[n-1] {
			r.tokens = append(r.tokens, d.token)
		}
	}
	if highest+1 < len(enqueued) {
		return r, fmt.Errorf("job %d of %d (%s) was never delivered", highest+2, len(enqueued), enqueued[highest+1])
	}
	return r, nil
}
