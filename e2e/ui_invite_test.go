package e2e

import (
	"crypto/ed25519"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/gateway/ui/uitest"
	"github.com/crow-sync/crow/identity/member"
)

// The instances page's "Invite a machine" form (package gateway/ui) driven
// in headless Chromium against a real home daemon, and the invite it shows
// used for real: the command the page prints is run with the crow binary for
// a new data directory, the new machine is started and enrolls, and the page
// then lists it. The laptop's own instances page has no form, only the note
// that invites are made on home. Two submissions of the same name make two
// different invites, each of which enrolls once and is then refused as
// already used. gateway/ui/browser_invite_test.go drives the same form
// against a fake API.
func TestUIInviteEnrollsAMachine(t *testing.T) {
	execPath := uitest.FindBrowser(t, "the end-to-end web UI tests") // skip (or fail in CI) before starting any daemon
	began := time.Now()
	budget := uitest.Budget{Wait: uiWait, Total: uiBudget, Deadline: began.Add(uiBudget)}

	home := NewDaemon(t, "home", nil)
	home.Start()
	homeID := instanceID(home)

	form := `document.getElementById('invite-form')`
	result := `document.getElementById('invite-result')`
	status := `document.getElementById('status')`
	line := `document.getElementById('invite-line')`
	command := `document.getElementById('invite-command')`
	elsewhere := `document.getElementById('invite-elsewhere')`

	// --- Home's instances page with home's owner key: the form.
	s := newUITab(t, execPath, home.URL(), budget)
	s.Do("open home's /ui/instances", chromedp.Navigate(home.URL()+"/ui/instances"))
	s.Wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Do("enter home's owner key", chromedp.SendKeys(chromedp.ID("login-key"), home.Key), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("the invite form on home (role from the real /health)", `!`+form+`.hidden && document.getElementById('invite-checking').hidden`)
	s.Check("no satellite note, no invite yet", elsewhere+`.hidden && `+result+`.hidden`)
	s.Wait("home listed as this instance", `(r => r !== null && r.textContent.includes('(this instance)'))(document.querySelector('#instance-list tr[data-id=`+uitest.JS(homeID)+`]'))`)
	s.Check("home alone in the registry", uitest.Count(`#instance-list tbody tr`)+` === 1`)

	// invite submits the form for laptop with a lifetime of 24 h and
	// returns what the page shows: the invite, the command, the invite id and
	// expires_at (the expiry's title). prev is the invite shown before ("" for
	// none): the page must show a new one.
	type shown struct{ Invite, Command, ID, ExpiresAt string }
	invite := func(prev string) shown {
		t.Helper()
		s.Do("invite laptop for 24 h", chromedp.Evaluate[chromedp.Void](`document.getElementById('invite-name').value = ''`),
			chromedp.SendKeys(chromedp.ID("invite-name"), "laptop"),
			chromedp.Evaluate[chromedp.Void](`document.getElementById('invite-ttl').value = '24h'`),
			chromedp.Click(chromedp.ID("invite-submit")))
		s.Wait("the invite", `!`+result+`.hidden && `+line+`.value !== '' && `+line+`.value !== `+uitest.JS(prev)+
			` && `+status+`.className === 'ok' && !document.getElementById('invite-submit').disabled`)
		return shown{
			Invite:    uitest.Eval[string](s, line+`.value`),
			Command:   uitest.Eval[string](s, command+`.textContent`),
			ID:        uitest.Eval[string](s, `document.getElementById('invite-id').textContent`),
			ExpiresAt: uitest.Eval[string](s, `document.getElementById('invite-expires').title`),
		}
	}
	// checkShown checks one shown invite against itself: a real invite of
	// this home, valid 24 h from when it was made, its id, the command.
	checkShown := func(what string, got shown, madeAfter, madeBefore time.Time) member.Invite {
		t.Helper()
		inv, err := member.ParseInvite(got.Invite, time.Now())
		if err != nil {
			t.Fatalf("%s: the page's invite %q does not parse: %v", what, got.Invite, err)
		}
		if want := "crow init --name laptop --join " + got.Invite; got.Command != want {
			t.Errorf("%s: the page's command is %q, want %q", what, got.Command, want)
		}
		if id := inv.ID(); got.ID != hex.EncodeToString(id[:]) {
			t.Errorf("%s: the page's invite id %q, the invite's is %x", what, got.ID, id)
		}
		if inv.GatewayURL != home.URL() || !inv.HomePublicKey.Equal(mustHomeKey(t, home)) || inv.CrowID != health(home).CrowID {
			t.Errorf("%s: the invite names %s, key %x, crow %s; want home's (%s)", what, inv.GatewayURL, inv.HomePublicKey, inv.CrowID, home.URL())
		}
		lo, hi := madeAfter.Add(24*time.Hour).Truncate(time.Second), madeBefore.Add(24*time.Hour+time.Second)
		if inv.ExpiresAt.Before(lo) || inv.ExpiresAt.After(hi) {
			t.Errorf("%s: the invite expires at %s, want 24 h after it was made (%s to %s)", what, inv.ExpiresAt, lo, hi)
		}
		if got.ExpiresAt != inv.ExpiresAt.UTC().Format(time.RFC3339) {
			t.Errorf("%s: the page's expires_at %q, the invite's %s", what, got.ExpiresAt, inv.ExpiresAt)
		}
		return inv
	}

	// --- The same name twice: two different invites.
	t0 := time.Now()
	first := invite("")
	t1 := time.Now()
	checkShown("the first invite", first, t0, t1)
	s.Check("the expiry reads in 24 h, single use said", `/\(in 24 h\)$/.test(document.getElementById('invite-expires').textContent)`+
		` && `+result+`.textContent.includes('Single use and secret.') && `+result+`.textContent.includes('crow serve')`+
		` && document.getElementById('invite-for').textContent === 'laptop' && `+line+`.readOnly`)
	second := invite(first.Invite)
	checkShown("the second invite", second, t1, time.Now())
	if second.Invite == first.Invite || second.ID == first.ID {
		t.Fatalf("the second submission of laptop showed the same invite: %+v", second)
	}
	s.Clean("two invites on home")

	// --- The first invite's command, run for a new data directory.
	args := strings.Fields(first.Command)
	if len(args) != 6 || args[0] != "crow" {
		t.Fatalf("the page's command %q is not crow init --name laptop --join INVITE", first.Command)
	}
	laptop := newDaemon(t, "laptop")
	laptop.MustCLI(args[1:]...)
	laptop.readKey()
	laptop.Start()
	Enrolled(t, home, laptop)
	laptopID := instanceID(laptop)
	if h := health(laptop); h.Role != "satellite" || h.Name != "laptop" {
		t.Errorf("the laptop's /health: role %q, name %q; want a satellite called laptop", h.Role, h.Name)
	}
	t.Logf("laptop enrolled by the page's invite in %s", time.Since(began).Round(time.Millisecond))

	// --- Each invite is single use: the first, used, is refused elsewhere;
	// the second enrolls once (a join without serve: no registry row) and is
	// then refused too. A refused join writes nothing.
	reuse := func(what, inv string) {
		t.Helper()
		d := newDaemon(t, "laptop-reuse-"+what)
		out, errOut, err := d.CLI("init", "--name", "laptop", "--join", inv)
		if err == nil || !strings.Contains(errOut, "already used") {
			t.Errorf("using the %s invite again: %v, want a refusal saying already used\nstdout: %s\nstderr: %s", what, err, out, errOut)
		}
		assertNoDir(t, d.Home)
	}
	reuse("first", first.Invite)
	other := newDaemon(t, "laptop-second")
	other.MustCLI("init", "--name", "laptop", "--join", second.Invite)
	reuse("second", second.Invite)

	// --- Home's page, reloaded, lists the laptop.
	s.Open("/ui/instances")
	laptopRow := `document.querySelector('#instance-list tr[data-id=` + uitest.JS(laptopID) + `]')`
	s.Wait("the laptop listed on home", `(r => r !== null && r.textContent.includes('laptop'))(`+laptopRow+`)`)
	s.Check("the laptop is a satellite, home and laptop only",
		laptopRow+`.children[2].textContent === 'satellite' && `+uitest.Count(`#instance-list tbody tr`)+` === 2`)
	s.Wait("the form still on home", `!`+form+`.hidden && `+elsewhere+`.hidden`)
	s.Clean("home's page after the enrollment")
	if page := Must(home, app.InstancesList, app.NoInput{}); len(page.Instances) != 2 {
		t.Errorf("home's registry lists %d instances, want home and laptop: %+v", len(page.Instances), page.Instances)
	}

	// --- The laptop's own instances page: no form, the note.
	s.Do("open the laptop's /ui/instances", chromedp.Navigate(laptop.URL()+"/ui/instances"))
	s.Wait("the laptop's key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Do("enter the laptop's key", chromedp.SendKeys(chromedp.ID("login-key"), laptop.Key), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("the satellite note", `!document.getElementById('content').hidden && !`+elsewhere+`.hidden`)
	s.Check("no form, no invite", form+`.hidden && `+result+`.hidden && document.getElementById('invite-checking').hidden`)
	s.Check("the note says invites are made on home",
		`(t => t.startsWith('Invites are made on home: this instance is a satellite.') && t.includes('crow instance invite --name NAME'))(`+elsewhere+`.textContent)`)
	s.Wait("the laptop is this instance, home listed", `(r => r !== null && r.textContent.includes('(this instance)'))(`+laptopRow+`)`+
		` && document.querySelector('#instance-list tr[data-id=`+uitest.JS(homeID)+`]') !== null`)
	s.Check("the note names home's gateway", elsewhere+`.textContent.includes(`+uitest.JS("(home's gateway: "+home.URL())+`)`)
	s.Clean("the laptop's page")

	if d := s.Dialogs(); len(d) != 0 {
		t.Errorf("dialogs: %q, want none", d)
	}
	took := time.Since(began)
	t.Logf("invite page test took %s", took.Round(time.Millisecond))
	if took > uiBudget {
		t.Errorf("took %s, over the %s budget", took, uiBudget)
	}
}

// mustHomeKey is home's public key from its /health.
func mustHomeKey(t *testing.T, home *Daemon) ed25519.PublicKey {
	t.Helper()
	k, err := hex.DecodeString(health(home).PublicKey)
	if err != nil {
		t.Fatalf("home's /health public key: %v", err)
	}
	return k
}
