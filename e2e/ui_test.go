package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The recovery view (/ui/conflicts, package gateway/ui) driven in headless
// Chromium against three real daemons: the conflicts are made by real
// concurrent edits and replication, the page talks to home's real gateway,
// and every effect of a click is checked through REST on all three instances.
// gateway/ui/browser_test.go drives the same pages against a fake API; the
// browser plumbing below is copied from it (test files cannot be imported).

const (
	// uiWait bounds every single wait of this test: a browser action, a page
	// predicate, a REST condition.
	uiWait = 20 * time.Second
	// uiBudget bounds the whole test, daemons and browser included.
	uiBudget = 90 * time.Second
)

// uiFindBrowser returns the Chromium to drive. Without one the test is
// skipped on a developer machine and fails in CI (CI=true), where .ci/run
// installs it.
func uiFindBrowser(t *testing.T) string {
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
			"the end-to-end recovery view test must run in CI; install the Debian package chromium (.ci/run does)")
	}
	t.Skip("no browser found (chromium, chromium-browser, google-chrome); install chromium to run the end-to-end web UI test")
	return ""
}

// uiTab is one browser tab on a daemon's gateway.
type uiTab struct {
	t        *testing.T
	ctx      context.Context
	base     string
	deadline time.Time // of the whole test

	mu         sync.Mutex
	dialogs    []string // "type: message"
	exceptions []string
}

// timeout is uiWait, or less when the test's budget runs out sooner.
func (s *uiTab) timeout() time.Duration {
	s.t.Helper()
	return uiBound(s.t, s.deadline)
}

// uiBound is how long the next wait may take: uiWait, or what is left of
// the test's budget. It fails the test when the budget is spent.
func uiBound(t *testing.T, deadline time.Time) time.Duration {
	t.Helper()
	left := time.Until(deadline)
	if left < 2*time.Second {
		t.Fatalf("the test's budget of %s is spent", uiBudget)
	}
	return min(uiWait, left)
}

// pageText is the page's visible text, for failure messages.
func (s *uiTab) pageText() string {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(page text unavailable: " + err.Error() + ")"
	}
	return txt
}

// statusText is the text of the page's status area (#status), for failure
// messages: it holds the daemon's error text when an action is refused.
func (s *uiTab) statusText() string {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`(s => s ? (s.hidden ? '(hidden) ' : '') + '[' + s.className + '] ' + s.textContent : '(no #status)')(document.getElementById('status'))`))
	if err != nil {
		return "(status unavailable: " + err.Error() + ")"
	}
	return txt
}

func (s *uiTab) failure() string {
	return "\n--- status area: " + s.statusText() + "\n--- page text:\n" + s.pageText()
}

func (s *uiTab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		s.t.Fatalf("%s: %v%s", what, err, s.failure())
	}
}

// wait polls the JavaScript predicate until it is true.
func (s *uiTab) wait(what, predicate string) {
	s.t.Helper()
	d := s.timeout()
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(d-time.Second)))
	if err != nil {
		s.t.Fatalf("waiting for %s (%s): %v%s", what, predicate, err, s.failure())
	}
}

func uiEval[T any](s *uiTab, expr string) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, min(5*time.Second, s.timeout()))
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v%s", expr, err, s.failure())
	}
	return v
}

// check fails the test unless the JavaScript predicate is true now.
func (s *uiTab) check(what, predicate string) {
	s.t.Helper()
	if !uiEval[bool](s, predicate) {
		s.t.Errorf("%s: false: %s%s", what, predicate, s.failure())
	}
}

// open navigates to a page and waits until app.js has shown its content.
func (s *uiTab) open(path string) {
	s.t.Helper()
	s.do("navigate to "+path, chromedp.Navigate(s.base+path))
	s.wait(path+" shown", `!document.getElementById('content').hidden`)
}

// clean checks what must hold on every page: no dialog but the confirm of
// Resolve all, no uncaught exception, no CSP violation.
func (s *uiTab) clean(where string) {
	s.t.Helper()
	s.mu.Lock()
	for _, d := range s.dialogs {
		if !strings.HasPrefix(d, "confirm: Resolve all ") {
			s.t.Errorf("%s: unexpected dialog %q", where, d)
		}
	}
	for _, e := range s.exceptions {
		s.t.Errorf("%s: uncaught exception: %s", where, e)
	}
	s.exceptions = nil
	s.mu.Unlock()
	if v := uiEval[[]string](s, `window.__csp || ['the CSP probe is missing']`); len(v) > 0 {
		s.t.Errorf("%s: CSP violations: %v", where, v)
	}
	s.check(where+": no element made from row text", `document.querySelectorAll('img').length === 0 && document.querySelectorAll('script').length === 1`)
}

// uiCSPProbe runs before any page script (DevTools scripts are not subject
// to the page's CSP) and records the violations the CSP reports.
const uiCSPProbe = `window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});`

func uiCount(sel string) string {
	return `document.querySelectorAll('` + sel + `').length`
}

// uiJS quotes v as a JavaScript literal.
func uiJS(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// newUITab launches headless Chromium (the flags of the gateway/ui browser
// test) and opens a tab that records uncaught exceptions and dialogs
// (accepting them: clean reports any but the confirm of Resolve all) and
// CSP violations.
func newUITab(t *testing.T, execPath, base string, deadline time.Time) *uiTab {
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
	root, cancelRoot := context.WithDeadline(context.Background(), deadline)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	s := &uiTab{t: t, base: base, deadline: deadline}
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
	// before the tab and the browser go away, and the daemons (whose
	// cleanups were registered earlier) dump their logs after that.
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
	bound := s.timeout()
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
	if _, err := chromedp.Call(callCtx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: uiCSPProbe}); err != nil {
		t.Fatal(err)
	}
	return s
}

// unresolvedIDs lists d's unresolved conflict ids in the REST API's order
// (newest first).
func unresolvedIDs(d *Daemon) []string {
	d.t.Helper()
	st, body := d.Do("GET", "/v1/sync/conflicts?unresolved=true", nil)
	if st != 200 {
		d.t.Fatalf("%s: unresolved conflicts = %d %v", d.Name, st, body)
	}
	ids := []string{}
	for _, c := range body["conflicts"].([]any) {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	return ids
}

func TestRecoveryViewInABrowser(t *testing.T) {
	execPath := uiFindBrowser(t) // skip (or fail in CI) before starting any daemon
	began := time.Now()
	deadline := began.Add(uiBudget)
	within := func() time.Duration { t.Helper(); return uiBound(t, deadline) }

	// --- Three real daemons and three real conflicts.
	home, a, b, _ := threeConverged(t)
	all := []*Daemon{home, a, b}
	write := func(text string) string {
		t.Helper()
		st, m := home.Do("POST", "/v1/memory", map[string]any{"content": text, "project": "crow"})
		if st != 201 {
			t.Fatalf("write: %d %v", st, m)
		}
		return m["id"].(string)
	}
	edit := func(d *Daemon, mid, text string) {
		t.Helper()
		if st, body := d.Do("PATCH", "/v1/memory/"+mid, map[string]any{"content": text}); st != 200 {
			t.Fatalf("%s: patch = %d %v", d.Name, st, body)
		}
	}
	contentEverywhere := func(mid, text string) bool {
		for _, d := range all {
			if m := memoryOf(d, mid); m == nil || m["content"] != text {
				return false
			}
		}
		return true
	}
	// cutOff is the harness's cut with this test's bound.
	cutOff := func(d *Daemon) {
		t.Helper()
		d.MustCLI("sync", "pause")
		Eventually(t, within(), d.Name+" to disconnect", func() bool {
			_, body := d.Do("GET", "/v1/sync/status", nil)
			for _, p := range body["peers"].([]any) {
				if p.(map[string]any)["connected"] == true {
					return false
				}
			}
			return true
		})
	}
	// conflict makes one real conflict on memory mid as
	// TestRecoveryActionsReplicate does (a and b cut off, an edit on each,
	// healed) and waits, as sameEverywhere does, until the three instances
	// serve the same row and the same want conflict records. It returns the
	// new conflict's id.
	conflict := func(mid string, want int) string {
		t.Helper()
		before, _ := conflictIDs(home)
		cutOff(a)
		cutOff(b)
		edit(a, mid, "laptop's edit of "+mid)
		edit(b, mid, "vps's edit of "+mid)
		heal(a)
		heal(b)
		var ids []string
		Eventually(t, within(), fmt.Sprintf("the row %s and %d conflict records to converge", mid, want), func() bool {
			ids, _ = conflictIDs(home)
			if len(ids) != want {
				return false
			}
			first := memoryOf(home, mid)
			for _, d := range all[1:] {
				other, _ := conflictIDs(d)
				if !reflect.DeepEqual(memoryOf(d, mid), first) || !reflect.DeepEqual(other, ids) {
					return false
				}
			}
			return true
		})
		for _, id := range ids {
			if !slices.Contains(before, id) {
				if c := conflictOn(home, id); c["row_id"] != mid || c["op"] != "update" {
					t.Fatalf("new conflict %s is not an update of %s: %v", id, mid, c)
				}
				return id
			}
		}
		t.Fatalf("no new conflict on %s", mid)
		return ""
	}

	// Oldest first, so that the one to restore is the newest: the first row
	// of the list.
	staleMem, leftMem, restoreMem := write("the stale one"), write("the one left for resolve all"), write("the one to restore")
	Eventually(t, within(), "the memories on every instance", func() bool {
		for _, mid := range []string{staleMem, leftMem, restoreMem} {
			if memoryOf(a, mid) == nil || memoryOf(b, mid) == nil {
				return false
			}
		}
		return true
	})
	staleID := conflict(staleMem, 1)
	// The row moves on after its conflict: restoring it is stale.
	edit(home, staleMem, "home moved on")
	Eventually(t, within(), "home's edit of the stale row everywhere", func() bool { return contentEverywhere(staleMem, "home moved on") })
	leftID := conflict(leftMem, 2)
	restoreID := conflict(restoreMem, 3)
	restoreRec := conflictOn(home, restoreID)
	current := restoreRec["winning_data"].(map[string]any)["content"].(string)
	lost := restoreRec["losing_data"].(map[string]any)["content"].(string)
	if current == lost {
		t.Fatalf("the conflict's two versions have the same text: %v", restoreRec)
	}
	wantOrder := unresolvedIDs(home)
	if len(wantOrder) != 3 || wantOrder[0] != restoreID {
		t.Fatalf("REST lists the unresolved conflicts %v; want 3, newest (%s) first", wantOrder, restoreID)
	}
	t.Logf("three real conflicts in %s: restore %s, left %s, stale %s", time.Since(began).Round(time.Millisecond), restoreID, leftID, staleID)

	// --- The browser on home's gateway, and home's owner key.
	s := newUITab(t, execPath, home.URL(), deadline)
	s.do("open /ui/conflicts", chromedp.Navigate(home.URL()+"/ui/conflicts"))
	s.wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.check("no data shown before a key", `document.getElementById('content').hidden`)
	s.do("enter a wrong key", chromedp.SendKeys(chromedp.ID("login-key"), "not-the-key"), chromedp.Click(chromedp.ID("login-submit")))
	s.wait("the daemon's 401 in the key form", `!document.getElementById('login-msg').hidden && document.getElementById('login-msg').textContent.includes('wrong API key')`)
	s.check("the refused key is forgotten", `sessionStorage.getItem('crow-api-key') === null && document.getElementById('content').hidden`)
	s.do("enter home's owner key", chromedp.SendKeys(chromedp.ID("login-key"), home.Key), chromedp.Click(chromedp.ID("login-submit")))
	s.wait("3 unresolved conflicts listed", uiCount(`#conflict-list tbody tr`)+` === 3`)
	s.check("the key is kept for the tab", `sessionStorage.getItem('crow-api-key') === `+uiJS(home.Key)+` && document.getElementById('login').hidden`)
	listed := uiEval[[]string](s, `[...document.querySelectorAll('#conflict-list tbody tr')].map(r => r.dataset.id)`)
	if !reflect.DeepEqual(listed, wantOrder) {
		t.Errorf("the page lists %v; REST /v1/sync/conflicts?unresolved=true answers %v", listed, wantOrder)
	}
	s.clean("the conflict list")

	// --- The first conflict: both versions side by side.
	s.do("open the first conflict", chromedp.Click(chromedp.CSS(`button[data-open=`+uiJS(restoreID)+`]`)))
	s.wait("its detail", `!document.getElementById('detail').hidden && document.getElementById('detail-title').textContent === `+uiJS("Conflict on memories / "+restoreMem))
	s.check("the current version's text", `document.querySelector('#version-current pre').textContent.includes(`+uiJS(uiJS(current))+`)`)
	s.check("the overwritten version's text", `document.querySelector('#version-overwritten pre').textContent.includes(`+uiJS(uiJS(lost))+`)`)
	s.check("side by side", `(a => a.length === 2 && a[0].top === a[1].top && a[0].right <= a[1].left)([...document.querySelectorAll('.versions .version')].map(e => e.getBoundingClientRect()))`)
	s.check("the diff marks the content changed", `(r => r !== null && r.dataset.change === 'changed')(document.querySelector('#diff tr[data-field="content"]'))`)
	names := map[string]string{instanceID(home): "home", instanceID(a): "laptop", instanceID(b): "vps"}
	for side, key := range map[string]string{"current": "winning_instance_id", "overwritten": "losing_instance_id"} {
		inst := restoreRec[key].(string)
		s.wait("the "+side+" version's instance named from /v1/instances",
			`document.querySelector('#version-`+side+` [data-field="instance"]').textContent === `+uiJS(names[inst]+" ("+inst+")"))
	}
	s.check("restore offered", `!document.getElementById('restore').disabled && document.getElementById('restore-note').hidden`)
	s.clean("the detail")

	// --- Restore: a new edit that replicates, and a resolution that does too.
	s.do("click Restore", chromedp.Click(chromedp.ID("restore")))
	s.wait("the restore reported and the conflict gone from the list",
		`document.getElementById('status').className === 'ok' && document.getElementById('status').textContent.includes(`+uiJS("Restored the overwritten version of memories / "+restoreMem)+`) && `+
			uiCount(`#conflict-list tbody tr`)+` === 2 && !document.querySelector('#conflict-list tr[data-id=`+uiJS(restoreID)+`]')`)
	s.check("the detail reads resolved · restored", `document.querySelector('#detail-meta [data-field="state"]').textContent.startsWith('resolved · restored') && document.getElementById('restore').disabled && document.getElementById('keep').disabled`)
	Eventually(t, within(), "the overwritten text and the restore resolution on every instance", func() bool {
		for _, d := range all {
			if c := conflictOn(d, restoreID); c["resolved"] != true || c["resolution"] != "restore" {
				return false
			}
		}
		return contentEverywhere(restoreMem, lost)
	})
	s.clean("after restore")

	// --- Restore of the stale conflict: the daemon's 409 is shown; nothing changes.
	s.do("open the stale conflict", chromedp.Click(chromedp.CSS(`button[data-open=`+uiJS(staleID)+`]`)))
	s.wait("its detail", `document.getElementById('detail-title').textContent === `+uiJS("Conflict on memories / "+staleMem)+` && !document.getElementById('restore').disabled`)
	s.do("click Restore on the stale conflict", chromedp.Click(chromedp.ID("restore")))
	s.wait("the 409 message", `(s => !s.hidden && s.className === 'error' && s.textContent.startsWith('Restore refused for memories / ') && s.textContent.includes('stale'))(document.getElementById('status'))`)
	s.wait("the stale conflict still listed unresolved, keep offered", uiCount(`#conflict-list tbody tr[data-id=`+uiJS(staleID)+`]`)+` === 1 && `+uiCount(`#conflict-list tbody tr`)+` === 2 && !document.getElementById('keep').disabled`)
	if st, body := home.Do("POST", "/v1/sync/conflicts/"+staleID+"/restore", nil); st != 409 || !strings.Contains(fmt.Sprint(body["error"]), "stale") {
		t.Errorf("REST restore of the stale conflict = %d %v, want 409 stale", st, body)
	}
	for _, d := range all {
		if m := memoryOf(d, staleMem); m == nil || m["content"] != "home moved on" {
			t.Errorf("%s: the refused restore changed the row: %v", d.Name, m)
		}
		if c := conflictOn(d, staleID); c["resolved"] != false {
			t.Errorf("%s: the refused restore resolved the conflict: %v", d.Name, c)
		}
	}
	s.clean("after the stale restore")

	// --- Resolve all (confirmed): nothing unresolved anywhere.
	s.do("click Resolve all", chromedp.Click(chromedp.ID("resolve-all")))
	s.wait("an empty unresolved list", uiCount(`#conflict-list tbody tr`)+` === 0 && !document.getElementById('conflict-empty').hidden && document.getElementById('conflict-empty').textContent === 'No unresolved conflicts.'`)
	s.check("resolve all reported", `document.getElementById('status').textContent === 'Resolved 2 conflicts by keeping the current versions.'`)
	s.mu.Lock()
	if len(s.dialogs) != 1 || !strings.HasPrefix(s.dialogs[0], "confirm: Resolve all unresolved conflicts of all tables") {
		t.Errorf("dialogs: %q, want one confirm of Resolve all", s.dialogs)
	}
	s.mu.Unlock()
	Eventually(t, within(), "no unresolved conflict on any instance", func() bool {
		for _, d := range all {
			if len(unresolvedIDs(d)) != 0 {
				return false
			}
		}
		return true
	})
	for _, d := range all {
		for _, id := range []string{leftID, staleID} {
			if c := conflictOn(d, id); c["resolution"] != "keep" {
				t.Errorf("%s: conflict %s resolution %v, want keep", d.Name, id, c["resolution"])
			}
		}
	}
	if !contentEverywhere(staleMem, "home moved on") || !contentEverywhere(restoreMem, lost) {
		t.Errorf("resolve all changed a row")
	}
	s.clean("after resolve all")

	// --- The conflict notification, marked read in the page.
	var noteID string
	_, n := home.Do("GET", "/v1/notifications", nil)
	for _, x := range n["notifications"].([]any) {
		if m := x.(map[string]any); m["kind"] == "sync_conflict" && m["read"] == false {
			noteID = m["id"].(string)
		}
	}
	if noteID == "" {
		t.Fatalf("home has no unread sync_conflict notification: %v", n)
	}
	unreadBefore := n["unread"].(float64)
	s.open("/ui/notifications")
	sel := `#notification-list li[data-id=` + uiJS(noteID) + `]`
	s.wait("the conflict notification", uiCount(sel)+` === 1 && document.querySelector('`+sel+`').classList.contains('unread')`)
	s.check("it links the recovery view", `document.querySelector('`+sel+` a').getAttribute('href') === '/ui/conflicts'`)
	s.do("click Mark read", chromedp.Click(chromedp.CSS(`button[data-read=`+uiJS(noteID)+`]`)))
	s.wait("it reads read", `document.querySelector('`+sel+`').classList.contains('read') && !document.querySelector('button[data-read=`+uiJS(noteID)+`]')`)
	_, n = home.Do("GET", "/v1/notifications", nil)
	for _, x := range n["notifications"].([]any) {
		if m := x.(map[string]any); m["id"] == noteID && m["read"] != true {
			t.Errorf("REST: notification %s is not read: %v", noteID, m)
		}
	}
	if n["unread"].(float64) != unreadBefore-1 {
		t.Errorf("REST: %v unread notifications, want %v", n["unread"], unreadBefore-1)
	}
	s.clean("notifications")

	took := time.Since(began)
	t.Logf("end-to-end recovery view test took %s", took.Round(time.Millisecond))
	if took > uiBudget {
		t.Errorf("took %s, over the %s budget", took, uiBudget)
	}
}
