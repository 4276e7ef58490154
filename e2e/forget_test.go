package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// eraseTimeout bounds how long an instance may take, once the forget has
// reached it, to erase a forgotten memory from every file of its $CROW_HOME.
const eraseTimeout = 60 * time.Second

// forgetAnswer is the answer of POST /v1/memory/{id}/forget and of
// `crow memory forget ID --json`.
type forgetAnswer struct {
	ID          string   `json:"id"`
	Numbers     []uint64 `json:"numbers"`
	ForgottenAt string   `json:"forgotten_at"`
}

// pin returns a string no other test writes: "zq-pin-" and 16 random hex
// digits.
func pin(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "zq-pin-" + hex.EncodeToString(b[:])
}

// needles are what a byte scan looks for: each pin raw, in lowercase hex,
// and its random part alone (what a tokenizer that splits at "-" keeps).
func needles(pins ...string) map[string][]byte {
	out := map[string][]byte{}
	for _, p := range pins {
		out[p] = []byte(p)
		out["hex of "+p] = []byte(hex.EncodeToString([]byte(p)))
		r := strings.TrimPrefix(p, "zq-pin-")
		out["random part "+r] = []byte(r)
	}
	return out
}

// scanFiles reads every regular file under dir (the store, the search index,
// the chain, everything) and returns "file: what" for each needle found. A
// file removed during the walk (a compaction) is skipped.
func scanFiles(t *testing.T, dir string, find map[string][]byte) (hits []string, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files++
		lower := bytes.ToLower(b)
		for what, n := range find {
			if bytes.Contains(b, n) || bytes.Contains(lower, n) {
				rel, _ := filepath.Rel(dir, path)
				hits = append(hits, rel+": "+what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scanning %s: %v", dir, err)
	}
	slices.Sort(hits)
	return hits, files
}

// erased waits until no file of any of ds's $CROW_HOME holds a needle and
// returns, by name, how long each took from since (each is scanned until it
// is clean, all in the same rounds).
func erased(t *testing.T, ds []*Daemon, find map[string][]byte, since time.Time) map[string]time.Duration {
	t.Helper()
	took := map[string]time.Duration{}
	deadline := time.Now().Add(eraseTimeout)
	for {
		var dirty []string
		for _, d := range ds {
			if _, done := took[d.Name]; done {
				continue
			}
			hits, files := scanFiles(t, d.Home, find)
			if files < 5 {
				t.Fatalf("%s: scanned only %d files", d.Name, files)
			}
			if len(hits) == 0 {
				took[d.Name] = time.Since(since)
				continue
			}
			dirty = append(dirty, d.Name+":\n  "+strings.Join(hits, "\n  "))
		}
		if len(dirty) == 0 {
			return took
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the forget reached them, files still hold the forgotten content:\n%s",
				eraseTimeout, strings.Join(dirty, "\n"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// version reads memory number n on d.
func version(d *Daemon, n uint64) (memory.Memory, error) {
	return Call(d, app.MemoryGet, app.MemoryID{ID: strconv.FormatUint(n, 10)})
}

// forgottenVersion reports whether d serves number n as forgotten: a
// forgotten_at marker and no content.
func forgottenVersion(d *Daemon, n uint64) bool {
	m, err := version(d, n)
	return err == nil && m.ForgottenAt != "" && m.Content == ""
}

// searchFinds reports whether a search of d for q finds memory id.
func searchFinds(d *Daemon, q, id string) bool {
	res, err := Call(d, app.MemorySearch, app.MemorySearchIn{Query: q})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(res.Results, func(r federation.MemoryHit) bool { return r.ID == id })
}

// TestForgetErasesEverywhere is issue 11 on three real daemons and a late
// fourth: a memory written on home and edited on the laptop (two numbered
// versions, each with a unique string) is forgotten on the laptop while the
// vps is offline. Home and the laptop erase both strings from every file of
// their $CROW_HOME, the vps once it is back, and a satellite enrolled
// afterwards never holds them; every instance serves both numbers with
// forgotten_at and no content, search finds nothing, home's proofs say
// content_forgotten with the event hashes still recomputing, and crow audit
// passes before and after. The time each instance took is logged for
// docs/RELIABILITY.md.
func TestForgetErasesEverywhere(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	laptop, vps := sats[0], sats[1]
	all := []*Daemon{home, laptop, vps}
	first, second := pin(t), pin(t)
	find := needles(first, second)

	// Version 1 on home, numbered; version 2 on the laptop, numbered.
	m := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: "the forget probe " + first, Project: "forget"})
	var n1, n2 uint64
	Eventually(t, syncTimeout, "home to number version 1 and the laptop to hold it", func() bool {
		got, err := Call(home, app.MemoryGet, app.MemoryID{ID: m.ID})
		if err != nil || got.Number == nil {
			return false
		}
		n1 = *got.Number
		_, err = Call(laptop, app.MemoryGet, app.MemoryID{ID: m.ID})
		return err == nil
	})
	Must(laptop, app.MemoryUpdate, app.MemoryUpdateIn{ID: m.ID, Content: ptr("edited on the laptop " + second)})
	Eventually(t, syncTimeout, "home to number version 2", func() bool {
		got, err := Call(home, app.MemoryGet, app.MemoryID{ID: m.ID})
		if err != nil || got.Number == nil || *got.Number == n1 || !strings.Contains(got.Content, second) {
			return false
		}
		n2 = *got.Number
		return true
	})
	Eventually(t, syncTimeout, "every instance to hold both versions and find the edit", func() bool {
		for _, d := range all {
			v1, err1 := version(d, n1)
			v2, err2 := version(d, n2)
			if err1 != nil || err2 != nil || !strings.Contains(v1.Content, first) || !strings.Contains(v2.Content, second) ||
				!searchFinds(d, second, m.ID) {
				return false
			}
		}
		return converged(all...)
	})
	Eventually(t, 2*syncTimeout, "both versions anchored and verified on home", func() bool {
		for _, n := range []uint64{n1, n2} {
			p, err := Call(home, app.MemoryProof, app.MemoryNumber{Number: n})
			if err != nil || p.Status != anchor.StatusVerified {
				return false
			}
		}
		return true
	})
	home.MustCLI("audit")

	// The scan can fail: before the forget the strings are there.
	for _, d := range all {
		hits, files := scanFiles(t, d.Home, find)
		t.Logf("before the forget, %s: %d of %d files hold the strings: %v", d.Name, len(hits), files, hits)
		if d == home && len(hits) == 0 {
			t.Fatalf("home's files do not hold the memory's strings before the forget: the scan proves nothing")
		}
	}

	// The vps is offline; the laptop forgets.
	vps.Stop()
	began := time.Now()
	out := laptop.MustCLI("memory", "forget", m.ID, "--json")
	var ans forgetAnswer
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatalf("crow memory forget %s --json printed %q: %v", m.ID, out, err)
	}
	slices.Sort(ans.Numbers)
	if ans.ID != m.ID || !slices.Equal(ans.Numbers, []uint64{n1, n2}) {
		t.Fatalf("forget answered %+v, want id %s and numbers [%d %d]", ans, m.ID, n1, n2)
	}
	if _, err := time.Parse(time.RFC3339, ans.ForgottenAt); err != nil {
		t.Fatalf("forgotten_at %q: %v", ans.ForgottenAt, err)
	}
	// Idempotent: again (the readable form is one line), and over REST.
	if again := strings.TrimSpace(laptop.MustCLI("memory", "forget", strconv.FormatUint(n2, 10))); again == "" || strings.Contains(again, "\n") {
		t.Fatalf("crow memory forget %d printed %q, want one line", n2, again)
	}
	if st, e := laptop.RawJSON(laptop.Key, "POST", "/v1/memory/"+m.ID+"/forget", ""); st != http.StatusOK {
		t.Fatalf("forgetting again: %d %v, want 200", st, e)
	}
	if st, e := laptop.RawJSON(laptop.Key, "POST", "/v1/memory/01J00000000000000000000000/forget", ""); st != http.StatusNotFound || e == nil || e.Msg == "" {
		t.Fatalf("forgetting an unknown memory: %d %v, want 404 with an error", st, e)
	}

	took := erased(t, []*Daemon{laptop, home}, find, began)
	for name, d := range took {
		t.Logf("forget: %s erased both versions from every file %v after the forget on the laptop", name, d.Round(time.Millisecond))
	}
	for _, d := range []*Daemon{home, laptop} {
		checkForgotten(t, d, m.ID, n1, n2, second)
	}

	// The vps comes back and forgets too.
	vps.Start()
	back := time.Now()
	took["vps (from its restart)"] = erased(t, []*Daemon{vps}, find, back)["vps"]
	t.Logf("forget: vps erased both versions from every file %v after its restart (%v after the forget)",
		took["vps (from its restart)"].Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	Eventually(t, syncTimeout, "the vps to serve both versions as forgotten", func() bool {
		return forgottenVersion(vps, n1) && forgottenVersion(vps, n2)
	})
	checkForgotten(t, vps, m.ID, n1, n2, second)

	// The numbers still verify: the event hashes recompute, the content is
	// unreadable on chain.
	for _, n := range []uint64{n1, n2} {
		p := Must(home, app.MemoryProof, app.MemoryNumber{Number: n})
		if p.Status != anchor.StatusContentForgotten || !p.Event.Match || p.Event.Recomputed != p.Event.EventHash {
			t.Errorf("proof of #%d after the forget: status %q, event %+v; want content_forgotten with the event hash recomputed", n, p.Status, p.Event)
		}
	}
	home.MustCLI("audit")

	// A satellite enrolled afterwards takes every feed and never the content.
	late := NewDaemon(t, "late", home)
	late.Start()
	Enrolled(t, home, late)
	// Scanned all along its catch-up, not only at the end: it never holds them.
	var lateHits []string
	Eventually(t, 2*syncTimeout, "the late satellite to converge with all three", func() bool {
		if hits, _ := scanFiles(t, late.Home, find); len(hits) > 0 && lateHits == nil {
			lateHits = hits
		}
		return converged(home, laptop, vps, late) && forgottenVersion(late, n1) && forgottenVersion(late, n2)
	})
	if hits, files := scanFiles(t, late.Home, find); len(hits) > 0 || lateHits != nil {
		t.Errorf("the late satellite's files held the forgotten content during its catch-up:\n  %s\nand hold now (%d files scanned):\n  %s",
			strings.Join(lateHits, "\n  "), files, strings.Join(hits, "\n  "))
	}
	checkForgotten(t, late, m.ID, n1, n2, second)
	t.Logf("forget: time to erased per instance: %v", took)
}

// checkForgotten checks what d serves of the forgotten memory: by id a 404
// that says it was forgotten, by number both versions with forgotten_at and
// no content, and no search hit.
func checkForgotten(t *testing.T, d *Daemon, id string, n1, n2 uint64, q string) {
	t.Helper()
	if st, e := d.RawJSON(d.Key, "GET", "/v1/memory/"+id, ""); st != http.StatusNotFound || e == nil || !strings.Contains(strings.ToLower(e.Msg), "forgot") {
		t.Errorf("%s: GET /v1/memory/%s after the forget: %d %v, want 404 saying it was forgotten", d.Name, id, st, e)
	}
	for _, n := range []uint64{n1, n2} {
		v, err := version(d, n)
		if err != nil || v.ForgottenAt == "" || v.Content != "" || v.ID != id {
			t.Errorf("%s: GET /v1/memory/%d after the forget: %+v %v, want forgotten_at, no content", d.Name, n, v, err)
		}
	}
	if searchFinds(d, q, id) {
		t.Errorf("%s: a search still finds the forgotten memory", d.Name)
	}
}
