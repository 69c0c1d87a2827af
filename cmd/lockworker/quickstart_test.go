package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestReadmeLaterAndEvery runs the README's quick start 5 as written:
// its settings, its replica (on a free port where it says 3020, on a
// test Redis where it relies on quick start 2's), every `lockworker`
// line through run and every curl line over HTTP. Each must succeed; the
// two idempotent enqueues and the curl with the same Idempotency-Key
// answer one ID (the curl with 200), and status shows the schedules.
func TestReadmeLaterAndEvery(t *testing.T) {
	readme := doc(t, "README.md")
	start := strings.Index(readme, "### 5. Later and every")
	if start < 0 {
		t.Fatal("the README has no quick start 5, Later and every")
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[start:])
	if block == nil {
		t.Fatal("quick start 5 has no sh block")
	}
	var lines [][]string
	for _, l := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
		if w := shellWords(t, l); len(w) > 0 {
			lines = append(lines, w)
		}
	}
	if len(lines) < 10 || lines[0][0] != "export" {
		t.Fatalf("quick start 5's block: %q", lines)
	}
	r := redistest.Start(t, redistest.Options{})
	env := []string{"REDIS_URLS=" + r.URL()}
	for _, kv := range lines[0][1:] {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	expand := func(s string) string {
		return os.Expand(s, func(name string) string {
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, name+"="); ok {
					return v
				}
			}
			t.Fatalf("quick start 5 uses $%s, which it does not set", name)
			return ""
		})
	}
	var w *worker
	var ids []string // what each idempotent enqueue answered
	var statusOut string
	for _, words := range lines[1:] {
		switch {
		case strings.Contains(words[0], "=") && words[len(words)-1] == "lockworker": // the replica
			var name string
			var extra []string
			for _, kv := range words[:len(words)-1] {
				if v, ok := strings.CutPrefix(kv, "WORKER_ID="); ok {
					name = v
				} else if !strings.HasPrefix(kv, "PORT=") {
					extra = append(extra, kv)
				}
			}
			w = startWorker(t, name, append(env, extra...)...)
			poll.Until(t, 10*time.Second, name+" leads", func() bool { s, ok := w.status(); return ok && s.Leader })
		case words[0] == "lockworker":
			var out strings.Builder
			if err := runCLI(t, words[1:], env, &out); err != nil {
				t.Fatalf("%q: %v\n%s", words, err, out.String())
			}
			if strings.Contains(strings.Join(words, " "), "--idempotency-key") {
				ids = append(ids, strings.TrimSpace(out.String()))
			}
			if words[1] == "status" {
				statusOut = out.String()
			}
		case words[0] == "curl":
			if w == nil {
				t.Fatal("a curl line before the replica's")
			}
			code, body, idem := curl(t, words[1:], expand, w.port)
			if code >= 300 {
				t.Fatalf("%q: %d %s", words, code, body)
			}
			if idem {
				var a struct{ ID string }
				if err := json.Unmarshal([]byte(body), &a); err != nil || code != http.StatusOK {
					t.Errorf("the curl with an Idempotency-Key sent before: %d %s, want 200", code, body)
				}
				ids = append(ids, a.ID)
			}
		default:
			t.Fatalf("quick start 5 has a line this test does not know: %q", words)
		}
	}
	if len(ids) != 3 || ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("the enqueues of idempotency key order-17 answered %q, want one ID three times", ids)
	}
	for _, want := range []string{"jobs delayed", "schedules (2)", "nightly", "cron 0 2 * * * (Europe/Paris)", "every 10s"} {
		if !strings.Contains(statusOut, want) {
			t.Errorf("quick start 5's status lacks %q:\n%s", want, statusOut)
		}
	}
}

// curl sends what a quick start's curl line says (-i, -H, --data-binary
// and a URL on localhost), to port instead of the line's; idem says it
// bore an Idempotency-Key.
func curl(t *testing.T, args []string, expand func(string) string, port int) (code int, body string, idem bool) {
	t.Helper()
	method, data, url := http.MethodGet, "", ""
	header := http.Header{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-i":
		case a == "-H" && i+1 < len(args):
			i++
			k, v, _ := strings.Cut(expand(args[i]), ": ")
			header.Set(k, v)
			idem = idem || k == "Idempotency-Key"
		case a == "--data-binary" && i+1 < len(args):
			i++
			method, data = http.MethodPost, args[i]
		case strings.HasPrefix(a, "localhost:"):
			_, path, _ := strings.Cut(a, "/")
			url = fmt.Sprintf("http://127.0.0.1:%d/%s", port, path)
		default:
			t.Fatalf("a curl argument this test does not know: %q", a)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), idem
}

// shellWords splits a line of a README sh block as sh would, for the
// little they use: words, single and double quotes, and a comment from
// an unquoted # that starts a word.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '#' && !inWord:
			return words
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				t.Fatalf("an unclosed quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
