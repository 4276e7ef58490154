package ui_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crow-sync/crow/daemon/cluster"
	"github.com/crow-sync/crow/gateway/ui/uitest"
)

// TestBrowserAgainstDaemons drives every action of the web UI in headless
// Chromium against three real daemons (daemon/cluster: badger on disk, the
// real gateways on loopback, replication between them): the memory
// browser (pages, project filter, search, a memory's versions and proof),
// the recovery view on conflicts made by real concurrent edits (instance
// names, the human diff, the confirmations, the live row after a restore),
// the instances page (invite, pause and resume, revoke) and the nav on a
// phone. Every effect of a click is checked through REST.
//
// It saves a screenshot of each page: into $CROW_UI_SCREENSHOTS when set
// (docs/screenshots holds the ones this test made:
// CROW_UI_SCREENSHOTS=$PWD/docs/screenshots go test ./gateway/ui -run
// TestBrowserAgainstDaemons), else into a temporary directory.
func TestBrowserAgainstDaemons(t *testing.T) {
	execPath := uitest.FindBrowser(t, "the web UI browser test against daemons")
	began := time.Now()
	const total = 3 * time.Minute
	budget := uitest.Budget{Wait: 20 * time.Second, Total: total, Deadline: began.Add(total)}
	c := cluster.New(t, 3, cluster.Options{Names: []string{"home", "laptop", "vps"}, Timeout: 30 * time.Second})
	home, laptop, vps := c.Node("home"), c.Node("laptop"), c.Node("vps")
	ids := map[string]string{} // instance id -> name
	idOf := map[string]string{}
	for _, n := range c.Nodes {
		var h struct {
			InstanceID string `json:"instance_id"`
		}
		n.MustDo(200, "GET", "/health", nil, &h)
		ids[h.InstanceID], idOf[n.Name] = n.Name, h.InstanceID
	}
	dir := os.Getenv("CROW_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var shots []string

	// --- Memories: 52 in alpha, so that the list has a second page; one in
	// beta, edited once, so that it has two numbered versions.
	for _, p := range []string{"alpha", "beta"} {
		home.MustDo(201, "POST", "/v1/projects", map[string]any{"name": p, "description": "project " + p}, nil)
	}
	for i := range 52 {
		home.MustDo(201, "POST", "/v1/memory", map[string]any{"content": fmt.Sprintf("alpha note %d: the sync daemon keeps memories in step", i), "project": "alpha"}, nil)
	}
	var launch liveMemory
	home.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "the launch is on friday", "project": "beta", "tags": []string{"launch", "plan"}}, &launch)
	// The edit once home has numbered the first version (home numbers what
	// it holds when it gets to it: a quick edit would be numbered alone).
	c.Eventually("the launch memory numbered", func() bool {
		var m liveMemory
		st, _ := home.Do("GET", "/v1/memory/"+launch.ID, nil, &m)
		return st == 200 && m.Number != nil
	})
	home.MustDo(200, "PATCH", "/v1/memory/"+launch.ID, map[string]any{"content": "the launch is on monday at noon", "tags": []string{"launch", "date"}}, nil)
	var newest, byNumber liveMemory
	c.Eventually("two numbered versions of the launch memory", func() bool {
		if st, _ := home.Do("GET", "/v1/memory/"+launch.ID, nil, &newest); st != 200 || newest.Number == nil {
			return false
		}
		st, _ := home.Do("GET", fmt.Sprintf("/v1/memory/%d", *newest.Number), nil, &byNumber)
		return st == 200 && byNumber.Supersedes != nil
	})
	older := *byNumber.Supersedes
	var proof struct {
		Status string `json:"status"`
		Event  struct {
			EventHash string `json:"event_hash"`
		} `json:"event"`
	}
	home.MustDo(200, "GET", fmt.Sprintf("/v1/memory/%d/proof", *newest.Number), nil, &proof)

	s := uitest.NewTab(t, execPath, home.URL, uitest.Options{Budget: budget, Poll: 19 * time.Second, Start: 20 * time.Second,
		Confirm: "(no window dialog is expected: the pages confirm with their own dialog element)"})
	shot := func(name string) {
		t.Helper()
		b := s.Screenshot(name)
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("screenshot %s is not a PNG: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		shots = append(shots, name)
	}
	top := func() { s.Do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)) }
	show := func(id string) {
		s.Do("scroll to #"+id, chromedp.Evaluate[chromedp.Void](`document.getElementById(`+uitest.JS(id)+`).scrollIntoView({block: 'start'})`))
	}

	s.Viewport(1280, 1200, false) // a desktop, tall enough for a conflict's diff
	s.Do("open /ui/memories", chromedp.Navigate(home.URL+"/ui/memories"))
	s.Wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Do("enter home's owner key", chromedp.SendKeys(chromedp.ID("login-key"), home.APIKey), chromedp.Click(chromedp.ID("login-submit")))
	rows := uitest.Count(`#memory-list tbody tr`)
	s.Wait("the first page", rows+` === 50 && !document.getElementById('memory-more').hidden`)
	s.Check("the summary", `document.getElementById('memory-summary').textContent === 'The 50 newest memories (more below).'`)
	s.Do("load more", centred(`#memory-more`)...)
	s.Wait("the second page", rows+` === 53 && document.getElementById('memory-more').hidden`)
	s.Wait("the project filter", `[...document.querySelectorAll('#memory-project option')].map(o => o.value).join() === ',alpha,beta'`)
	s.Do("only beta", chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'beta'; s.dispatchEvent(new Event('change')); })(document.getElementById('memory-project'))`))
	s.Wait("beta's one memory", rows+` === 1 && document.querySelector('#memory-list tbody tr').dataset.id === `+uitest.JS(launch.ID)+
		` && new URLSearchParams(location.search).get('project') === 'beta'`)
	s.Check("singular", `document.getElementById('memory-summary').textContent === 'The newest memory in project beta.'`)
	s.Do("search daemon in beta", setValue("memory-query", "daemon"), chromedp.Click(chromedp.ID("memory-search-submit")))
	s.Wait("no match in beta", `!document.getElementById('memory-empty').hidden && document.getElementById('memory-empty').textContent === 'No memory matches daemon in project beta.'`)
	s.Do("all projects", chromedp.Evaluate[chromedp.Void](`(s => { s.value = ''; s.dispatchEvent(new Event('change')); })(document.getElementById('memory-project'))`))
	s.Wait("alpha's matches", rows+` === 50 && document.getElementById('memory-summary').textContent === '50 best matches for daemon.'`)
	s.Do("search monday", setValue("memory-query", "monday"), chromedp.Click(chromedp.ID("memory-search-submit")))
	s.Wait("one match", rows+` === 1 && document.getElementById('memory-summary').textContent === '1 best match for monday.'`)
	top()
	shot("memories")

	// A memory's detail: its numbers, versions and proof.
	s.Do("open the launch memory", centred(`button[data-open=`+uitest.JS(launch.ID)+`]`)...)
	n := fmt.Sprint(*newest.Number)
	s.Wait("its detail", `document.getElementById('memory-detail-title').textContent === 'Memory #`+n+`'`+
		` && document.querySelector('#memory-detail-meta [data-field="number"]').textContent === '#`+n+` (its newest version)'`)
	s.Wait("its two versions", uitest.Count(`#memory-versions tbody tr`)+` === 2`)
	s.Check("newest first, with their text and links", `[...document.querySelectorAll('#memory-versions tbody tr')].map(r => r.dataset.number + ':' + r.querySelector('[data-field="content"]').textContent + ':' + r.querySelector('[data-field="superseded_by"]').textContent).join('|') === `+
		uitest.JS(fmt.Sprintf("%s:the launch is on monday at noon:the newest|%d:the launch is on friday:by #%s", n, older, n)))
	s.Check("the summary", `document.getElementById('memory-versions-summary').textContent === '2 numbered versions, newest first.'`)
	s.Check("its tags and event hash", `document.querySelector('#memory-detail-meta [data-field="tags"]').textContent === 'launchdate'`+
		` && document.querySelector('#memory-detail-meta [data-field="event_hash"]').textContent === `+uitest.JS(*newest.EventHash))
	s.Wait("the proof of the newest version", `!document.getElementById('memory-proof').hidden`)
	s.Check("the proof as REST answers it", `document.getElementById('memory-proof-verdict').dataset.status === `+uitest.JS(proof.Status)+
		` && document.querySelector('#memory-proof-meta [data-field="event_hash"]').textContent === `+uitest.JS(proof.Event.EventHash)+
		` && JSON.parse(document.getElementById('memory-proof-json').textContent).number === `+n)
	s.Check("a link to the verify page", `document.getElementById('memory-verify-link').getAttribute('href') === '/ui/verify?project=beta'`)
	s.Do("prove the older version", centred(fmt.Sprintf(`button[data-prove="%d"]`, older))...)
	s.Wait("the older version's proof", fmt.Sprintf(`!document.getElementById('memory-proof').hidden && JSON.parse(document.getElementById('memory-proof-json').textContent).number === %d`, older))
	show("memory-detail")
	shot("memory-detail")
	s.Clean("memories")

	// --- Two real conflicts: concurrent edits, and a delete against an edit.
	var plan, doomed liveMemory
	home.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "the shared plan: ship the sync daemon in May", "project": "alpha", "tags": []string{"plan", "sync"}}, &plan)
	home.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "a memory one machine deletes", "project": "alpha"}, &doomed)
	c.Eventually("both memories on every node", func() bool {
		for _, nd := range c.Nodes {
			for _, id := range []string{plan.ID, doomed.ID} {
				if st, _ := nd.Do("GET", "/v1/memory/"+id, nil, nil); st != 200 {
					return false
				}
			}
		}
		return true
	})
	c.Partition([]string{"home", "vps"}, []string{"laptop"})
	home.MustDo(200, "PATCH", "/v1/memory/"+plan.ID, map[string]any{"content": "the shared plan: ship the sync daemon in June", "tags": []string{"plan", "release"}}, nil)
	laptop.MustDo(200, "PATCH", "/v1/memory/"+plan.ID, map[string]any{"content": "the shared plan: ship the sync daemon and the web UI in May"}, nil)
	laptop.MustDo(200, "DELETE", "/v1/memory/"+doomed.ID, nil, nil)
	home.MustDo(200, "PATCH", "/v1/memory/"+doomed.ID, map[string]any{"content": "a memory home edits meanwhile"}, nil)
	c.Heal()
	var recs []liveConflict
	c.Eventually("two conflicts on every node", func() bool {
		for _, nd := range c.Nodes {
			var page struct {
				Conflicts []liveConflict `json:"conflicts"`
			}
			if st, _ := nd.Do("GET", "/v1/sync/conflicts?unresolved=true", nil, &page); st != 200 || len(page.Conflicts) != 2 {
				return false
			}
			if nd == home {
				recs = page.Conflicts
			}
		}
		return true
	})
	byRow := map[string]liveConflict{}
	for _, r := range recs {
		byRow[r.RowID] = r
	}
	edit, del := byRow[plan.ID], byRow[doomed.ID]
	if edit.Op != "update" || del.Op != "delete" {
		t.Fatalf("conflicts %+v, want an update of %s and a delete of %s", recs, plan.ID, doomed.ID)
	}

	s.Open("/ui/conflicts")
	s.Wait("two unresolved conflicts", uitest.Count(`#conflict-list tbody tr`)+` === 2`)
	for _, r := range recs {
		row := `document.querySelector('#conflict-list tr[data-id=` + uitest.JS(r.ID) + `]')`
		s.Check("the list names the instances of "+r.ID, row+`.querySelector('[data-field="winning"]').textContent === `+uitest.JS(ids[r.WinningInstanceID])+
			` && `+row+`.querySelector('[data-field="losing"]').textContent === `+uitest.JS(ids[r.LosingInstanceID])+
			` && `+row+`.querySelector('[data-field="winning"]').title === `+uitest.JS(r.WinningInstanceID))
	}
	s.Do("open the edit conflict", centred(`button[data-open=`+uitest.JS(edit.ID)+`]`)...)
	s.Wait("its detail and live row", `document.getElementById('detail-title').textContent === `+uitest.JS("Conflict on memories / "+plan.ID)+
		` && document.querySelector('#detail-meta [data-field="live"]').dataset.side === 'winning'`)
	winText, loseText := edit.WinningData["content"].(string), edit.LosingData["content"].(string)
	s.Check("the names and ids of both sides", `document.querySelector('#version-current [data-field="instance"]').textContent === `+uitest.JS(ids[edit.WinningInstanceID])+
		` && document.querySelector('#version-overwritten dd[data-field="instance_id"]').textContent === `+uitest.JS(edit.LosingInstanceID))
	s.Check("the content as a word diff", `(r => r.dataset.kind === 'text' && r.querySelectorAll('del.w-del, ins.w-ins').length > 0 && r.querySelector('td.human').textContent.length > 0)(document.querySelector('#diff tr[data-field="content"]'))`)
	s.Check("the live one marked", `document.querySelector('#version-current h3 .sub').textContent === '(winning, live now)'`)
	show("detail")
	shot("conflict-detail")
	s.Do("restore", chromedp.Click(chromedp.ID("restore")))
	s.Wait("the confirmation", `document.getElementById('confirm-dialog').open`)
	s.Check("it names the version that becomes live", `document.getElementById('confirm-text').textContent.includes(`+
		uitest.JS(fmt.Sprintf("The overwritten version from %s (Lamport %d) becomes the live version of memories / %s on every instance", ids[edit.LosingInstanceID], edit.LosingLamportTS, plan.ID))+`)`)
	shot("conflict-confirm")
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("the restored version live, read back", `document.querySelector('#detail-meta [data-field="live"]').dataset.side === 'losing'`+
		` && document.querySelector('#version-overwritten h3 .sub').textContent === '(losing, restored: live now)'`+
		` && document.querySelector('#version-current h3 .sub').textContent === '(winning, no longer live)' && `+uitest.Count(`#conflict-list tbody tr`)+` === 1`)
	c.Eventually("the overwritten text live on every node", func() bool {
		for _, nd := range c.Nodes {
			var m liveMemory
			if st, _ := nd.Do("GET", "/v1/memory/"+plan.ID, nil, &m); st != 200 || m.Content != loseText {
				return false
			}
		}
		return true
	})
	if winText == loseText {
		t.Fatalf("the two versions have the same text %q", winText)
	}

	// The delete against the edit: the confirmation says what the restore does.
	s.Do("open the delete conflict", centred(`button[data-open=`+uitest.JS(del.ID)+`]`)...)
	s.Wait("its detail", `document.getElementById('detail-title').textContent === `+uitest.JS("Conflict on memories / "+doomed.ID)+` && !document.getElementById('restore').disabled`)
	s.Do("restore", chromedp.Click(chromedp.ID("restore")))
	s.Wait("the confirmation", `document.getElementById('confirm-dialog').open`)
	if del.LosingDeleted {
		s.Check("it says the restore DELETES the row", `document.getElementById('confirm-text').textContent.startsWith(`+uitest.JS("Restoring DELETES the row memories / "+doomed.ID+" on every instance")+`)`)
	} else {
		s.Check("it says the restore brings the row back", `document.getElementById('confirm-text').textContent.startsWith(`+uitest.JS("Restoring brings the deleted row memories / "+doomed.ID+" back")+`)`)
	}
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("resolved, the list empty", uitest.Count(`#conflict-list tbody tr`)+` === 0 && document.querySelector('#detail-meta [data-field="live"]').dataset.side === 'losing'`)
	wantStatus := 200
	if del.LosingDeleted {
		wantStatus = 404
	}
	c.Eventually("the restore of the delete conflict on every node", func() bool {
		for _, nd := range c.Nodes {
			if st, _ := nd.Do("GET", "/v1/memory/"+doomed.ID, nil, nil); st != wantStatus {
				return false
			}
		}
		return true
	})
	top()
	shot("conflicts")
	s.Clean("conflicts")

	// --- Instances: invite, pause and resume, revoke.
	s.Open("/ui/instances")
	s.Wait("three instances", uitest.Count(`#instance-list tbody tr`)+` === 3 && !document.getElementById('invite-form').hidden`)
	s.Do("invite a tablet", chromedp.SendKeys(chromedp.ID("invite-name"), "tablet"), chromedp.Click(chromedp.ID("invite-submit")))
	s.Wait("the invite", `!document.getElementById('invite-result').hidden && document.getElementById('invite-line').value.length > 20`)
	s.Check("the command", `document.getElementById('invite-command').textContent.startsWith('crow init --name tablet --join ')`)
	s.Do("copy it", chromedp.Click(chromedp.ID("invite-copy")))
	s.Wait("copied (or selected to copy)", `!document.getElementById('invite-copy-msg').hidden`)
	s.Wait("the peers", uitest.Count(`#peer-list tbody tr`)+` === 2 && !document.getElementById('sync-pause-all').hidden`)
	top()
	shot("instances")
	s.Do("pause all", centred(`#sync-pause-all`)...)
	s.Wait("paused", `document.getElementById('sync-summary').textContent === 'Replication is paused for every peer.' && !document.getElementById('sync-resume-all').hidden`)
	var st struct {
		Paused      bool     `json:"paused"`
		PausedPeers []string `json:"paused_peers"`
	}
	home.MustDo(200, "GET", "/v1/sync/status", nil, &st)
	if !st.Paused {
		t.Error("REST: replication is not paused after Pause all")
	}
	s.Do("resume all", centred(`#sync-resume-all`)...)
	s.Wait("running", `document.getElementById('sync-summary').textContent === 'Replication is running.' && !document.getElementById('sync-pause-all').hidden`)
	home.MustDo(200, "GET", "/v1/sync/status", nil, &st)
	if st.Paused {
		t.Error("REST: replication is still paused after Resume all")
	}
	// One peer: the laptop.
	laptopID := idOf["laptop"]
	peer := `document.querySelector('#peer-list tr[data-id=` + uitest.JS(laptopID) + `]')`
	s.Do("pause the laptop", centred(`button[data-pause=`+uitest.JS(laptopID)+`]`)...)
	s.Wait("the laptop paused", peer+`.dataset.paused === 'true' && `+peer+`.querySelector('[data-field="paused"]').textContent === 'paused'`+
		` && document.getElementById('sync-summary').textContent === 'Replication is running, paused for 1 peer.' && !!document.querySelector('button[data-resume=`+uitest.JS(laptopID)+`]')`)
	home.MustDo(200, "GET", "/v1/sync/status", nil, &st)
	if st.Paused || !slices.Equal(st.PausedPeers, []string{laptopID}) {
		t.Errorf("REST after pausing the laptop: %+v, want paused_peers [%s] only", st, laptopID)
	}
	show("peer-list")
	shot("instances-replication")
	s.Do("resume the laptop", centred(`button[data-resume=`+uitest.JS(laptopID)+`]`)...)
	s.Wait("the laptop running", peer+`.dataset.paused === 'false' && document.getElementById('sync-summary').textContent === 'Replication is running.'`)
	home.MustDo(200, "GET", "/v1/sync/status", nil, &st)
	if st.Paused || len(st.PausedPeers) != 0 {
		t.Errorf("REST after resuming the laptop: %+v, want nothing paused", st)
	}
	vpsID := idOf["vps"]
	s.Do("revoke vps", centred(`button[data-revoke=`+uitest.JS(vpsID)+`]`)...)
	s.Wait("the confirmation naming vps", `document.getElementById('confirm-dialog').open && document.getElementById('confirm-title').textContent === 'Revoke vps?'`)
	s.Check("it says it is for good", `document.getElementById('confirm-text').textContent.includes(`+uitest.JS("Revoking vps (instance "+vpsID+", satellite) refuses it for good")+`)`)
	s.Do("cancel", chromedp.Click(chromedp.ID("confirm-cancel")))
	s.Wait("closed", `!document.getElementById('confirm-dialog').open`)
	s.Do("revoke vps", centred(`button[data-revoke=`+uitest.JS(vpsID)+`]`)...)
	s.Wait("the confirmation", `document.getElementById('confirm-dialog').open`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("vps revoked", `document.querySelector('#instance-list tr[data-id=`+uitest.JS(vpsID)+`] [data-field="status"]').textContent === 'revoked'`+
		` && !document.querySelector('button[data-revoke=`+uitest.JS(vpsID)+`]')`)
	var list struct {
		Instances []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"instances"`
	}
	home.MustDo(200, "GET", "/v1/instances", nil, &list)
	if i := slices.IndexFunc(list.Instances, func(x struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}) bool {
		return x.ID == vpsID
	}); i < 0 || list.Instances[i].Status != "revoked" {
		t.Errorf("REST: vps is not revoked: %+v", list.Instances)
	}
	s.Clean("instances")
	_ = vps

	// --- The other pages, for their screenshots.
	s.Open("/ui/")
	s.Wait("the overview's counts", `![...document.querySelectorAll('.tiles .count')].some(p => p.textContent === '…')`)
	s.Check("the counts", `document.getElementById('ov-conflicts').textContent === 'No unresolved conflicts' && document.getElementById('ov-projects').textContent === '2 projects, 0 with a state'`)
	shot("overview")
	s.Open("/ui/projects?name=beta")
	s.Wait("beta opened", `!document.getElementById('project-detail').hidden && !document.getElementById('state-missing').hidden && document.getElementById('state-missing').textContent !== 'Loading the state…'`)
	shot("projects")
	s.Open("/ui/notifications")
	s.Wait("the conflict notifications", uitest.Count(`#notification-list li`)+` > 0`)
	shot("notifications")
	s.Open("/ui/verify?project=beta")
	s.Wait("the verify answer", `!document.getElementById('status').hidden || !document.getElementById('verify-verdict').hidden`)
	shot("verify")
	s.Clean("the other pages")

	// --- A phone: the nav is one compact line, a menu opens it.
	s.Viewport(390, 844, true)
	s.Open("/ui/conflicts")
	s.Check("the header is one line", `document.getElementById('top').getBoundingClientRect().height < 60`)
	s.Check("the links folded, the menu button shown", `document.querySelector('#top nav').offsetHeight === 0 && document.getElementById('nav-toggle').offsetHeight > 0`+
		` && document.getElementById('nav-toggle').textContent.endsWith('Conflicts')`)
	shot("phone-nav")
	s.Do("open the menu", chromedp.Click(chromedp.ID("nav-toggle")))
	s.Wait("the links, one a line", `document.getElementById('nav-toggle').getAttribute('aria-expanded') === 'true'`+
		` && (ls => ls.length === 7 && ls.every((a, i) => a.offsetHeight > 0 && (i === 0 || a.getBoundingClientRect().top > ls[i-1].getBoundingClientRect().top)))([...document.querySelectorAll('#top nav a')])`)
	shot("phone-menu")
	s.Clean("phone")

	t.Logf("screenshots %s in %s; the test took %s", strings.Join(shots, ", "), dir, time.Since(began).Round(time.Millisecond))
}

// liveMemory is the part of a memory the test reads.
type liveMemory struct {
	ID         string  `json:"id"`
	Number     *uint64 `json:"number"`
	Content    string  `json:"content"`
	EventHash  *string `json:"event_hash"`
	Supersedes *uint64 `json:"supersedes"`
}

// liveConflict is the part of a conflict record the test reads.
type liveConflict struct {
	ID                string         `json:"id"`
	RowID             string         `json:"row_id"`
	Op                string         `json:"op"`
	WinningInstanceID string         `json:"winning_instance_id"`
	LosingInstanceID  string         `json:"losing_instance_id"`
	LosingLamportTS   uint64         `json:"losing_lamport_ts"`
	WinningData       map[string]any `json:"winning_data"`
	LosingData        map[string]any `json:"losing_data"`
	LosingDeleted     bool           `json:"losing_deleted"`
}
