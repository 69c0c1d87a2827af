package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ScreenshotEnv names a file Screenshot also writes its main screenshot
// to (and its variants beside it), for docs/dashboard.md.
const ScreenshotEnv = "LOCKWORKER_SCREENSHOT"

// Exec finds Debian's chromium, or skips the test: nothing here downloads
// a browser.
func Exec(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts chromium (skipped with -short)")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed; install it with: apt-get install -y chromium (make test does)")
	return ""
}

// Page is one headless chromium tab.
type Page struct {
	Ctx context.Context
	Dir string // where screenshots go

	mu      sync.Mutex
	console []string
	logged  chan struct{} // a message was added to console
}

// Open starts chromium with a width x height viewport (as root in a
// container it needs --no-sandbox) and collects the page's console
// errors, warnings and exceptions. Cleanup closes the browser.
func Open(t *testing.T, width, height int) *Page {
	t.Helper()
	exe := Exec(t)
	allocCtx, stopAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)...)
	ctx, stopTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { stopTab(); stopAlloc() })

	p := &Page{Ctx: ctx, Dir: t.TempDir(), logged: make(chan struct{}, 1)}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	consoleCtx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(consoleCtx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" || m.Type == "warning" || m.Type == "assert" {
				p.mu.Lock()
				p.console = append(p.console, fmt.Sprintf("%s: %s", m.Type, m.Text))
				p.mu.Unlock()
				select {
				case p.logged <- struct{}{}:
				default:
				}
			}
		}
	})
	t.Cleanup(func() { stopConsole(); wg.Wait() })
	return p
}

// ConsoleErrors are the errors, warnings and exceptions the page logged,
// CSP violations included.
func (p *Page) ConsoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.console...)
}

// WaitConsole waits, bounded, for a console message containing want.
func (p *Page) WaitConsole(t *testing.T, want string, bound time.Duration) {
	t.Helper()
	timeout := time.After(bound)
	for {
		for _, m := range p.ConsoleErrors() {
			if strings.Contains(m, want) {
				return
			}
		}
		select {
		case <-p.logged:
		case <-timeout:
			t.Fatalf("no console message with %q within %v; console: %v", want, bound, p.ConsoleErrors())
		}
	}
}

// Within runs steps, failing the test if they take longer than d (a
// screenshot named "failed" is kept when LOCKWORKER_SCREENSHOT is set).
func (p *Page) Within(t *testing.T, d time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.Screenshot(t, "failed")
		t.Fatalf("%s (bound %v): %v", what, d, err)
	}
}

// Eval evaluates js in the page and returns its string result.
func (p *Page) Eval(t *testing.T, js string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// Screenshot saves the whole page as dashboard[-variant].png in Dir and,
// when LOCKWORKER_SCREENSHOT names a file, there too (the main one) or
// beside it (the variants).
func (p *Page) Screenshot(t *testing.T, variant string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 10*time.Second)
	defer cancel()
	// From the top, or the sticky bar is drawn where the page was scrolled;
	// after the colour transitions, or a state is caught half-marked.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
		`window.scrollTo(0, 0); Promise.all(document.getAnimations().map((a) => a.finished))`,
		chromedp.EvalAwaitPromise)); err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	name := "dashboard.png"
	if variant != "" {
		name = "dashboard-" + variant + ".png"
	}
	paths := []string{filepath.Join(p.Dir, name)}
	if env := os.Getenv(ScreenshotEnv); env != "" {
		if variant != "" {
			env = strings.TrimSuffix(env, ".png") + "-" + variant + ".png"
		}
		paths = append(paths, env)
	}
	for _, path := range paths {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Error(err)
			return
		}
		t.Logf("screenshot: %s", path)
	}
}

// Visible waits until an element matching the CSS selector is visible.
func Visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}
