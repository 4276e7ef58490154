package e2e

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

// security counts the attacks a trust test makes and how many were refused;
// the totals are logged for docs/RELIABILITY.md.
type security struct {
	t                 *testing.T
	attempts, refused int
}

// refused records one attempt; ok is whether it was refused as it must be.
func (s *security) check(what string, ok bool) {
	s.t.Helper()
	s.attempts++
	if ok {
		s.refused++
		return
	}
	s.t.Errorf("security: %s was NOT refused", what)
}

// TestTrustEnrollmentAndRevocation is issue 10's judgement on real daemons:
// satellites enrolled by invite hold no seed bytes; after a revocation the
// stolen satellite's copy (same id), a fresh id, and its used invite get
// nothing new from home or the other satellite and cannot be registered; an
// expired invite and another crow's instance are refused.
func TestTrustEnrollmentAndRevocation(t *testing.T) {
	sec := &security{t: t}
	home := NewDaemon(t, "home", nil)
	home.Start()
	// An invite that will have expired by the end of the test.
	expiring := Invite(home, "late", "--ttl", "1m")
	expiresAt := time.Now().Add(time.Minute)

	laptopInvite := Invite(home, "laptop")
	laptop := newDaemon(t, "laptop")
	laptop.MustCLI("init", "--name", "laptop", "--join", laptopInvite)
	laptop.readKey()
	laptop.Start()
	Enrolled(t, home, laptop)
	vps := NewDaemon(t, "vps", home)
	vps.Start()
	Enrolled(t, home, vps)
	Eventually(t, syncTimeout, "laptop and vps to know each other", func() bool {
		return lists(laptop, vps.instanceID()) && lists(vps, laptop.instanceID())
	})

	// 1. No seed bytes anywhere in a satellite's $CROW_HOME.
	seed := readSeed(t, home)
	for _, s := range []*Daemon{laptop, vps} {
		if _, err := os.Stat(filepath.Join(s.Home, "identity")); err == nil {
			t.Errorf("%s has an identity file", s.Name)
		}
		assertNoSecret(t, s.Home, seed)
	}
	if h := health(laptop); h.Certificate == "" {
		t.Error("laptop's /health presents no certificate")
	}

	writeN(t, home, 2, "before the theft")
	Eventually(t, syncTimeout, "convergence", func() bool { return converged(home, laptop, vps) })

	// The laptop is stolen: the thief has a full copy of its $CROW_HOME
	// and the invite it joined with.
	laptop.Stop()
	thief := cloneDaemon(t, laptop, "thief")
	laptopID := laptop.instanceID()
	home.MustCLI("instance", "revoke", laptopID)
	Eventually(t, syncTimeout, "vps to hear of the revocation", func() bool { return !lists(vps, laptopID) })

	// 2. The copy under the same id: gets nothing new, cannot register.
	thief.Start()
	writeN(t, home, 3, "postrevocationhome")
	writeN(t, vps, 3, "postrevocationvps")
	Eventually(t, syncTimeout, "home and vps to converge", func() bool { return converged(home, vps) })
	time.Sleep(3 * time.Second) // time enough for anything that would get through
	for _, q := range []string{"postrevocationhome", "postrevocationvps"} {
		page := Must(thief, app.MemorySearch, app.MemorySearchIn{Query: q})
		sec.check("a memory written ("+q+") after the revocation reaching the stolen copy", len(page.Results) == 0)
	}
	for _, d := range []*Daemon{home, vps} {
		_, err := Call(d, app.InstancesRegister, app.RegisterIn{GatewayURL: thief.URL()})
		sec.check("registering the stolen copy on "+d.Name, err != nil && (client.StatusOf(err) == 409 || client.StatusOf(err) == 403))
		_, errOut, cerr := d.CLI("instance", "add", thief.URL())
		sec.check("crow instance add of the stolen copy on "+d.Name, cerr != nil && strings.Contains(errOut, "revoked"))
	}
	// Its own `instance add` of home announces it: home refuses (the copy
	// registers home locally, which gets it nothing, and says so).
	out, errOut, err := thief.CLI("instance", "add", home.URL())
	sec.check("the stolen copy announcing itself to home", strings.Contains(out+errOut, "could not register this instance back") || err != nil && strings.Contains(errOut, "revoked"))
	// Its federation tokens are refused: a federated search hears from no one.
	res := Must(thief, app.MemorySearch, app.MemorySearchIn{Query: "theft", Instances: "all"})
	for _, st := range res.Instances {
		if st.ID != laptopID {
			sec.check("a federated search of the stolen copy answered by "+st.Name, st.Status != "ok")
		}
	}
	// Home and the vps hold no new entry of the laptop's feed.
	thiefLen := feedLengths(thief)[laptopID]
	writeN(t, thief, 2, "thiefwrote")
	time.Sleep(2 * time.Second)
	for _, d := range []*Daemon{home, vps} {
		sec.check("the thief's new entries reaching "+d.Name, feedLengths(d)[laptopID] <= thiefLen)
		page := Must(d, app.MemorySearch, app.MemorySearchIn{Query: "thiefwrote"})
		sec.check("the thief's memory applied on "+d.Name, len(page.Results) == 0)
	}
	thief.Stop()

	// 3. A fresh id on the stolen key: the certificate names the old id, so
	// the copy does not even load.
	fresh := cloneDaemon(t, thief, "thief-fresh-id")
	newID := "00000000-0000-4000-8000-000000000001"
	if err := os.WriteFile(filepath.Join(fresh.Home, "instance-id"), []byte(newID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = fresh.CLI("serve", "--listen", "127.0.0.1:0")
	sec.check("serving the stolen key under a fresh id", err != nil && strings.Contains(errOut, "corrupt"))
	pub := filepath.Join(fresh.Home, "identity.pub")
	b, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, bytes.ReplaceAll(b, []byte(laptopID), []byte(newID)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = fresh.CLI("serve", "--listen", "127.0.0.1:0")
	sec.check("serving the stolen key under a fresh id in identity.pub too", err != nil && strings.Contains(errOut, "certificate"))

	// 4. The used invite, again, in a fresh directory: refused, nothing left.
	reuse := newDaemon(t, "thief-reuse")
	_, errOut, err = reuse.CLI("init", "--name", "laptop", "--join", laptopInvite)
	sec.check("joining with the stolen, used invite", err != nil && strings.Contains(errOut, "already used"))
	assertNoDir(t, reuse.Home)
	// A forged invite (home's URL and key, a secret of the thief's own).
	inv, err := member.ParseInvite(laptopInvite, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	rand.Read(inv.Secret[:])
	inv.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Second)
	_, errOut, err = reuse.CLI("init", "--name", "laptop", "--join", inv.String())
	sec.check("joining with a forged invite", err != nil && strings.Contains(errOut, "not recognised"))
	assertNoDir(t, reuse.Home)

	// 5. Another crow's instance cannot join or be registered.
	stranger := NewDaemon(t, "stranger", nil)
	stranger.Start()
	_, errOut, err = home.CLI("instance", "add", stranger.URL())
	sec.check("registering an instance of another crow", err != nil && strings.Contains(errOut, "another identity"))
	strangerInvite := Invite(stranger, "x")
	_, errOut, err = reuse.CLI("init", "--name", "x", "--join", strangerInvite)
	if err != nil {
		t.Fatalf("joining the stranger's own crow must work: %s", errOut)
	}
	reuse.readKey()
	reuse.Start()
	Enrolled(t, stranger, reuse)
	_, errOut, err = home.CLI("instance", "add", reuse.URL())
	sec.check("registering a satellite certified by another crow", err != nil && strings.Contains(errOut, "another identity"))

	// 6. The expired invite: refused by the CLI (which reads its expiry)
	// and by home (a request made from it anyway).
	time.Sleep(time.Until(expiresAt) + time.Second)
	late := newDaemon(t, "late")
	_, errOut, err = late.CLI("init", "--name", "late", "--join", expiring)
	sec.check("joining with an expired invite", err != nil && strings.Contains(errOut, "expired"))
	assertNoDir(t, late.Home)
	expInv, err := member.ParseInvite(expiring, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	req, err := member.NewJoinRequest(expInv, newID, key, "late", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CallKey(home, "", app.InstancesJoin, app.JoinIn{Request: req})
	sec.check("home answering a join with an expired invite", client.StatusOf(err) == 403 && strings.Contains(err.Error(), "expired"))

	// The owner's machines still work together.
	writeN(t, vps, 1, "still fine")
	Eventually(t, syncTimeout, "home and vps to converge", func() bool { return converged(home, vps) })
	t.Logf("security figures: %d attacks made, %d refused", sec.attempts, sec.refused)
	if sec.attempts < 15 || sec.refused != sec.attempts {
		t.Fatalf("security: %d of %d attempts refused", sec.refused, sec.attempts)
	}
}

// readSeed reads home's master seed (in clear in its identity file).
func readSeed(t *testing.T, home *Daemon) identity.Seed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home.Home, "identity"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := identity.SeedFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	return seed
}

// assertNoSecret walks every file under dir (the database included) and
// fails if one holds the seed or a secret derived from it (root key, memory
// encryption key, project id key, anchoring key), raw or in hex.
func assertNoSecret(t *testing.T, dir string, seed identity.Seed) {
	t.Helper()
	mek, pik := seed.MemoryEncryptionKey(), seed.ProjectIDKey()
	secrets := map[string][]byte{
		"seed": seed[:], "root key": seed.RootKey().Seed(), "memory key": mek[:], "project id key": pik[:],
		"anchor key": seed.AnchorKey().D.Bytes(),
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		lower := bytes.ToLower(b)
		for name, s := range secrets {
			if bytes.Contains(b, s) || bytes.Contains(lower, []byte(hex.EncodeToString(s))) {
				t.Errorf("%s holds the %s", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("walked only %d files in %s", files, dir)
	}
}

// assertNoDir fails if a refused init left dir behind.
func assertNoDir(t *testing.T, dir string) {
	t.Helper()
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		t.Errorf("a refused join left %d files in %s", len(ents), dir)
	}
}

// cloneDaemon copies src's data directory (stopped) to a new daemon with
// ports of its own: a thief's full copy of a machine.
func cloneDaemon(t *testing.T, src *Daemon, name string) *Daemon {
	t.Helper()
	d := newDaemon(t, name)
	if out, err := exec.Command("cp", "-a", src.Home, d.Home).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", src.Home, err, out)
	}
	for _, f := range []string{"gateway.addr", "serve.lock"} {
		os.Remove(filepath.Join(d.Home, f))
	}
	d.readKey()
	return d
}
