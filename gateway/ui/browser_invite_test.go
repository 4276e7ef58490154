package ui_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/crow-sync/crow/gateway/ui/uitest"
)

// fakeInvite is one POST /v1/instances/invite the fake API saw: the body as
// sent and the invite it answered ("" when it refused).
type fakeInvite struct {
	Name   string
	TTL    string
	HasTTL bool
	Invite string
}

// badNameMsg is the fake's 400 for the name "bad"; its markup must be shown
// as text.
const badNameMsg = `name "bad" is refused by the fake API <b>for the test</b>`

const satelliteMsg = "only home can invite: this instance is a satellite (home holds the root key)"

// self is this instance's id (f.mu held: the handlers run under it).
func (f *fakeAPI) self() string {
	if f.role == "satellite" {
		return "inst-laptop"
	}
	return "inst-home"
}

func (f *fakeAPI) setRole(role string, healthDown bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.role, f.healthDown = role, healthDown
}

func (f *fakeAPI) seenInvites() []fakeInvite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.invites)
}

// inviteRoutes serves POST /v1/instances/invite with the lead's contract:
// {"name", "ttl"?} in; 201 {"invite", "invite_id", "name", "expires_at"};
// 400 for a bad name or ttl (and for the name "bad"); 403 on a satellite.
func (f *fakeAPI) inviteRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/instances/invite", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name string  `json:"name"`
			TTL  *string `json:"ttl"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeErr(w, http.StatusBadRequest, "body: %v", err)
			return
		}
		seen := fakeInvite{Name: in.Name, HasTTL: in.TTL != nil}
		if in.TTL != nil {
			seen.TTL = *in.TTL
		}
		f.invites = append(f.invites, seen)
		ttl := time.Hour
		if in.TTL != nil {
			d, err := time.ParseDuration(*in.TTL)
			if err != nil || d < time.Minute || d > 7*24*time.Hour {
				writeErr(w, http.StatusBadRequest, "ttl %q: a Go duration between 1m and 168h", *in.TTL)
				return
			}
			ttl = d
		}
		switch n := utf8.RuneCountInString(in.Name); {
		case f.role != "home":
			writeErr(w, http.StatusForbidden, "%s", satelliteMsg)
			return
		case n == 0 || n > 200:
			writeErr(w, http.StatusBadRequest, "name must be 1 to 200 characters")
			return
		case in.Name == "bad":
			writeErr(w, http.StatusBadRequest, "%s", badNameMsg)
			return
		}
		payload, _ := json.Marshal(map[string]string{"gateway_url": "http://127.0.0.1:3001", "public_key": "ab",
			"crow_id": "crow-fake", "secret": fmt.Sprintf("%032x", len(f.invites)), "name": in.Name})
		invite := "crowinv1." + base64.RawURLEncoding.EncodeToString(payload)
		id := sha256.Sum256([]byte(invite))
		f.invites[len(f.invites)-1].Invite = invite
		writeJSON(w, http.StatusCreated, map[string]string{"invite": invite, "invite_id": hex.EncodeToString(id[:]),
			"name": in.Name, "expires_at": time.Now().Add(ttl).UTC().Format(time.RFC3339)})
	})
}

func TestBrowserInvite(t *testing.T) {
	began := time.Now()
	api := newFakeAPI()
	srv := httptest.NewServer(api.handler())
	t.Cleanup(srv.Close)
	s := startBrowser(t, srv.URL)

	form := `document.getElementById('invite-form')`
	result := `document.getElementById('invite-result')`
	status := `document.getElementById('status')`
	line := `document.getElementById('invite-line')`
	command := `document.getElementById('invite-command')`

	// --- Home: the form, with a lifetime of 1 h unless chosen.
	s.Do("open /ui/instances", chromedp.Navigate(s.Base+"/ui/instances"))
	s.Wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Do("enter the key", chromedp.SendKeys(chromedp.ID("login-key"), testKey), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("the invite form on home", `!`+form+`.hidden && document.getElementById('invite-checking').hidden`)
	s.Check("no satellite note, no invite yet", `document.getElementById('invite-elsewhere').hidden && `+result+`.hidden`)
	s.Check("the lifetimes, 1 h by default",
		`[...document.querySelectorAll('#invite-ttl option')].map(o => o.value + '=' + o.textContent).join() === '15m=15 minutes,1h=1 hour,24h=24 hours,168h=7 days'`+
			` && document.getElementById('invite-ttl').value === '1h'`)

	// --- An invite for laptop, valid 24 h.
	s.Do("invite laptop for 24 h", chromedp.SendKeys(chromedp.ID("invite-name"), "laptop"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('invite-ttl').value = '24h'`),
		chromedp.Click(chromedp.ID("invite-submit")))
	s.Wait("the invite", `!`+result+`.hidden && `+line+`.value !== ''`)
	seen := api.seenInvites()
	if len(seen) != 1 || seen[0].Name != "laptop" || seen[0].TTL != "24h" || seen[0].Invite == "" {
		t.Fatalf("the fake API saw %+v, want one invite of laptop with ttl 24h", seen)
	}
	invite := seen[0].Invite
	s.Check("the invite line is the answer, read-only", line+`.value === `+uitest.JS(invite)+` && `+line+`.readOnly`)
	s.Check("the command", command+`.textContent === `+uitest.JS("crow init --name laptop --join "+invite))
	s.Check("then crow serve", result+`.textContent.includes('crow serve')`)
	s.Check("for whom, until when", `document.getElementById('invite-for').textContent === 'laptop'`+
		` && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in 24 h\)$/.test(document.getElementById('invite-expires').textContent)`+
		` && /^[0-9a-f]{64}$/.test(document.getElementById('invite-id').textContent)`)
	s.Check("it says single use and secret", result+`.textContent.includes('Single use and secret.') && `+result+`.textContent.includes('Anyone who has this invite can enroll a machine')`)
	s.Check("reported", status+`.className === 'ok' && `+status+`.textContent.includes('single-use invite for laptop')`)

	// --- Copy: with the clipboard API, then without it (the text is selected).
	s.Do("a recording clipboard", chromedp.Evaluate[chromedp.Void](`Object.defineProperty(navigator, 'clipboard', {configurable: true,
		value: {writeText: t => { window.__copied = t; return Promise.resolve(); }}})`))
	s.Do("copy the invite", chromedp.Click(chromedp.ID("invite-copy")))
	s.Wait("copied", `document.getElementById('invite-copy-msg').textContent === 'Copied the invite.' && window.__copied === `+uitest.JS(invite))
	s.Do("no clipboard", chromedp.Evaluate[chromedp.Void](`Object.defineProperty(navigator, 'clipboard', {configurable: true, value: undefined})`))
	s.Do("copy the invite without a clipboard", chromedp.Evaluate[chromedp.Void](`document.getElementById('invite-copy-msg').textContent = ''`),
		chromedp.Click(chromedp.ID("invite-copy")))
	s.Wait("the invite selected", `document.getElementById('invite-copy-msg').textContent !== '' && document.activeElement === `+line+
		` && `+line+`.selectionStart === 0 && `+line+`.selectionEnd === `+line+`.value.length`)
	s.Do("copy the command without a clipboard", chromedp.Evaluate[chromedp.Void](`document.getElementById('invite-copy-msg').textContent = ''`),
		chromedp.Click(chromedp.ID("invite-copy-command")))
	s.Wait("the command selected", `document.getElementById('invite-copy-msg').textContent.includes('the command') && window.getSelection().toString() === `+command+`.textContent`)

	// --- A refused name: the server's text, as text; no invite shown.
	s.Do("invite bad", setValue("invite-name", "bad"), chromedp.Click(chromedp.ID("invite-submit")))
	s.Wait("the 400 message", status+`.className === 'error' && `+status+`.textContent === `+uitest.JS("Could not make the invite: "+badNameMsg))
	s.Check("no markup from the error, no invite", `!document.querySelector('#status b') && `+result+`.hidden && !document.getElementById('invite-submit').disabled`)

	// --- A name a shell must have quoted, with the default lifetime.
	s.Do("invite Ann's laptop", setValue("invite-name", "Ann's laptop"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('invite-ttl').value = '1h'`),
		chromedp.Click(chromedp.ID("invite-submit")))
	s.Wait("the second invite", `!`+result+`.hidden && document.getElementById('invite-for').textContent === "Ann's laptop"`)
	seen = api.seenInvites()
	if len(seen) != 3 || seen[1].Name != "bad" || seen[2].Name != "Ann's laptop" || seen[2].TTL != "1h" {
		t.Fatalf("the fake API saw %+v, want laptop, bad, Ann's laptop (ttl 1h)", seen)
	}
	s.Check("the name quoted for the shell", command+`.textContent === `+uitest.JS(`crow init --name 'Ann'\''s laptop' --join `+seen[2].Invite))
	s.Clean("invite on home")

	// --- A satellite: no form, a note saying invites are made on home.
	api.setRole("satellite", false)
	s.Open("/ui/instances")
	s.Wait("the satellite note", `!document.getElementById('invite-elsewhere').hidden`)
	s.Check("no form, no invite", form+`.hidden && `+result+`.hidden && document.getElementById('invite-checking').hidden`)
	s.Check("the note", `(t => t.startsWith('Invites are made on home: this instance is a satellite.') && t.includes('crow instance invite --name NAME') && t.includes('http://127.0.0.1:3001'))`+
		`(document.getElementById('invite-elsewhere').textContent)`)
	// The list renders on its own request, not with the note: wait for it.
	s.Wait("self is the satellite", `(r => r !== null && r.textContent.includes('(this instance)'))(document.querySelector('#instance-list tr[data-id="inst-laptop"]'))`)
	if n := len(api.seenInvites()); n != 3 {
		t.Errorf("the satellite page made %d invite calls", n-3)
	}
	s.Clean("invite on a satellite")

	// --- Without /health the role is this instance's row in the registry.
	api.setRole("home", true)
	s.Open("/ui/instances")
	s.Wait("the invite form on home, from the registry", `!`+form+`.hidden && document.getElementById('invite-elsewhere').hidden`)
	api.setRole("satellite", true)
	s.Open("/ui/instances")
	s.Wait("the satellite note, from the registry", `!document.getElementById('invite-elsewhere').hidden && `+form+`.hidden`+
		` && document.getElementById('invite-elsewhere').textContent.startsWith('Invites are made on home: this instance is a satellite.')`)
	s.Clean("invite without /health")

	t.Logf("browser test took %s", time.Since(began).Round(time.Millisecond))
}
