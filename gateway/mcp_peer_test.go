package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/memory"
)

// A peer instance reaches /mcp with a federation token instead of the owner
// key: the token is checked by Config.VerifyPeerToken, and the peer may call
// only the tools Config.PeerAllowed admits; a refused token is a 401 that
// says why. The owner key still works as before.
func TestMCPPeerTokenAndAllowList(t *testing.T) {
	senv := newGatewayEnv(t) // for its memory service
	var verified []string
	env := startGateway(t, senv.mem, nil, nil, func(_ *app.Deps, c *gateway.Config) {
		c.VerifyPeerToken = func(tok string) (string, error) {
			verified = append(verified, tok)
			if tok == "crowtok1.good" {
				return "sat-1", nil
			}
			return "", errors.New("signature does not verify")
		}
		c.PeerAllowed = func(tool string) bool { return tool == "crow_search_memories" }
	})
	if _, err := senv.mem.Add(context.Background(), memory.CreateInput{Content: "federated badger"}); err != nil {
		t.Fatal(err)
	}
	peer, err := dial(t, env.url+mcpPath, map[string]string{"Authorization": "Bearer crowtok1.good"})
	if err != nil {
		t.Fatalf("a peer with a valid token cannot connect: %v", err)
	}
	res := ok(t, peer, "crow_search_memories", map[string]any{"query": "badger"})
	if rs, _ := res["results"].([]any); len(rs) != 1 {
		t.Fatalf("peer search = %v", res)
	}
	toolErr(t, peer, "crow_store_memory", map[string]any{"content": "x"}, "not allowed for federated calls", "sat-1")
	toolErr(t, peer, "crow_delete_memory", map[string]any{"id": "x"}, "not allowed")

	if code, body := rawPost(t, env.url+mcpPath, map[string]string{"Authorization": "Bearer crowtok1.forged"}); code != http.StatusUnauthorized ||
		!strings.Contains(body, "federation token refused: signature does not verify") {
		t.Fatalf("forged token: %d %s", code, body)
	}
	// The router and REST take the owner key only: a peer token is a wrong key there.
	if code, _ := rawPost(t, env.url+rtrPath, map[string]string{"Authorization": "Bearer crowtok1.good"}); code != http.StatusUnauthorized {
		t.Fatalf("peer token on the router: %d", code)
	}
	// The owner is not limited by the allow-list.
	ok(t, owner(t, env.url+mcpPath), "crow_store_memory", map[string]any{"content": "owner writes"})
	for _, tok := range verified {
		if !strings.HasPrefix(tok, federation.TokenPrefix) {
			t.Fatalf("VerifyPeerToken saw %q, which is not a peer token", tok)
		}
	}
}
