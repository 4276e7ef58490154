// Package uitest drives the web UI's pages (package gateway/ui) in headless
// Chromium. It is test support only, imported by tests: gateway/ui's browser
// test (against a fake API) and the end-to-end UI tests in e2e (against real
// daemons).
package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// FindBrowser returns the Chromium to drive. Without one the test is skipped
// on a developer machine and fails in CI (CI=true), where .ci/run installs
// it. test names the test in the message, e.g. "the web UI browser test".
func FindBrowser(t testing.TB, test string) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no browser found (chromium, chromium-browser or google-chrome on PATH, or /usr/bin/chromium): " +
			test + " must run in CI; install the Debian package chromium (.ci/run does)")
	}
	t.Skip("no browser found (chromium, chromium-browser, google-chrome); install chromium to run " + test)
	return ""
}

// Budget bounds a test's waits: each by Wait, all of them by Deadline, when
// the test's Total budget is spent.
type Budget struct {
	Wait     time.Duration
	Total    time.Duration
	Deadline time.Time
}

// Next is how long the next wait may take: Wait, or what is left of the
// test's budget. It fails the test when the budget is spent.
func (b Budget) Next(t testing.TB) time.Duration {
	t.Helper()
	left := time.Until(b.Deadline)
	if left < 2*time.Second {
		t.Fatalf("the test's budget of %s is spent", b.Total)
	}
	return min(b.Wait, left)
}

// Options are what the tests that use a Tab set differently.
type Options struct {
	// Budget bounds every wait; the browser lives until its deadline at
	// the latest.
	Budget Budget
	// Poll bounds the polling of a page predicate within its wait (at most
	// the wait less a second), so that the poll's own error is reported.
	Poll time.Duration
	// Start bounds the browser's start (within the budget).
	Start time.Duration
	// Confirm is the prefix of the only dialogs Clean accepts, e.g.
	// "confirm: Resolve all ".
	Confirm string
}

// Tab is one browser tab on a server. It records uncaught exceptions and
// dialogs (accepting them: Clean reports any but the expected confirms) and
// CSP violations.
type Tab struct {
	Base string // the server's URL

	t   testing.TB
	ctx context.Context
	o   Options

	mu         sync.Mutex
	dialogs    []string // "type: message"
	exceptions []string
}

// timeout is the budget's next wait.
func (s *Tab) timeout() time.Duration {
	s.t.Helper()
	return s.o.Budget.Next(s.t)
}

// pageText is the page's visible text, for failure messages.
func (s *Tab) pageText() string {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(page text unavailable: " + err.Error() + ")"
	}
	return txt
}

// statusText is the text of the page's status area (#status), for failure
// messages: it holds the server's error text when an action is refused.
func (s *Tab) statusText() string {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`(s => s ? (s.hidden ? '(hidden) ' : '') + '[' + s.className + '] ' + s.textContent : '(no #status)')(document.getElementById('status'))`))
	if err != nil {
		return "(status unavailable: " + err.Error() + ")"
	}
	return txt
}

func (s *Tab) failure() string {
	return "\n--- status area: " + s.statusText() + "\n--- page text:\n" + s.pageText()
}

// Do runs the browser actions within one wait.
func (s *Tab) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		s.t.Fatalf("%s: %v%s", what, err, s.failure())
	}
}

// Wait polls the JavaScript predicate until it is true.
func (s *Tab) Wait(what, predicate string) {
	s.t.Helper()
	d := s.timeout()
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(min(s.o.Poll, d-time.Second))))
	if err != nil {
		s.t.Fatalf("waiting for %s (%s): %v%s", what, predicate, err, s.failure())
	}
}

// Eval evaluates the JavaScript expression in the tab.
func Eval[T any](s *Tab, expr string) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, min(5*time.Second, s.timeout()))
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v%s", expr, err, s.failure())
	}
	return v
}

// Check fails the test unless the JavaScript predicate is true now.
func (s *Tab) Check(what, predicate string) {
	s.t.Helper()
	if !Eval[bool](s, predicate) {
		s.t.Errorf("%s: false: %s%s", what, predicate, s.failure())
	}
}

// Open navigates to a page and waits until app.js has shown its content.
func (s *Tab) Open(path string) {
	s.t.Helper()
	s.Do("navigate to "+path, chromedp.Navigate(s.Base+path))
	s.Wait(path+" shown", `!document.getElementById('content').hidden`)
}

// Clean checks what must hold on every page: no dialog but the expected
// confirms, no uncaught exception, no CSP violation, no element made from
// row text.
func (s *Tab) Clean(where string) {
	s.t.Helper()
	s.mu.Lock()
	for _, d := range s.dialogs {
		if !strings.HasPrefix(d, s.o.Confirm) {
			s.t.Errorf("%s: unexpected dialog %q (script from data ran?)", where, d)
		}
	}
	for _, e := range s.exceptions {
		s.t.Errorf("%s: uncaught exception: %s", where, e)
	}
	s.exceptions = nil
	s.mu.Unlock()
	if v := Eval[[]string](s, `window.__csp || ['the CSP probe is missing']`); len(v) > 0 {
		s.t.Errorf("%s: CSP violations: %v", where, v)
	}
	s.Check(where+": no element made from row text", `document.querySelectorAll('img').length === 0 && document.querySelectorAll('script').length === 1`)
}

// Dialogs returns the dialogs the tab has seen, as "type: message".
func (s *Tab) Dialogs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dialogs)
}

// cspProbe runs before any page script (DevTools scripts are not subject to
// the page's CSP) and records the violations the CSP reports.
const cspProbe = `window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});`

// Count is the JavaScript expression of how many elements match the CSS
// selector sel.
func Count(sel string) string {
	return `document.querySelectorAll('` + sel + `').length`
}

// JS quotes v as a JavaScript literal.
func JS(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// NewTab launches headless Chromium at execPath and opens a tab on the
// server at base. The browser goes away in t's cleanups, which run before
// those registered earlier (a server's Close, daemons' log dumps); on
// failure they first log the page.
func NewTab(t testing.TB, execPath, base string, o Options) *Tab {
	t.Helper()
	began := time.Now()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	// The browser lives until the test's budget is spent at the latest.
	root, cancelRoot := context.WithDeadline(context.Background(), o.Budget.Deadline)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	s := &Tab{Base: base, t: t, o: o}
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			s.mu.Lock()
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			s.exceptions = append(s.exceptions, msg)
			s.mu.Unlock()
		}
	}))
	s.ctx = ctx
	// Cleanups run last-registered first: the failure report reads the page
	// before the tab and the browser go away, and what the caller registered
	// earlier goes after that.
	t.Cleanup(cancelRoot)
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancelTab)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- the browser at failure: %s", s.failure())
		}
	})

	// Start the browser. The first run's context must have no timeout of its
	// own (it would stop the browser, see chromedp.Run), so the start is
	// bounded from outside.
	bound := Budget{Wait: o.Start, Total: o.Budget.Total, Deadline: o.Budget.Deadline}.Next(t)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting %s: %v", execPath, err)
		}
	case <-time.After(bound):
		cancelTab()
		cancelAlloc()
		t.Fatalf("%s did not start within %s", execPath, bound)
	}
	t.Logf("browser started in %s", time.Since(began).Round(time.Millisecond))

	// Answer dialogs: accept them all (confirm() of Resolve all), Clean
	// reports the unexpected ones.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			s.mu.Lock()
			s.dialogs = append(s.dialogs, string(ev.Type)+": "+ev.Message)
			s.mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	callCtx, cancelCall := context.WithTimeout(ctx, s.timeout())
	defer cancelCall()
	if _, err := chromedp.Call(callCtx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspProbe}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Viewport sets the size of the tab's view in CSS pixels; mobile emulates a
// phone (a mobile viewport, touch).
func (s *Tab) Viewport(width, height int64, mobile bool) {
	s.t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulatePortrait}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	} else {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulateLandscape}
	}
	s.Do(fmt.Sprintf("set the viewport to %dx%d", width, height), chromedp.EmulateViewport(width, height, opts...))
}

// Screenshot captures what the view shows now, as PNG.
func (s *Tab) Screenshot(what string) []byte {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		s.t.Fatalf("screenshot of %s: %v%s", what, err, s.failure())
	}
	return png
}
