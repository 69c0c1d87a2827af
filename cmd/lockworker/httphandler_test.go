package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// storeToken is the bearer token the example store wants and the
// replicas send (JOB_URL_TOKEN): a secret no log line may show.
const storeToken = "store-tok-s3cret"

var (
	storeBinOnce sync.Once
	storeBin     string
	storeBinErr  error
)

// fencedstore is examples/fencedstore, built once.
func fencedstoreBinary(t *testing.T) string {
	t.Helper()
	storeBinOnce.Do(func() {
		storeBin = filepath.Join(filepath.Dir(binary), "fencedstore")
		out, err := exec.Command("go", "build", "-o", storeBin, "../../examples/fencedstore").CombinedOutput()
		if err != nil {
			storeBinErr = fmt.Errorf("build examples/fencedstore: %v\n%s", err, out)
		}
	})
	if storeBinErr != nil {
		t.Fatal(storeBinErr)
	}
	return storeBin
}

// exampleStore is the example fenced store, running as a process.
type exampleStore struct {
	url string
	out *tail.Buffer
}

func startExampleStore(t *testing.T) *exampleStore {
	t.Helper()
	port := redistest.FreePort(t)
	s := &exampleStore{url: "http://127.0.0.1:" + strconv.Itoa(port), out: &tail.Buffer{}}
	cmd := exec.Command(fencedstoreBinary(t), "-addr", "127.0.0.1:"+strconv.Itoa(port), "-data", filepath.Join(t.TempDir(), "store.json"))
	cmd.Env = []string{"FENCEDSTORE_TOKEN=" + storeToken}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("--- output of the example store ---\n%s", s.out)
		}
	})
	poll.Until(t, 10*time.Second, "the example store to listen", func() bool {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return s
}

// storeRecord and storeData are what the example's GET /data shows.
type storeRecord struct {
	Job     string `json:"job"`
	Token   int64  `json:"token"`
	Attempt int    `json:"attempt"`
	Worker  string `json:"worker"`
	Payload string `json:"payload"`
	Seq     int64  `json:"seq"`
	Fence   int64  `json:"fence"`
}

type storeData struct {
	Fences   map[int]int64          `json:"fences"` // by partition
	Applied  int64                  `json:"applied"`
	Records  map[string]storeRecord `json:"records"`
	History  []storeRecord          `json:"history"`
	Rejected []storeRecord          `json:"rejected"`
}

func (s *exampleStore) data(t *testing.T) storeData {
	t.Helper()
	resp, err := http.Get(s.url + "/data")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d storeData
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// byPayload is the record of the job whose payload is p.
func (d storeData) byPayload(p string) (storeRecord, bool) {
	for _, r := range d.Records {
		if r.Payload == p {
			return r, true
		}
	}
	return storeRecord{}, false
}

// staleWrites lists the applied writes whose token is below one applied
// before them: a stale leader's write that landed after its successor's.
func staleWrites(history []storeRecord) []storeRecord {
	var out []storeRecord
	var high int64
	for _, r := range history {
		if r.Token < high {
			out = append(out, r)
		}
		high = max(high, r.Token)
	}
	return out
}

// The check behind "no stale write" catches one.
func TestStaleWritesCatchesAStaleWrite(t *testing.T) {
	broken := []storeRecord{{Job: "a", Token: 1}, {Job: "b", Token: 2}, {Job: "c", Token: 2}, {Job: "b", Token: 1}}
	if got := staleWrites(broken); len(got) != 1 || got[0].Job != "b" || got[0].Token != 1 {
		t.Fatalf("staleWrites = %+v, want the late write of token 1", got)
	}
	if got := staleWrites(broken[:3]); len(got) != 0 {
		t.Fatalf("staleWrites of a clean history = %+v", got)
	}
}

// holdProxy forwards TCP to a server; while held, what clients send waits
// in the proxy (a request stuck in the network) until released.
type holdProxy struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	gate     chan struct{} // non-nil while holding; closed on release
	held     chan struct{} // a send was held
	wg       sync.WaitGroup
}

func startHoldProxy(t *testing.T, upstream string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, upstream: upstream, held: make(chan struct{}, 1)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		p.release()
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *holdProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *holdProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate = make(chan struct{})
}

func (p *holdProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
}

func (p *holdProxy) accept() {
	defer p.wg.Done()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		conns = append(conns, c, up)
		p.wg.Add(2)
		go func() { // server to client: as is
			defer p.wg.Done()
			_, _ = io.Copy(c, up)
			c.Close()
		}()
		go func() { // client to server: through the gate
			defer p.wg.Done()
			defer up.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					p.mu.Lock()
					gate := p.gate
					p.mu.Unlock()
					if gate != nil {
						select {
						case p.held <- struct{}{}:
						default:
						}
						<-gate
					}
					if _, werr := up.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// leadingToken waits for w to lead and returns its token.
func leadingToken(t *testing.T, w *worker) int64 {
	t.Helper()
	var tok int64
	poll.Until(t, 10*time.Second, w.name+" to lead", func() bool {
		s, ok := w.status()
		tok = s.Token
		return ok && s.Leader
	})
	return tok
}

// linesSince returns w's log lines stamped at or after at.
func (w *worker) linesSince(at time.Time) []string {
	var out []string
	for _, line := range w.lines() {
		ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && !t.Before(at) {
			out = append(out, line)
		}
	}
	return out
}

// TestHTTPHandlerFencedByTheExampleStore: the example store with a real
// fleet. A leader's request is stuck in the network (a proxy holds it)
// and the leader is paused past its lease (SIGSTOP); the next leader's
// jobs, the stuck one among them, are applied by the store; then the
// stuck request arrives and gets 409, the old leader, resumed, gives its
// leadership up, and the store's data holds no stale write. No secret
// (JOB_URL_TOKEN, the URL's password) reaches a log line.
func TestHTTPHandlerFencedByTheExampleStore(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	store := startExampleStore(t)
	proxy := startHoldProxy(t, strings.TrimPrefix(store.url, "http://"))
	common := append(fastEnv(r.URL()), "JOB_HANDLER=http", "JOB_URL_TOKEN="+storeToken, "JOB_TIMEOUT=20s")
	// The old leader goes through the proxy, with a password in its URL
	// (the token wins; the password must not be logged either).
	a := startWorker(t, "http-old", append(common, "JOB_URL="+strings.Replace(proxy.url(), "http://", "http://user:url-pw-s3cret@", 1)+"/jobs")...)
	tokA := leadingToken(t, a)
	b := startWorker(t, "http-new", append(common, "JOB_URL="+store.url+"/jobs")...)
	poll.Until(t, 10*time.Second, "b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	enqueue := func(payloads ...string) {
		t.Helper()
		for _, p := range payloads {
			var out strings.Builder
			if err := runCLI(t, []string{"enqueue", p}, fastEnv(r.URL()), &out); err != nil {
				t.Fatalf("enqueue: %v\n%s", err, out.String())
			}
		}
	}
	enqueue("before-1", "before-2")
	poll.Until(t, 10*time.Second, "the old leader's jobs applied", func() bool {
		d := store.data(t)
		r1, ok1 := d.byPayload("before-1")
		r2, ok2 := d.byPayload("before-2")
		return ok1 && ok2 && r1.Token == tokA && r2.Token == tokA
	})

	proxy.hold()
	enqueue("stuck")
	select {
	case <-proxy.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the old leader's request never reached the proxy")
	}
	a.signal(syscall.SIGSTOP)
	if !fleet.WaitStopped(a.cmd.Process.Pid, 5*time.Second) {
		t.Fatal("a did not stop")
	}
	tokB := leadingToken(t, b)
	if tokB <= tokA {
		t.Fatalf("new token %d not above the old %d", tokB, tokA)
	}
	enqueue("after-1", "after-2")
	poll.Until(t, 10*time.Second, "the new leader's jobs applied, the stuck one among them", func() bool {
		d := store.data(t)
		for _, p := range []string{"stuck", "after-1", "after-2"} {
			if r, ok := d.byPayload(p); !ok || r.Token != tokB {
				return false
			}
		}
		return true
	})

	proxy.release() // the stuck request arrives, late
	poll.Until(t, 10*time.Second, "the store to refuse the late request", func() bool {
		return slices.ContainsFunc(store.data(t).Rejected, func(r storeRecord) bool { return r.Token == tokA })
	})
	resumed := time.Now().Truncate(time.Millisecond)
	a.signal(syscall.SIGCONT)
	poll.Until(t, 10*time.Second, "the old leader to give its leadership up", func() bool {
		s, ok := a.status()
		if !ok || s.Leader {
			return false
		}
		return slices.ContainsFunc(a.linesSince(resumed), func(l string) bool {
			return strings.Contains(l, "msg=transition") && (strings.Contains(l, "from=working") || strings.Contains(l, "from=renew_lock"))
		})
	})
	for _, l := range a.linesSince(resumed) {
		if strings.Contains(l, "rejected this leader's token") || strings.Contains(l, "lease deadline passed") {
			t.Logf("the old leader, resumed: %s", l)
		}
	}
	if l := leaders(a, b); len(l) != 1 || l[0] != b {
		t.Fatalf("%d leaders after the old one resumed; want only the new one", len(l))
	}

	d := store.data(t)
	if stale := staleWrites(d.History); len(stale) != 0 {
		t.Fatalf("stale writes applied: %+v\nhistory %+v", stale, d.History)
	}
	if r, _ := d.byPayload("stuck"); r.Token != tokB || d.Fences[0] != tokB {
		t.Fatalf("the stuck job's record %+v, fence %d; want the new leader's token %d", r, d.Fences[0], tokB)
	}
	for _, out := range []string{a.out.String(), b.out.String(), store.out.String()} {
		if strings.Contains(out, "s3cret") {
			t.Fatalf("a secret reached a log line:\n%s", out)
		}
	}
}

// TestHTTPHandlerStoreAheadOfTheEpoch: a store whose fence is ahead of
// the fleet's epoch (it saw a token from another fleet, or Redis lost its
// epoch) answers 409 to every leadership: each gives its leadership up
// through the chart (recorded as fenced), the job is never counted as a
// failure, and the third such leadership parks the job's key, with an
// error naming the way out, instead of moving the lock forever. Once an
// operator raises the epoch past the store's fence and retries the key,
// the job is applied as its first attempt.
func TestHTTPHandlerStoreAheadOfTheEpoch(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	store := startExampleStore(t)
	req, _ := http.NewRequest(http.MethodPost, store.url+"/jobs", strings.NewReader("seed"))
	req.Header.Set("Authorization", "Bearer "+storeToken)
	req.Header.Set("Lockworker-Job-Id", "seed")
	req.Header.Set("Lockworker-Fencing-Token", "100")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("seeding the store's fence: %d", resp.StatusCode)
	}
	env := append(fastEnv(r.URL()), "JOB_HANDLER=http", "JOB_URL="+store.url+"/jobs", "JOB_URL_TOKEN="+storeToken, "JOB_MAX_ATTEMPTS=2")
	w := startWorker(t, "http-behind", env...)
	leaderOf(t, 10*time.Second, w)
	var out strings.Builder
	if err := runCLI(t, []string{"enqueue", "the-job"}, env, &out); err != nil {
		t.Fatalf("enqueue: %v\n%s", err, out.String())
	}
	id := strings.TrimSpace(out.String())
	// More fenced leaderships than JOB_MAX_ATTEMPTS: a counted attempt
	// would have dead-lettered the job by now.
	poll.Until(t, 30*time.Second, "three leaderships ended by the store's 409", func() bool {
		n := 0
		for _, h := range historyOf(t, env) {
			if h.PreviousEnded == "fenced" {
				n++
			}
		}
		return n >= 3
	})
	if !slices.ContainsFunc(w.lines(), func(l string) bool {
		return strings.Contains(l, "msg=transition") && strings.Contains(l, "from=working") && strings.Contains(l, "stale fencing token")
	}) {
		t.Fatalf("no transition out of working for the stale token:\n%s", w.out)
	}
	out.Reset()
	if err := runCLI(t, []string{"deadletters"}, env, &out); err != nil || strings.Contains(out.String(), "the-job") || strings.Contains(out.String(), "409") {
		t.Fatalf("deadletters: %v\n%s", err, out.String())
	}
	poll.Until(t, 10*time.Second, "the job's key parked", func() bool {
		out.Reset()
		return runCLI(t, []string{"parked"}, env, &out) == nil && strings.Contains(out.String(), id)
	})
	if !strings.Contains(out.String(), "epoch --raise-to") {
		t.Fatalf("parked: the error does not name the way out:\n%s", out.String())
	}
	out.Reset()
	if err := runCLI(t, []string{"epoch", "--raise-to", "100"}, env, &out); err != nil {
		t.Fatalf("epoch --raise-to 100: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runCLI(t, []string{"retry", "--job", id}, env, &out); err != nil {
		t.Fatalf("retry --job %s: %v\n%s", id, err, out.String())
	}
	poll.Until(t, 30*time.Second, "the job applied after the raise", func() bool {
		_, ok := store.data(t).byPayload("the-job")
		return ok
	})
	rec, _ := store.data(t).byPayload("the-job")
	if rec.Token <= 100 || rec.Attempt != 1 {
		t.Fatalf("the job's record %+v: want a token above 100, as its first attempt", rec)
	}
}

// TestHTTPHandlerBadSettingsExitTwo: the http handler's settings are
// checked before anything starts, each refusal naming its variable and
// never the URL's password.
func TestHTTPHandlerBadSettingsExitTwo(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	down := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"JOB_HANDLER=http"}, "JOB_URL: must be set when JOB_HANDLER=http"},
		{[]string{"JOB_HANDLER=http", "JOB_URL=ftp://u:pw-s3cret@h/x"}, `JOB_URL: scheme must be http or https, got "ftp"`},
		{[]string{"JOB_HANDLER=http", "JOB_URL=https://h/x", "JOB_URL_CA=" + filepath.Join(dir, "missing.pem")}, "JOB_URL_CA: open "},
		{[]string{"JOB_HANDLER=http", "JOB_URL=https://h/x", "JOB_URL_CA=" + garbage}, "JOB_URL_CA: no PEM certificate in the file"},
		{[]string{"JOB_HANDLER=http", "JOB_URL=http://h/x", "JOB_TIMEOUT=0s"}, "JOB_TIMEOUT: must be a positive duration"},
	} {
		cmd := exec.Command(binary)
		cmd.Env = append(fastEnv(down), append(tt.env, "PORT="+strconv.Itoa(redistest.FreePort(t)))...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tt.want) || strings.Contains(string(out), "s3cret") {
			t.Errorf("%v: %v; want exit code 2 and %q\n%s", tt.env, err, tt.want, out)
		}
	}
}
