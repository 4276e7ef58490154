package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"

	"github.com/chromedp/chromedp"

	"github.com/crow-sync/crow/gateway/ui/uitest"
)

// The projects page and the public verify page (package gateway/ui) driven
// in headless Chromium against real daemons: a real memory is numbered by
// home, a project is consolidated from it and anchored on home's embedded
// chain. Home's public verify page (no key ever entered) says the version
// is final with REST's hash, root and packet; the laptop's projects page (a
// satellite, which reads no chain) shows the state and home's replicated
// anchor record (root, packet) as unverified. The browser plumbing is gateway/ui/uitest's, set up
// by ui_test.go's newUITab.
func TestProjectsAndVerifyPagesInABrowser(t *testing.T) {
	execPath := uitest.FindBrowser(t, "the end-to-end web UI tests") // skip (or fail in CI) before starting any daemon
	began := time.Now()
	budget := uitest.Budget{Wait: uiWait, Total: uiBudget, Deadline: began.Add(uiBudget)}
	within := func() time.Duration { t.Helper(); return budget.Next(t) }

	// --- Two real daemons, a numbered memory, a consolidated and anchored state.
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	const project, title, statement = "pages", "Static pages", "the web UI is static pages over the REST API"
	id := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: "the UI stays static, no build step", Project: project}).ID
	var number uint64
	Eventually(t, within(), "the memory's number", func() bool {
		got := Must(home, app.MemoryGet, app.MemoryID{ID: id})
		if got.Number != nil {
			number = *got.Number
		}
		return got.Number != nil
	})
	v1, err := Call(home, app.ProjectConsolidate, app.ConsolidateIn{Project: project, ConsolidatedUntilEvent: &number, Ops: ops(
		fmt.Sprintf(`{"op": "add_decision", "title": %q, "statement": %q, "evidence_memory_ids": [%d]}`, title, statement, number),
		`{"op": "set_phase", "phase": "beta"}`,
	)})
	if err != nil || v1.Version != 1 || v1.AppliedCount != 2 {
		t.Fatalf("consolidation = %+v %v", v1, err)
	}
	hash := v1.StateHash
	if hash == "" {
		t.Fatalf("consolidation answered no state hash: %+v", v1)
	}
	var doc app.Verification
	Eventually(t, within(), "version 1 anchored on home (public verify, no key)", func() bool {
		doc, err = publicVerify(home, project)
		return err == nil && doc.Verified
	})
	// Verified is true from "included" on; the page below shows "final".
	Eventually(t, within(), "version 1 final on home", func() bool {
		doc, err = publicVerify(home, project)
		return err == nil && len(doc.Versions) == 1 && doc.Versions[0].Status == anchor.StatusFinal
	})
	v := doc.Versions[0]
	if !doc.Verified || v.StateHash != hash || !v.Match || v.Root == "" || v.RootID == 0 || v.Packet == nil ||
		v.Packet.StateHash != hash || v.Packet.Root != v.Root {
		t.Fatalf("home's verify document = %+v, want version 1 final with %s and its packet", doc, hash)
	}
	if err := anchor.CheckPacket(*v.Packet); err != nil {
		t.Fatalf("version 1's packet: %v", err)
	}
	root, rootID := v.Root, fmt.Sprintf("#%d", v.RootID)
	// The laptop's page reads what the laptop holds: wait until version 1
	// and home's anchor record have replicated to it.
	Eventually(t, within(), "version 1 and home's anchor record on the laptop", func() bool {
		if v, err := Call(laptop, app.ProjectStateGet, app.ProjectName{Project: project}); err != nil || v.Version.Version != 1 || v.StateHash != hash {
			return false
		}
		d, err := publicVerify(laptop, project)
		if err != nil || d.Chain != nil {
			return false
		}
		return len(d.Versions) == 1 && d.Versions[0].Status == anchor.StatusUnverified && d.Versions[0].Match && d.Versions[0].Root == root
	})
	t.Logf("anchored and replicated in %s", time.Since(began).Round(time.Millisecond))

	verdict := `document.getElementById('verify-verdict')`
	row1 := `document.querySelector('#verify-list tr[data-version="1"]')`
	noKeyForm := `!document.getElementById('login') && document.getElementById('forget-key').hidden && !document.getElementById('content').hidden`

	// --- (1) Home's public verify page, in a tab that never had a key.
	s := newUITab(t, execPath, home.URL(), budget)
	s.Open("/ui/verify?project=" + project)
	s.Wait("the verdict", `!`+verdict+`.hidden && `+uitest.Count(`#verify-list tbody tr`)+` === 1`)
	s.Check("no key form, no forget-key, no key in the tab", noKeyForm+` && sessionStorage.getItem('crow-api-key') === null`)
	s.Check("the name is pre-filled and titled", `document.getElementById('verify-name').value === `+uitest.JS(project)+
		` && document.getElementById('verify-title').textContent === `+uitest.JS("Project "+project))
	s.Check("the verdict says verified",
		`(v => v.className === 'verdict ok' && v.dataset.verified === 'true' && v.textContent === `+uitest.JS("Verified: the only version of "+project+" is in a root anchored on chain, with a matching hash and proof.")+`)(`+verdict+`)`)
	s.Check("the chain and the project id are REST's",
		`document.querySelector('#verify-meta [data-field="project_id"]').textContent === `+uitest.JS(doc.ProjectID)+
			` && document.querySelector('#verify-meta [data-field="chain"]').textContent.startsWith('embedded (chain id ')`)
	s.Check("version 1 final, with REST's state hash, root and packet",
		`(r => r !== null && r.dataset.status === 'final' && !r.classList.contains('anchor-error')`+
			` && (b => b.textContent === 'final' && b.classList.contains('ok'))(r.querySelector('[data-field="status"] .badge'))`+
			` && r.querySelector('[data-field="local_state_hash"]').textContent === `+uitest.JS(hash)+` && !r.querySelector('[data-field="record_state_hash"]')`+
			` && r.querySelector('[data-field="root_hash"]').textContent === `+uitest.JS(root)+` && r.querySelector('[data-field="root_id"]').textContent === `+uitest.JS(rootID)+
			` && r.querySelector('[data-field="tx_hash"]').textContent === `+uitest.JS(v.TxHash)+
			` && (p => p.state_hash === `+uitest.JS(hash)+` && p.root === `+uitest.JS(root)+` && p.version === 1 && p.status === 'final')(JSON.parse(r.querySelector('[data-field="packet_json"]').textContent))`+
			` && r.querySelector('[data-field="packet_download"]').getAttribute('download') === `+uitest.JS("crow-"+project+"-v1-packet.json")+`)(`+row1+`)`)
	s.Check("no error shown", `document.getElementById('status').hidden && document.getElementById('verify-empty').hidden`)
	s.Clean("home's verify page")

	// --- (2) The laptop's projects page: its own key, its replicated records.
	s.Do("open the laptop's /ui/projects?name="+project, chromedp.Navigate(laptop.URL()+"/ui/projects?name="+project))
	s.Wait("the laptop's key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Check("no data shown before a key", `document.getElementById('content').hidden`)
	s.Do("enter the laptop's key", chromedp.SendKeys(chromedp.ID("login-key"), laptop.Key), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("the decision", `(r => r !== null && r.querySelector('[data-field="title"]').textContent === `+uitest.JS(title)+`)(document.querySelector('#state-decisions tbody tr'))`)
	s.Check("the key is kept for the tab", `sessionStorage.getItem('crow-api-key') === `+uitest.JS(laptop.Key)+` && document.getElementById('login').hidden`)
	s.Check("one decision, its statement and evidence",
		uitest.Count(`#state-decisions tbody tr`)+` === 1 && (r => r.querySelector('[data-field="statement"]').textContent === `+uitest.JS(statement)+
			` && r.querySelector('[data-field="evidence_memory_ids"]').textContent === `+uitest.JS("#"+uitest.JS(number))+`)(document.querySelector('#state-decisions tbody tr'))`)
	s.Check("version 1, REST's hash, the phase",
		`document.querySelector('#state-meta [data-field="version"]').textContent === '1'`+
			` && document.querySelector('#state-meta [data-field="state_hash"]').textContent === `+uitest.JS(hash)+
			` && document.querySelector('#state-meta [data-field="phase"]').textContent === 'beta'`)
	s.Wait("the anchors", `!document.getElementById('verify-list').hidden && `+uitest.Count(`#verify-list tbody tr`)+` === 1`)
	s.Check("version 1 unverified: home's replicated record, which this daemon cannot check",
		`(r => r !== null && r.dataset.status === 'unverified' && !r.classList.contains('anchor-error')`+
			` && r.querySelector('[data-field="status"] .badge').textContent === 'unverified'`+
			` && r.querySelector('[data-field="status"]').textContent === 'unverified this daemon reads no chain; home\'s record and proof check out'`+
			` && r.querySelector('[data-field="local_state_hash"]').textContent === `+uitest.JS(hash)+
			` && r.querySelector('[data-field="root_hash"]').textContent === `+uitest.JS(root)+
			` && r.querySelector('[data-field="anchored"]').textContent.startsWith('—')`+
			` && JSON.parse(r.querySelector('[data-field="packet_json"]').textContent).state_hash === `+uitest.JS(hash)+`)(`+row1+`)`)
	s.Check("no chain here, said so", `document.querySelector('#verify-meta [data-field="chain"]').textContent.startsWith('none: this daemon reads no chain')`)
	s.Check("the verdict: not verified here, no error",
		`(v => v.className === 'verdict info' && v.dataset.verified === 'false' && v.textContent === `+uitest.JS("Not verified here: this instance reads no chain, so it shows home's records (1 version of "+project+": 1 unverified). Verify each packet against the chain yourself, or on home.")+`)(`+verdict+`)`)
	s.Check("the public verify link", `document.getElementById('project-verify-link').getAttribute('href') === `+uitest.JS("/ui/verify?project="+project))
	s.Check("no error shown", `document.getElementById('status').hidden && document.getElementById('state-missing').hidden`)
	s.Clean("the laptop's projects page")

	if d := s.Dialogs(); len(d) != 0 {
		t.Errorf("dialogs: %q, want none", d)
	}

	took := time.Since(began)
	t.Logf("projects and verify pages test took %s", took.Round(time.Millisecond))
	if took > uiBudget {
		t.Errorf("took %s, over the %s budget", took, uiBudget)
	}
}
