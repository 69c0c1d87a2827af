package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
)

// jobsToken is the fleet's JOBS_TOKEN (POST /jobs).
const jobsToken = "timebench-jobs-token-0123456789abcdef"

// answer is what one sender got in the end, and on the way.
type answer struct {
	code     int    // 202 (enqueued) or 200 (the key's job stands for it)
	id       string // the job's ID in the answer
	refused  int    // 503s retried
	unreachd int    // requests that got no answer, retried
}

// idemRound is what one repetition of the idempotent part found.
type idemRound struct {
	jobs      int // distinct jobs run
	missing   int // idempotency keys no job ran for
	doubled   int // idempotency keys more than one job ran for
	reruns    int // runs of a job beyond its first
	unacked   int // jobs run that neither sender of their key was answered with
	refused   int // 503s retried
	unreached int // requests without an answer, retried
	splitIDs  int // pairs whose two answers named different jobs
	failover  time.Duration
	failedAt  time.Duration // from the first send to the failover's start
	examples  []string      // what happened to a few keys run more than once
}

// describe says what the senders of key idem were answered and how its
// runs went, times from the first send of the repetition.
func describe(idem string, a [2]answer, runs []delivery, start time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: answers %d %s (%d 503s), %d %s (%d 503s); runs:", idem, a[0].code, a[0].id, a[0].refused, a[1].code, a[1].id, a[1].refused)
	for _, d := range runs {
		if d.payload == idem {
			fmt.Fprintf(&b, " [%s at %.0f ms by %s, token %s, attempt %s]", d.jobID, msF(d.at.Sub(start)), d.worker, d.token, d.attempt)
		}
	}
	return b.String()
}

// measureIdempotent: per repetition a Sentinel group, o.replicas
// replicas with REDIS_MIN_REPLICAS=1, and o.enqueues idempotency keys
// each POSTed twice at once, a failover forced half-way. Each repetition
// starts afresh: a second SENTINEL FAILOVER soon after the first was
// seen to be accepted and never carried out.
func measureIdempotent(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	var jobsRun, missing, doubled, unacked, reruns, refused, split []float64
	for rep := range o.reps {
		d, err := idempotentRound(ctx, o, rep)
		if err != nil {
			return nil, fmt.Errorf("repetition %d: %w", rep+1, err)
		}
		jobsRun, missing, doubled = append(jobsRun, float64(d.jobs)), append(missing, float64(d.missing)), append(doubled, float64(d.doubled))
		reruns, refused, split = append(reruns, float64(d.reruns)), append(refused, float64(d.refused)), append(split, float64(d.splitIDs))
		unacked = append(unacked, float64(d.unacked))
		fmt.Fprintf(progress, "idem %d/%d: %d jobs run for %d keys (%d keys without, %d with more than one, %d jobs no answer named, %d runs again); %d 503s and %d unanswered requests retried; %d pairs answered with two IDs; failover took %.0f ms\n",
			rep+1, o.reps, d.jobs, o.enqueues, d.missing, d.doubled, d.unacked, d.reruns, d.refused, d.unreached, d.splitIDs, msF(d.failover))
		for _, e := range d.examples {
			fmt.Fprintf(progress, "idem %d/%d: failover at %.0f ms: %s\n", rep+1, o.reps, msF(d.failedAt), e)
		}
	}
	what := fmt.Sprintf("idem: %s enqueues sent twice at once, Sentinel failover half-way, REDIS_MIN_REPLICAS=1, 503s retried", benchkit.Commas(strconv.Itoa(o.enqueues)))
	zero := func(v float64) bool { return v == 0 }
	return []row{
		{What: what + ": jobs run", Vals: jobsRun, Target: strconv.Itoa(o.enqueues), OK: func(v float64) bool { return int(v) == o.enqueues }},
		{What: "  idempotency keys no job ran for", Vals: missing, Target: "0", OK: zero},
		{What: "  idempotency keys more than one job ran for", Vals: doubled, Target: "0", OK: zero},
		{What: "  jobs run that no answer named (503'd, and lost)", Vals: unacked, Target: "0", OK: zero,
			Note: "each was answered 503 only"},
		{What: "  runs of a job beyond its first (at-least-once)", Vals: reruns},
		{What: "  503 answers retried", Vals: refused, Note: "what the failover cost the senders"},
		{What: "  pairs whose two answers named different jobs", Vals: split},
	}, nil
}

// idempotentRound starts the servers and the fleet of one repetition and
// runs it.
func idempotentRound(ctx context.Context, o options, rep int) (idemRound, error) {
	f := fleet.New(ctx)
	defer f.Close()
	sg, err := f.StartSentinelGroup(ctx, fleet.SentinelSpec{})
	if err != nil {
		return idemRound{}, err
	}
	rec, err := startRecorder()
	if err != nil {
		return idemRound{}, err
	}
	defer rec.Close()
	env := append([]string{"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=" + sg.Master,
		"REDIS_URLS=" + strings.Join(sg.SentinelURLs(), ","), "REDIS_MIN_REPLICAS=1", "JOBS_TOKEN=" + jobsToken,
		"JOB_HANDLER=http", "JOB_URL=" + rec.url, "LOG_LEVEL=warn"}, fastTimings...)
	g, err := startGroup(ctx, f, o.bin, "tb-idem", o.replicas, o.parts, env, time.Minute)
	if err != nil {
		return idemRound{}, err
	}
	return runIdempotent(ctx, o, sg, g, rec, rep)
}

// runIdempotent sends one repetition's pairs, forces the failover when
// half are sent, waits until every key's job ran, and counts.
func runIdempotent(ctx context.Context, o options, sg *fleet.SentinelGroup, g *group, rec *recorder, rep int) (idemRound, error) {
	rec.take()
	client := &http.Client{Timeout: 5 * time.Second}
	answers := make([][2]answer, o.enqueues)
	var res idemRound
	eg, ectx := errgroup.WithContext(ctx)
	start := time.Now()
	for i := range o.enqueues {
		if err := sleep(ectx, time.Until(start.Add(o.sendOver*time.Duration(i)/time.Duration(o.enqueues)))); err != nil {
			break
		}
		if i == o.enqueues/2 {
			eg.Go(func() error {
				t0 := time.Now()
				res.failedAt = t0.Sub(start)
				_, err := sg.Failover(ectx)
				res.failover = time.Since(t0)
				return err
			})
		}
		idem := fmt.Sprintf("r%d-%d", rep, i)
		for side := range 2 {
			url := g.live[(i+side)%len(g.live)].URL() + "/jobs"
			eg.Go(func() error {
				a, err := send(ectx, client, url, idem)
				answers[i][side] = a
				return err
			})
		}
	}
	if err := eg.Wait(); err != nil {
		return res, err
	}
	for _, a := range answers {
		res.refused += a[0].refused + a[1].refused
		res.unreached += a[0].unreachd + a[1].unreachd
		if a[0].id != a[1].id {
			res.splitIDs++
		}
	}
	// Every key's job, then a quiet while in which nothing more runs.
	limit := time.Now().Add(time.Minute)
	last, quietSince := -1, time.Now()
	for {
		n := rec.count()
		if n != last {
			last, quietSince = n, time.Now()
		}
		if rec.distinct(payloadOf) >= o.enqueues && time.Since(quietSince) >= 2*time.Second || time.Now().After(limit) {
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	byKey := map[string]map[string]int{} // idempotency key -> job ID -> runs
	runs := rec.take()
	for _, d := range runs {
		if byKey[d.payload] == nil {
			byKey[d.payload] = map[string]int{}
		}
		byKey[d.payload][d.jobID]++
	}
	for i := range o.enqueues {
		ids := byKey[fmt.Sprintf("r%d-%d", rep, i)]
		res.jobs += len(ids)
		switch {
		case len(ids) == 0:
			res.missing++
		case len(ids) > 1:
			res.doubled++
			if res.doubled <= 3 {
				res.examples = append(res.examples, describe(fmt.Sprintf("r%d-%d", rep, i), answers[i], runs, start))
			}
		}
		for id, runs := range ids {
			res.reruns += runs - 1
			if id != answers[i][0].id && id != answers[i][1].id {
				res.unacked++
			}
		}
	}
	if len(byKey) > o.enqueues {
		return res, fmt.Errorf("runs of %d idempotency keys, %d sent", len(byKey), o.enqueues)
	}
	return res, nil
}

// send POSTs one job with idempotency key idem (its payload too) until
// the daemon answers 202 or 200, retrying every 503 and every request
// that got no answer after a jittered 20–40 ms, for at most a minute.
func send(ctx context.Context, client *http.Client, url, idem string) (answer, error) {
	var a answer
	limit := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(idem))
		if err != nil {
			return a, err
		}
		req.Header.Set("Authorization", "Bearer "+jobsToken)
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set(jobs.HeaderIdempotencyKey, idem)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusAccepted, http.StatusOK:
				var v struct{ ID string }
				if err := json.Unmarshal(body, &v); err != nil || v.ID == "" {
					return a, fmt.Errorf("%s: %d without an ID: %s", idem, resp.StatusCode, body)
				}
				a.code, a.id = resp.StatusCode, v.ID
				return a, nil
			case http.StatusServiceUnavailable:
				a.refused++
			default:
				return a, fmt.Errorf("%s: %s: %s", idem, resp.Status, body)
			}
		} else {
			if ctx.Err() != nil {
				return a, ctx.Err()
			}
			a.unreachd++
		}
		if time.Now().After(limit) {
			return a, fmt.Errorf("%s: no 202 or 200 within a minute (%d 503s, %d unanswered)", idem, a.refused, a.unreachd)
		}
		if err := sleep(ctx, 20*time.Millisecond+rand.N(20*time.Millisecond)); err != nil {
			return a, err
		}
	}
}
