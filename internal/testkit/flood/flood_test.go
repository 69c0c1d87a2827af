package flood

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/testkit/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFlood: a server that closes every second connection at once and
// keeps the others: every connection is opened and sends its start, the
// closed ones are counted and closed here too, and Close ends the rest.
func TestFlood(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		kept []net.Conn
		got  = map[string]int{}
	)
	served := make(chan struct{})
	go func() {
		defer close(served)
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if i%2 == 0 {
				_ = c.Close()
				continue
			}
			buf := make([]byte, len(StartOfRequest))
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _ := io.ReadFull(c, buf)
			mu.Lock()
			kept = append(kept, c)
			got[string(buf[:n])]++
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-served
		for _, c := range kept {
			_ = c.Close()
		}
	})

	f, err := Start(Config{Addr: ln.Addr().String(), From: "127.0.0.1", Conns: 40, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	<-f.Done()
	poll.Until(t, 10*time.Second, "the closed half counted", func() bool { return f.Result().ClosedByServer == 20 })
	poll.Until(t, 10*time.Second, "the other half kept", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(kept) == 20
	})
	f.Close()
	res := f.Result()
	if res.Opened != 40 || res.Failed != 0 || res.ClosedByServer != 20 || res.PeakHeld < 20 || res.PeakHeld > 40 {
		t.Errorf("result %+v, want 40 opened, 20 closed by the server, 20 to 40 held at the peak", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if got[StartOfRequest] != 20 {
		t.Errorf("the server kept %d connections, read %v; want 20 reading %q", len(kept), got, StartOfRequest)
	}
}

func TestStartValidates(t *testing.T) {
	if _, err := Start(Config{Conns: 1}); err == nil {
		t.Error("no Addr: no error")
	}
	if _, err := Start(Config{Addr: "127.0.0.1:1"}); err == nil {
		t.Error("no Conns: no error")
	}
}

// TestAsker counts answers of the wanted status and the others.
func TestAsker(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	a := NewAsker("127.0.0.1", 10*time.Second)
	defer a.Close()
	a.Ask(context.Background(), http.MethodGet, srv.URL+"/ok", "", nil, http.StatusOK)
	a.Ask(context.Background(), http.MethodGet, srv.URL+"/bad", "", nil, http.StatusOK)
	if a.Asked != 2 || a.Answered != 1 || len(a.Failures) != 1 || len(a.Took) != 1 || a.Quantile(1) <= 0 {
		t.Errorf("asker: %+v, want 2 asked, 1 answered, 1 failure", a)
	}
}
