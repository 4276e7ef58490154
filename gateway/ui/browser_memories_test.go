package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crow-sync/crow/gateway/ui/uitest"
)

// fakeForget is one POST /v1/memory/{id}/forget the fake API saw, as sent.
type fakeForget struct {
	Path, Body, ContentType, Auth string
}

// The fake memories: mem3 (two numbered versions, #2 and #5) forgets;
// mem2 is not numbered yet; the forget of mem1 is refused with refusedMsg.
const (
	mem1 = "01J9ZK0000000000000000MEM1"
	mem2 = "01J9ZK0000000000000000MEM2"
	mem3 = "01J9ZK0000000000000000MEM3"
)

// refusedMsg is the fake's 503 for the forget of mem1; its markup must be
// shown as text.
const refusedMsg = `forget of ` + mem1 + ` refused by the fake API <b>for the test</b>`

// forgottenAt is the fake's forgotten_at.
const forgottenAt = "2026-12-02T10:11:12Z"

// memPageSize is the fake's page of GET /v1/memories/list whatever limit is
// asked (a server may answer fewer), so that the UI must page.
const memPageSize = 2

func fakeMemories(now time.Time) []map[string]any {
	mem := func(id string, number any, project, content string, age time.Duration) map[string]any {
		at := now.Add(-age).Format(time.RFC3339)
		return map[string]any{"id": id, "number": number, "project": project, "content": content, "content_hash": "ab",
			"category": "general", "importance": 5, "tags": []string{}, "source": "api", "origin": "inst-home",
			"created_at": at, "updated_at": at, "event_hash": nil}
	}
	return []map[string]any{
		mem(mem3, 5, "alpha", "the launch is on friday "+xss, time.Minute),
		mem(mem2, nil, "beta notes", "a laptop draft, not numbered yet", 2*time.Minute),
		mem(mem1, 1, "alpha", "a memory whose forget is refused", time.Hour),
	}
}

func (f *fakeAPI) seenForgets() []fakeForget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.forgets)
}

func (f *fakeAPI) seenSearches() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.searches)
}

// memoryRoutes serves the memory reads the memories page makes and the
// forget with the forget contract: 200 {"id", "numbers", "forgotten_at"}, 404
// {"error"} for an unknown id (handlers run with f.mu held).
func (f *fakeAPI) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/memories/list", func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		from = min(from, len(f.memories))
		to := min(from+memPageSize, len(f.memories))
		next := ""
		if to < len(f.memories) {
			next = strconv.Itoa(to)
		}
		writeJSON(w, http.StatusOK, map[string]any{"memories": f.memories[from:to], "next_cursor": next})
	})
	mux.HandleFunc("GET /v1/memories/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		f.searches = append(f.searches, q)
		results := []map[string]any{}
		for _, m := range f.memories {
			if strings.Contains(strings.ToLower(m["content"].(string)), strings.ToLower(q)) {
				hit := map[string]any{"score": 1.5}
				for k, v := range m {
					hit[k] = v
				}
				results = append(results, hit)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"query": q, "results": results, "partial": false})
	})
	mux.HandleFunc("POST /v1/memory/{id}/forget", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.forgets = append(f.forgets, fakeForget{Path: r.URL.EscapedPath(), Body: string(body),
			ContentType: r.Header.Get("Content-Type"), Auth: r.Header.Get("Authorization")})
		id := r.PathValue("id")
		if id == mem1 {
			writeErr(w, http.StatusServiceUnavailable, "%s", refusedMsg)
			return
		}
		i := slices.IndexFunc(f.memories, func(m map[string]any) bool { return m["id"] == id })
		if i < 0 {
			writeErr(w, http.StatusNotFound, "no memory with id %q", id)
			return
		}
		f.memories = slices.Delete(f.memories, i, i+1)
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "numbers": []int{2, 5}, "forgotten_at": forgottenAt})
	})
}

// forgetText is what the confirmation must say, word for word.
const forgetText = "Forget erases the content of every version of this memory from every instance, its search entries " +
	"and its on-chain ciphertext (made unreadable). Its number and event hash stay so evidence still verifies. This cannot be undone."

func TestBrowserMemoriesForget(t *testing.T) {
	began := time.Now()
	api := newFakeAPI()
	srv := httptest.NewServer(api.handler())
	t.Cleanup(srv.Close)
	s := startBrowser(t, srv.URL)

	dialog := `document.getElementById('memory-forget-dialog')`
	status := `document.getElementById('status')`
	row := func(id string) string { return `document.querySelector('#memory-list tr[data-id="` + id + `"]')` }
	rows := func() string {
		return `[...document.querySelectorAll('#memory-list tbody tr')].map(r => r.dataset.id).join()`
	}

	// --- The newest memories, a page at a time.
	s.Do("open /ui/memories", chromedp.Navigate(s.Base+"/ui/memories"))
	s.Wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Do("enter the key", chromedp.SendKeys(chromedp.ID("login-key"), testKey), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("the first page", rows()+` === `+uitest.JS(mem3+","+mem2)+` && !document.getElementById('memory-more').hidden`)
	s.Check("the nav marks Memories", `document.querySelector('nav a[aria-current="page"]').getAttribute('href') === '/ui/memories'`)
	s.Do("load more", chromedp.Click(chromedp.ID("memory-more")))
	s.Wait("all three", rows()+` === `+uitest.JS(mem3+","+mem2+","+mem1)+` && document.getElementById('memory-more').hidden`)
	s.Check("number, project, content, created", `(r => r.querySelector('[data-field="number"]').textContent === '#5'`+
		` && r.querySelector('[data-field="project"]').textContent === 'alpha'`+
		` && r.querySelector('[data-field="content"]').textContent === `+uitest.JS("the launch is on friday "+xss)+
		` && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(1 min ago\)$/.test(r.querySelector('[data-field="created_at"]').textContent))(`+row(mem3)+`)`)
	s.Check("a memory home has not numbered", row(mem2)+`.querySelector('[data-field="number"]').textContent === 'not numbered yet'`)
	s.Check("a Forget… button per memory", uitest.Count(`#memory-list button[data-forget]`)+` === 3 && `+row(mem3)+`.querySelector('button[data-forget]').textContent === 'Forget…'`)
	s.Check("no dialog open yet", `!`+dialog+`.open`)
	s.Clean("memories list")

	// --- Forget…, then Cancel: nothing is sent, nothing changes.
	s.Do("Forget… mem3", chromedp.Click(chromedp.CSS(`button[data-forget="`+mem3+`"]`)))
	s.Wait("the dialog", dialog+`.open`)
	s.Check("a modal dialog element", dialog+`.tagName === 'DIALOG' && `+dialog+`.matches(':modal')`)
	s.Check("it says exactly what a forget does", `document.getElementById('memory-forget-what').textContent === `+uitest.JS(forgetText))
	s.Check("it names the memory", `document.getElementById('memory-forget-target').textContent === `+uitest.JS("Memory #5 (id "+mem3+", project alpha)"))
	s.Check("Cancel and Forget, the focus on Cancel", `document.getElementById('memory-forget-cancel').textContent === 'Cancel'`+
		` && document.getElementById('memory-forget-confirm').textContent === 'Forget' && document.activeElement === document.getElementById('memory-forget-cancel')`)
	s.Do("Cancel", chromedp.Click(chromedp.ID("memory-forget-cancel")))
	s.Wait("the dialog closed", `!`+dialog+`.open`)
	s.Check("all three still listed", rows()+` === `+uitest.JS(mem3+","+mem2+","+mem1)+` && document.getElementById('memory-forgotten').hidden`)
	// Escape cancels too.
	s.Do("Forget… mem3 again", chromedp.Click(chromedp.CSS(`button[data-forget="`+mem3+`"]`)))
	s.Wait("the dialog", dialog+`.open`)
	s.Do("Escape", chromedp.KeyEvent("\u001b"))
	s.Wait("the dialog closed by Escape", `!`+dialog+`.open`)
	if seen := api.seenForgets(); len(seen) != 0 {
		t.Fatalf("Cancel and Escape sent %+v", seen)
	}

	// --- Forget mem3: the request, the answer, the row gone.
	s.Do("Forget… mem3, then Forget", chromedp.Click(chromedp.CSS(`button[data-forget="`+mem3+`"]`)))
	s.Wait("the dialog", dialog+`.open`)
	s.Do("Forget", chromedp.Click(chromedp.ID("memory-forget-confirm")))
	s.Wait("mem3 gone, the answer shown", `!`+dialog+`.open && `+rows()+` === `+uitest.JS(mem2+","+mem1)+` && !document.getElementById('memory-forgotten').hidden`)
	seen := api.seenForgets()
	if len(seen) != 1 || seen[0].Path != "/v1/memory/"+mem3+"/forget" || seen[0].Body != "" || seen[0].Auth != "Bearer "+testKey {
		t.Fatalf("the fake API saw %+v, want one POST /v1/memory/%s/forget without a body, with the key", seen, mem3)
	}
	s.Check("the answer: id, numbers, forgotten_at",
		`document.querySelector('#memory-forgotten-meta [data-field="id"]').textContent === `+uitest.JS(mem3)+
			` && document.querySelector('#memory-forgotten-meta [data-field="numbers"]').textContent === '#2, #5'`+
			` && document.querySelector('#memory-forgotten-meta [data-field="forgotten_at"]').textContent === `+uitest.JS(forgottenAt))
	s.Check("reported", status+`.className === 'ok' && `+status+`.textContent.startsWith(`+uitest.JS("Forgot memory "+mem3+" (#2, #5) at "+forgottenAt+".")+`)`)
	s.Clean("forget mem3")

	// --- A refused forget: the server's text, as text, in the dialog; the row stays.
	s.Do("Forget… mem1", chromedp.Click(chromedp.CSS(`button[data-forget="`+mem1+`"]`)))
	s.Wait("the dialog on mem1", dialog+`.open && document.getElementById('memory-forget-target').textContent.includes(`+uitest.JS(mem1)+`)`)
	s.Check("no error left from before", `document.getElementById('memory-forget-error').hidden`)
	s.Do("Forget", chromedp.Click(chromedp.ID("memory-forget-confirm")))
	s.Wait("the server's error in the dialog", `!document.getElementById('memory-forget-error').hidden && document.getElementById('memory-forget-error').textContent === `+
		uitest.JS("Could not forget the memory: "+refusedMsg))
	s.Check("still open, buttons usable, no markup from the error", dialog+`.open && !document.getElementById('memory-forget-confirm').disabled && !document.querySelector('dialog b')`)
	s.Check("the error in the status area too", status+`.className === 'error' && `+status+`.textContent === `+uitest.JS("Could not forget memory "+mem1+": "+refusedMsg))
	s.Do("Cancel", chromedp.Click(chromedp.ID("memory-forget-cancel")))
	s.Wait("closed, mem1 still listed", `!`+dialog+`.open && `+rows()+` === `+uitest.JS(mem2+","+mem1))
	if seen := api.seenForgets(); len(seen) != 2 || seen[1].Path != "/v1/memory/"+mem1+"/forget" {
		t.Fatalf("the fake API saw %+v, want the forget of mem1 second", seen)
	}
	s.Clean("refused forget")

	// --- Search, then back to the newest.
	s.Do("search draft", setValue("memory-query", "draft"), chromedp.Click(chromedp.ID("memory-search-submit")))
	s.Wait("one match", rows()+` === `+uitest.JS(mem2)+` && location.search === '?q=draft'`)
	s.Check("the summary", `document.getElementById('memory-summary').textContent === '1 best match for draft.' && document.getElementById('memory-more').hidden`)
	s.Do("search nothing-like-it", setValue("memory-query", "nothing-like-it"), chromedp.Click(chromedp.ID("memory-search-submit")))
	s.Wait("no match", `!document.getElementById('memory-empty').hidden && document.getElementById('memory-empty').textContent === 'No memory matches nothing-like-it.' && document.getElementById('memory-list').hidden`)
	if q := api.seenSearches(); !slices.Equal(q, []string{"draft", "nothing-like-it"}) {
		t.Errorf("searches %q, want draft, nothing-like-it", q)
	}
	s.Open("/ui/memories?q=draft")
	s.Wait("the search from the address", rows()+` === `+uitest.JS(mem2)+` && document.getElementById('memory-query').value === 'draft'`)
	s.Do("show the newest", chromedp.Click(chromedp.ID("memory-recent")))
	s.Wait("the newest again", rows()+` === `+uitest.JS(mem2+","+mem1)+` && location.search === '' && document.getElementById('memory-query').value === ''`)
	if d := s.Dialogs(); len(d) != 0 {
		t.Errorf("window dialogs %q: the page must confirm with its own dialog element", d)
	}
	s.Clean("memories search")

	t.Logf("browser test took %s", time.Since(began).Round(time.Millisecond))
}
