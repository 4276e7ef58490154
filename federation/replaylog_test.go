package federation

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
)

// A PersistentVerifier refuses after a restart (a new verifier on the same
// log) the tokens accepted before it, while they live; the log drops the
// expired ones when it opens and a record cut short by a crash.
func TestPersistentVerifierRefusesReplayAcrossRestart(t *testing.T) {
	home, laptop := testKey("home"), testKey("laptop")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home, "laptop": laptop})
	clk := clock.NewFake(t0)
	src := NewTokenSource("home", home, clk)
	path := filepath.Join(t.TempDir(), "federation-tokens.log")

	verify, log, err := PersistentVerifier("laptop", clk, keys.keyOf, path)
	if err != nil {
		t.Fatal(err)
	}
	tok1, _ := src.Token("laptop")
	if _, err := verify(tok1); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(4 * time.Minute))
	tok2, _ := src.Token("laptop")
	if _, err := verify(tok2); err != nil {
		t.Fatal(err)
	}
	log.Close()
	// A crash mid-write leaves a partial record at the end.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{4, 'h', 'o'})
	f.Close()

	// The restart, at +5 min: both tokens are still valid, and refused.
	clk.Set(t0.Add(5 * time.Minute))
	verify, log, err = PersistentVerifier("laptop", clk, keys.keyOf, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range []string{tok1, tok2} {
		if _, err := verify(tok); !errors.Is(err, ErrReplayed) {
			t.Fatalf("token %d after the restart: %v, want ErrReplayed", i+1, err)
		}
	}
	fresh, _ := src.Token("laptop")
	if _, err := verify(fresh); err != nil {
		t.Fatalf("a fresh token after the restart: %v", err)
	}
	log.Close()

	// Later, tok1 can no longer verify: the log forgets it at open.
	clk.Set(t0.Add(6 * time.Minute))
	_, live, err := OpenReplayLog(path, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 { // tok2 and fresh
		t.Fatalf("%d live entries at +6 min, want 2", len(live))
	}
	// A verifier without the log (Verifier) would have accepted tok2 again.
	if _, err := Verifier("laptop", clk, keys.keyOf)(tok2); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// The log is rewritten with the live entries once it holds
// replayLogCompact records: it does not grow without bound, and what it
// keeps still refuses the live tokens after a restart.
func TestReplayLogCompacts(t *testing.T) {
	defer func(n int) { replayLogCompact = n }(replayLogCompact)
	replayLogCompact = 4
	home, laptop := testKey("home"), testKey("laptop")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home, "laptop": laptop})
	clk := clock.NewFake(t0)
	src := NewTokenSource("home", home, clk)
	path := filepath.Join(t.TempDir(), "federation-tokens.log")
	verify, log, err := PersistentVerifier("laptop", clk, keys.keyOf, path)
	if err != nil {
		t.Fatal(err)
	}
	var toks []string
	for i := range 10 {
		clk.Set(t0.Add(time.Duration(i) * time.Minute)) // tokens of the first minutes expire
		tok, _ := src.Token("laptop")
		if _, err := verify(tok); err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	log.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Live at +9 min: the tokens of +4 .. +9 (expiry + skew after now).
	if n := st.Size() / int64(1+len("home")+nonceLen+8); n > 8 {
		t.Fatalf("the log holds %d records after 10 tokens with compaction at 4", n)
	}
	verify, log, err = PersistentVerifier("laptop", clk, keys.keyOf, path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := 5; i < 10; i++ {
		if _, err := verify(toks[i]); !errors.Is(err, ErrReplayed) {
			t.Fatalf("live token %d after compaction and restart: %v", i, err)
		}
	}
}
