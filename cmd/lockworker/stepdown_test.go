package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// postBody sends an admin action and returns its status code and body.
func (w *worker) postBody(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// TestStepDownNamesItsLeadership: a step-down names the leadership it
// means by its token. Two requests for token 1 sent 5 ms apart end
// leadership 1 and nothing else; a third, once token 2 leads, is refused
// (409) and asks token 2's leader nothing; `lockworker stepdown --token 1`
// then fails the same way, and --token 2 hands over.
func TestStepDownNamesItsLeadership(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "ADMIN_TOKEN="+testAdminToken)
	a := startWorker(t, "sd-a", env...)
	first := leaderOf(t, 10*time.Second, a)
	b := startWorker(t, "sd-b", env...)
	poll.Until(t, 10*time.Second, "sd-b waiting", func() bool { s, ok := b.status(); return ok && s.Holder.Held })
	tok := first.statusToken(t)

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Go(func() { codes[i], _ = a.postBody(t, fmt.Sprintf("/api/stepdown?token=%d", tok)) })
		time.Sleep(5 * time.Millisecond) // the scenario: a double click, not a synchronisation
	}
	wg.Wait()
	if codes[0] != http.StatusOK && codes[1] != http.StatusOK {
		t.Fatalf("two step-downs of token %d answered %v: neither stepped it down", tok, codes)
	}
	st := queueStatus(t, env)
	if st.Epoch != tok+1 || st.Token != tok+1 {
		t.Fatalf("after two step-downs of token %d: epoch %d, lock token %d; want %d for both (only leadership %d ended)",
			tok, st.Epoch, st.Token, tok+1, tok)
	}

	code, body := a.postBody(t, fmt.Sprintf("/api/stepdown?token=%d", tok))
	if code != http.StatusConflict || !strings.Contains(body, "already ended") {
		t.Fatalf("a step-down of ended token %d: %d %s; want 409 saying it has ended", tok, code, body)
	}
	if code, body := a.postBody(t, "/api/stepdown"); code != http.StatusBadRequest || !strings.Contains(body, "token") {
		t.Fatalf("a step-down without a token: %d %s; want 400 naming the token", code, body)
	}
	var out strings.Builder
	err := runCLI(t, []string{"stepdown", "--token", fmt.Sprint(tok)}, env, &out)
	if err == nil || !strings.Contains(err.Error(), "already ended") {
		t.Fatalf("stepdown --token %d: %v\n%s", tok, err, out.String())
	}
	if st := queueStatus(t, env); st.Epoch != tok+1 || st.Token != tok+1 {
		t.Fatalf("refused step-downs changed the leadership: epoch %d, lock token %d; want %d", st.Epoch, st.Token, tok+1)
	}

	out.Reset()
	if err := runCLI(t, []string{"stepdown", "--token", fmt.Sprint(tok + 1)}, env, &out); err != nil {
		t.Fatalf("stepdown --token %d: %v\n%s", tok+1, err, out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("(token %d) stepped down;", tok+1)) {
		t.Errorf("stepdown --token %d printed %q", tok+1, out.String())
	}
}

// TestStepDownNeedsThePartition: with partitions, POST /api/stepdown
// names its partition, as the CLI does; without one it is refused (400)
// instead of stepping partition 0 down; with one, that partition's
// leader steps down.
func TestStepDownNeedsThePartition(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(partitionsEnv(r.URL(), 4, t.TempDir()), "ADMIN_TOKEN="+testAdminToken)
	a := startWorker(t, "sdp-a", env...)
	b := startWorker(t, "sdp-b", env...)
	shared(t, 4, 30*time.Second, a, b)
	p0 := partitionsJSON(t, env)[0]

	code, body := a.postBody(t, fmt.Sprintf("/api/stepdown?token=%d", p0.Token))
	if code != http.StatusBadRequest || !strings.Contains(body, "partition") {
		t.Fatalf("a step-down without its partition, P=4: %d %s; want 400 naming the partition", code, body)
	}
	if now := partitionsJSON(t, env)[0]; now.Owner != p0.Owner || now.Token != p0.Token {
		t.Fatalf("partition 0 moved from %s #%d to %s #%d on a refused step-down", p0.Owner, p0.Token, now.Owner, now.Token)
	}
	if code, body := a.postBody(t, fmt.Sprintf("/api/stepdown?token=%d&partition=4", p0.Token)); code != http.StatusBadRequest {
		t.Fatalf("a step-down of partition 4 of 4: %d %s; want 400", code, body)
	}
	if code, body := a.postBody(t, fmt.Sprintf("/api/stepdown?token=%d&partition=0", p0.Token)); code != http.StatusOK {
		t.Fatalf("a step-down of partition 0, token %d: %d %s", p0.Token, code, body)
	}
	if now := partitionsJSON(t, env)[0]; now.Token == p0.Token {
		t.Fatalf("partition 0 still led with token %d after its step-down", p0.Token)
	}
}
