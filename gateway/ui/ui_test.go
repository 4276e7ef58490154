package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crow-sync/crow/gateway/ui"
	"github.com/crow-sync/crow/store"
)

// pages are the HTML pages and the data-page each declares.
var pages = map[string]string{
	"/ui/":              "overview",
	"/ui/conflicts":     "conflicts",
	"/ui/instances":     "instances",
	"/ui/memories":      "memories",
	"/ui/notifications": "notifications",
	"/ui/projects":      "projects",
	"/ui/verify":        "verify",
}

func get(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	ui.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func checkSecurityHeaders(t *testing.T, path string, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-store",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", path, k, got, v)
		}
	}
}

func TestPagesServedWithSecurityHeaders(t *testing.T) {
	for path, page := range pages {
		res, body := get(t, "GET", path)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		checkSecurityHeaders(t, path, res.Header)
		if !strings.Contains(body, `<body data-page="`+page+`">`) {
			t.Errorf("GET %s: body does not declare data-page=%q", path, page)
		}
		// One module script: the page's, which imports the shared ones.
		if !strings.Contains(body, `<script type="module" src="/ui/js/`+page+`.js"></script>`) || !strings.Contains(body, `<link rel="stylesheet" href="/ui/app.css">`) {
			t.Errorf("GET %s: js/%s.js or app.css not referenced", path, page)
		}
		// The header is rendered by nav.js, the page names itself to it.
		if !strings.Contains(body, `<header class="top" id="top"></header>`) || strings.Contains(body, "<nav") {
			t.Errorf("GET %s: the page carries its own header instead of the shared one", path)
		}
		_, js := get(t, "GET", "/ui/js/"+page+".js")
		if !regexp.MustCompile(`(?s)boot\((Object\.assign\()?\{\s*name: '` + page + `'`).MatchString(js) {
			t.Errorf("js/%s.js does not boot as page %q", page, page)
		}
	}
	// The one nav links every page.
	_, nav := get(t, "GET", "/ui/js/nav.js")
	for p, label := range map[string]string{"/ui/": "Overview", "/ui/projects": "Projects", "/ui/memories": "Memories", "/ui/conflicts": "Conflicts",
		"/ui/instances": "Instances", "/ui/notifications": "Notifications", "/ui/verify": "Verify"} {
		if !strings.Contains(nav, `'`+p+`', '`+label+`']`) {
			t.Errorf("nav.js lacks %s (%s)", label, p)
		}
	}
}

// modules returns every ES module the pages use, by path, and their text
// together.
func modules(t *testing.T) (map[string]string, string) {
	t.Helper()
	mods := map[string]string{}
	var all strings.Builder
	for _, p := range ui.Paths() {
		if strings.HasPrefix(p, "/ui/js/") {
			_, js := get(t, "GET", p)
			mods[p] = js
			all.WriteString(js)
		}
	}
	if len(mods) < 10 {
		t.Fatalf("only %d modules served: %v", len(mods), mods)
	}
	return mods, all.String()
}

// TestModulesImportServedModules: every import of a module names a module
// that is served (a relative ./name.js under /ui/js/), so no page fails to
// load; and every module is imported by a page's module or another one.
func TestModulesImportServedModules(t *testing.T) {
	mods, _ := modules(t)
	imported := map[string]bool{}
	for _, page := range pages {
		imported["/ui/js/"+page+".js"] = true
	}
	re := regexp.MustCompile(`(?m)^import [^;]*? from '([^']+)';`)
	for p, js := range mods {
		for _, m := range re.FindAllStringSubmatch(js, -1) {
			if !strings.HasPrefix(m[1], "./") {
				t.Errorf("%s imports %q: only ./name.js modules of this UI", p, m[1])
				continue
			}
			target := "/ui/js/" + strings.TrimPrefix(m[1], "./")
			if _, ok := mods[target]; !ok {
				t.Errorf("%s imports %s, which is not served", p, target)
			}
			imported[target] = true
		}
	}
	for p := range mods {
		if !imported[p] {
			t.Errorf("%s is served but no page uses it", p)
		}
	}
}

func TestAssetsContentTypes(t *testing.T) {
	for path, ct := range map[string]string{
		"/ui/js/api.js":   "text/javascript; charset=utf-8",
		"/ui/js/nav.js":   "text/javascript; charset=utf-8",
		"/ui/app.css":     "text/css; charset=utf-8",
		"/ui/favicon.svg": "image/svg+xml",
	} {
		res, body := get(t, "GET", path)
		if res.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %s: status %d, %d bytes", path, res.StatusCode, len(body))
		}
		if got := res.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ct)
		}
		checkSecurityHeaders(t, path, res.Header)
	}
}

func TestUnknownPathsAre404(t *testing.T) {
	for _, path := range []string{"/ui/nope", "/ui/conflicts/", "/ui/conflicts/x", "/ui/index.html", "/ui/static/app.js",
		"/ui/verify/", "/ui/verify/alpha", "/ui/projects/alpha", "/ui/verify.html", "/ui/memories/", "/ui/memories.html",
		"/ui/app.js.map", "/ui/app.js", "/ui/js/", "/ui/js", "/ui/js/nope.js", "/ui/static/js/api.js", "/ui/conflicts.html", "/ui/ui.go", "/v1/sync/conflicts", "/ui/..%2fui.go"} {
		res, _ := get(t, "GET", path)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, res.StatusCode)
		}
		checkSecurityHeaders(t, path, res.Header)
	}
}

func TestMethods(t *testing.T) {
	res, body := get(t, "HEAD", "/ui/conflicts")
	if res.StatusCode != http.StatusOK || body != "" || res.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD: status %d, body %d bytes, Content-Length %q", res.StatusCode, len(body), res.Header.Get("Content-Length"))
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		res, _ := get(t, m, "/ui/conflicts")
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /ui/conflicts: status %d, Allow %q", m, res.StatusCode, res.Header.Get("Allow"))
		}
	}
	res, _ = get(t, "GET", "/ui")
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: status %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
}

var (
	scriptTag   = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
	openScripts = regexp.MustCompile(`(?i)<script\b`)
	styleTag    = regexp.MustCompile(`(?i)<style\b`)
	styleAttr   = regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`)
	eventAttr   = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	jsURL       = regexp.MustCompile(`(?i)javascript:`)
	localRef    = regexp.MustCompile(`(?i)\s(?:src|href)="([^"]*)"`)
)

// TestNoInlineCode: the CSP (script-src 'self'; style-src 'self') would block
// inline scripts, inline styles and event handler attributes; none may be
// there. Every referenced file must be served.
func TestNoInlineCode(t *testing.T) {
	for path := range pages {
		_, body := get(t, "GET", path)
		scripts := scriptTag.FindAllStringSubmatch(body, -1)
		if len(scripts) != len(openScripts.FindAllString(body, -1)) {
			t.Errorf("%s: a <script> tag is not closed", path)
		}
		for _, m := range scripts {
			if !strings.Contains(m[1], "src=") {
				t.Errorf("%s: <script%s> has no src", path, m[1])
			}
			if strings.TrimSpace(m[2]) != "" {
				t.Errorf("%s: inline script body %q", path, m[2])
			}
		}
		for name, re := range map[string]*regexp.Regexp{"<style> element": styleTag, "style= attribute": styleAttr,
			"event handler attribute": eventAttr, "javascript: URL": jsURL} {
			if loc := re.FindStringIndex(body); loc != nil {
				t.Errorf("%s: %s at %q", path, name, body[loc[0]:min(loc[1]+20, len(body))])
			}
		}
		for _, m := range localRef.FindAllStringSubmatch(body, -1) {
			ref := m[1]
			if !strings.HasPrefix(ref, "/ui/") {
				t.Errorf("%s: reference %q is not a /ui/ path (the CSP allows only this origin)", path, ref)
				continue
			}
			if res, _ := get(t, "GET", ref); res.StatusCode != http.StatusOK {
				t.Errorf("%s: referenced %s answers %d", path, ref, res.StatusCode)
			}
		}
	}
}

// TestModulesUseNoHTMLSinks: rows carry arbitrary user text, so the scripts
// must build the DOM with text nodes only.
func TestModulesUseNoHTMLSinks(t *testing.T) {
	mods, all := modules(t)
	for p, js := range mods {
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
			"new Function", "setAttribute('style'", ".style.", "createContextualFragment", "DOMParser"} {
			if strings.Contains(js, sink) {
				t.Errorf("%s uses %s", p, sink)
			}
		}
	}
	if !strings.Contains(all, "textContent") || !strings.Contains(all, "createTextNode") {
		t.Error("the modules render no text nodes: the check above would pass vacuously")
	}
}

// TestModulesElementIDs: every element the modules look up by id exists in
// a page or is created by a module itself, so a renamed id cannot silently
// break a page.
func TestModulesElementIDs(t *testing.T) {
	_, js := modules(t)
	var html strings.Builder
	for path := range pages {
		_, body := get(t, "GET", path)
		html.WriteString(body)
	}
	ids := regexp.MustCompile(`\$\('([A-Za-z0-9_-]+)'\)|setText\('([A-Za-z0-9_-]+)'|renderRows\('([A-Za-z0-9_-]+)', '([A-Za-z0-9_-]+)'|renderVersion\('([A-Za-z0-9_-]+)'`).FindAllStringSubmatch(js, -1)
	if len(ids) < 20 {
		t.Fatalf("found only %d id lookups in the modules", len(ids))
	}
	for _, m := range ids {
		for _, id := range m[1:] {
			if id == "" {
				continue
			}
			if !strings.Contains(html.String(), `id="`+id+`"`) && !strings.Contains(js, `id: '`+id+`'`) {
				t.Errorf("a module looks up #%s, which no page has and no module creates", id)
			}
		}
	}
}

// TestTableFilter: the recovery view's table filter offers exactly the
// tables whose rows can conflict (all synced tables but the home-written
// ones, crow_context (last-write-wins) and the conflict records themselves).
func TestTableFilter(t *testing.T) {
	_, body := get(t, "GET", "/ui/conflicts")
	sel := regexp.MustCompile(`(?s)<select id="filter-table">(.*?)</select>`).FindStringSubmatch(body)
	if sel == nil {
		t.Fatal("no table filter")
	}
	var got []string
	for _, m := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllStringSubmatch(sel[1], -1) {
		if m[1] != "" {
			got = append(got, m[1])
		}
	}
	noConflicts := []string{store.TableCrowContext, store.TableMemoryNumbers, store.TableMemoryVersions, store.TableStateVersions, store.TableAnchors, store.TableCrowRevocations, store.TableSyncConflicts}
	var want []string
	for _, tb := range store.Tables() {
		if !slices.Contains(noConflicts, tb) {
			want = append(want, tb)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("table filter offers %v, want %v", got, want)
	}
}

func TestPathsListsEveryPage(t *testing.T) {
	ps := ui.Paths()
	for path := range pages {
		if !slices.Contains(ps, path) {
			t.Errorf("Paths() lacks %s", path)
		}
	}
}

// TestVerifyPageIsPublic: the verify page asks for a project name, not for
// the key, and js/verify.js is a public page that calls only the public
// endpoint without the key (the browser test checks what is sent).
func TestVerifyPageIsPublic(t *testing.T) {
	_, body := get(t, "GET", "/ui/verify")
	if !strings.Contains(body, `<form id="verify-form"`) || !strings.Contains(body, `<label for="verify-name">Project name</label>`) {
		t.Error("/ui/verify: no project name form")
	}
	if strings.Contains(body, `type="password"`) || strings.Contains(body, "login") {
		t.Error("/ui/verify: the page itself asks for a key")
	}
	_, api := get(t, "GET", "/ui/js/api.js")
	for _, want := range []string{
		"return request('GET', path, undefined, '');",
		"if (page && page.public) return; // never ask for the key where none is needed",
	} {
		if !strings.Contains(api, want) {
			t.Errorf("api.js lacks %q", want)
		}
	}
	for _, p := range []string{"/ui/js/verify.js", "/ui/js/anchors.js"} {
		_, js := get(t, "GET", p)
		if p == "/ui/js/verify.js" && !strings.Contains(js, "var verifyPage = {\n  public: true,") {
			t.Errorf("%s: the verify page is not declared public", p)
		}
		if strings.Contains(js, "api(") || strings.Contains(js, "currentKey") || regexp.MustCompile(`import \{[^}]*\bapi\b`).MatchString(js) {
			t.Errorf("%s: the verify page's code calls the keyed API", p)
		}
	}
}
