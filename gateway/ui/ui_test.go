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
		if !strings.Contains(body, `<script src="/ui/app.js" defer></script>`) || !strings.Contains(body, `<link rel="stylesheet" href="/ui/app.css">`) {
			t.Errorf("GET %s: app.js or app.css not referenced", path)
		}
		// The nav links every page, and marks this one as current.
		for p, label := range map[string]string{"/ui/": "Overview", "/ui/projects": "Projects", "/ui/memories": "Memories", "/ui/conflicts": "Conflicts",
			"/ui/instances": "Instances", "/ui/notifications": "Notifications", "/ui/verify": "Verify"} {
			if !regexp.MustCompile(`<a href="` + regexp.QuoteMeta(p) + `"[^>]*>` + label + `</a>`).MatchString(body) {
				t.Errorf("GET %s: nav lacks %s (%s)", path, label, p)
			}
		}
		if !strings.Contains(body, `<a href="`+path+`" aria-current="page">`) {
			t.Errorf("GET %s: nav does not mark the current page", path)
		}
	}
}

func TestAssetsContentTypes(t *testing.T) {
	for path, ct := range map[string]string{
		"/ui/app.js":      "text/javascript; charset=utf-8",
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
		"/ui/app.js.map", "/ui/conflicts.html", "/ui/ui.go", "/v1/sync/conflicts", "/ui/..%2fui.go"} {
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

// TestAppJSUsesNoHTMLSinks: rows carry arbitrary user text, so the script
// must build the DOM with text nodes only.
func TestAppJSUsesNoHTMLSinks(t *testing.T) {
	_, js := get(t, "GET", "/ui/app.js")
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
		"new Function", "setAttribute('style'", ".style.", "createContextualFragment", "DOMParser"} {
		if strings.Contains(js, sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
	if !strings.Contains(js, "textContent") || !strings.Contains(js, "createTextNode") {
		t.Error("app.js renders no text nodes: the check above would pass vacuously")
	}
}

// TestAppJSElementIDs: every element app.js looks up by id exists in a page
// or is created by app.js itself, so a renamed id cannot silently break a page.
func TestAppJSElementIDs(t *testing.T) {
	_, js := get(t, "GET", "/ui/app.js")
	var html strings.Builder
	for path := range pages {
		_, body := get(t, "GET", path)
		html.WriteString(body)
	}
	ids := regexp.MustCompile(`\$\('([A-Za-z0-9_-]+)'\)|setText\('([A-Za-z0-9_-]+)'|renderRows\('([A-Za-z0-9_-]+)', '([A-Za-z0-9_-]+)'|renderVersion\('([A-Za-z0-9_-]+)'`).FindAllStringSubmatch(js, -1)
	if len(ids) < 20 {
		t.Fatalf("found only %d id lookups in app.js", len(ids))
	}
	for _, m := range ids {
		for _, id := range m[1:] {
			if id == "" {
				continue
			}
			if !strings.Contains(html.String(), `id="`+id+`"`) && !strings.Contains(js, `id: '`+id+`'`) {
				t.Errorf("app.js looks up #%s, which no page has and app.js does not create", id)
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
// the key, and app.js treats it as a public page that calls only the public
// endpoint without the key (the browser test checks what is sent).
func TestVerifyPageIsPublic(t *testing.T) {
	_, body := get(t, "GET", "/ui/verify")
	if !strings.Contains(body, `<form id="verify-form"`) || !strings.Contains(body, `<label for="verify-name">Project name</label>`) {
		t.Error("/ui/verify: no project name form")
	}
	if strings.Contains(body, `type="password"`) || strings.Contains(body, "login") {
		t.Error("/ui/verify: the page itself asks for a key")
	}
	_, js := get(t, "GET", "/ui/app.js")
	for _, want := range []string{
		"var verifyPage = {\n    public: true,",
		"return request('GET', path, undefined, '');",
		"if (isPublicPage()) return; // never ask for the key where none is needed",
	} {
		if !strings.Contains(js, want) {
			t.Errorf("app.js lacks %q", want)
		}
	}
	verify := js[strings.Index(js, "// ---- verify (public)"):]
	verify = verify[:strings.Index(verify, "var pages = {")]
	if strings.Contains(verify, "api(") || strings.Contains(verify, "currentKey") {
		t.Error("the verify page's code calls the keyed API")
	}
}
