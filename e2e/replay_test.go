package e2e

import (
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-sync/crow/federation"
)

// A federation token is good for one request, also across a crash of the
// instance that accepted it: home is killed with SIGKILL and restarted, and
// the satellite's token it accepted before is still refused as a replay
// (the replay cache is kept in $CROW_HOME/federation-tokens.log).
func TestFederationTokenReplayRefusedAfterRestart(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	s := NewDaemon(t, "laptop", home)
	s.Start()
	Enrolled(t, home, s)

	text, err := os.ReadFile(filepath.Join(s.Home, "instance.key"))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("instance.key: %v", err)
	}
	tok, err := federation.NewTokenSource(s.instanceID(), ed25519.NewKeyFromSeed(seed), nil).Token(home.instanceID())
	if err != nil {
		t.Fatal(err)
	}
	// /mcp is where peers are admitted; whatever the MCP answer, a token
	// that passes is not answered 401.
	const path, body = "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"replay-test","version":"1"}}}`
	if code, e := home.RawJSON(tok, "POST", path, body); code == 401 {
		t.Fatalf("the satellite's token, first use: %d %+v", code, e)
	}
	if code, e := home.RawJSON(tok, "POST", path, body); code != 401 || e == nil || !strings.Contains(e.Msg, "replay") {
		t.Fatalf("the same token again: %d %+v", code, e)
	}
	home.Kill()
	home.Start()
	if code, e := home.RawJSON(tok, "POST", path, body); code != 401 || e == nil || !strings.Contains(e.Msg, "replay") {
		t.Fatalf("the same token after kill -9 and a restart of home: %d %+v", code, e)
	}
	fresh, _ := federation.NewTokenSource(s.instanceID(), ed25519.NewKeyFromSeed(seed), nil).Token(home.instanceID())
	if code, e := home.RawJSON(fresh, "POST", path, body); code == 401 {
		t.Fatalf("a fresh token after the restart: %d %+v", code, e)
	}
}
