package flood

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Asker sends requests from one local address, each on a connection of
// its own (as a probe does), and counts what comes back. Not safe for
// concurrent use.
type Asker struct {
	client *http.Client
	// Asked and Answered count the requests and those answered with the
	// status wanted; Failures holds the first few others.
	Asked, Answered int
	Failures        []string
	// Took is how long each answered request took.
	Took []time.Duration
}

// NewAsker returns an Asker whose connections come from the local IP
// from, each request bounded by timeout.
func NewAsker(from string, timeout time.Duration) *Asker {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: timeout}
	return &Asker{client: &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: true, DialContext: d.DialContext,
	}}}
}

// Ask sends method url (body when not empty, with header) and counts an
// answer of status want.
func (a *Asker) Ask(ctx context.Context, method, url, body string, header http.Header, want int) {
	a.Asked++
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		a.fail(err.Error())
		return
	}
	for k, v := range header {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		a.fail(fmt.Sprintf("%s %s: %v", method, req.URL.Path, err))
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != want {
		a.fail(fmt.Sprintf("%s %s: %s, want %d", method, req.URL.Path, resp.Status, want))
		return
	}
	a.Answered++
	a.Took = append(a.Took, time.Since(start))
}

func (a *Asker) fail(why string) {
	if len(a.Failures) < 10 {
		a.Failures = append(a.Failures, why)
	}
}

// Quantile is the q-quantile (0 to 1) of Took; 0 when nothing was
// answered.
func (a *Asker) Quantile(q float64) time.Duration {
	if len(a.Took) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(a.Took))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// Close closes the Asker's idle connections (there are none to keep).
func (a *Asker) Close() { a.client.CloseIdleConnections() }
