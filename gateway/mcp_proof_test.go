package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/memory"
)

// memory.proof over REST and MCP on a home gateway with an embedded chain:
// a memory numbered by the Numberer and anchored by the worker proves
// verified on both surfaces, with the same answer; an unknown number is
// 404 (a tool error on MCP), a number that is not one is refused.
func TestMemoryProofRESTAndMCP(t *testing.T) {
	seed := testSeed()
	chain, err := anchor.OpenEmbedded(t.TempDir(), seed.AnchorKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chain.Close() })
	env := newGatewayEnv(t, func(d *app.Deps, _ *gateway.Config) {
		d.Prover = anchor.Prover{DB: d.DB, Versions: anchor.TableVersions{DB: d.DB}, Chain: chain, Seed: &seed}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- memory.NewNumberer(env.db, env.writer, slog.New(slog.DiscardHandler)).Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	m, err := env.mem.Add(ctx, memory.CreateInput{Content: "we chose badger", Project: "crow"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if got, _ := env.mem.Get(ctx, m.ID); got.Number != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never numbered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w := anchor.NewWorker(anchor.WorkerConfig{DB: env.db, Writer: env.writer, Chain: chain, Seed: seed, Interval: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}

	rest := restGet(t, env.url+"/v1/memory/1/proof")
	content, _ := rest["content"].(map[string]any)
	if rest["status"] != anchor.StatusVerified || rest["memory_id"] != m.ID || content["decrypted_content"] != "we chose badger" {
		t.Fatalf("REST proof = %v", rest)
	}
	c := owner(t, env.url+mcpPath)
	sc := newSchemaChecker(t, c)
	res := ok(t, c, "crow_memory_proof", map[string]any{"number": 1})
	sc.check(t, "crow_memory_proof", res)
	if !jsonEqual(res, rest) {
		t.Fatalf("MCP and REST differ:\n%v\n%v", res, rest)
	}
	toolErr(t, c, "crow_memory_proof", map[string]any{"number": 9}, "no memory has number 9")
	toolErr(t, c, "crow_memory_proof", map[string]any{}, "number is required")
	for path, want := range map[string]int{"/v1/memory/9/proof": 404, "/v1/memory/x1/proof": 400, "/v1/memory/0/proof": 400} {
		req, _ := http.NewRequest("GET", env.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("GET %s: %v %v, want %d", path, resp, err, want)
		}
		resp.Body.Close()
	}
	// Owner only: no key, no proof.
	if resp, err := http.Get(env.url + "/v1/memory/1/proof"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("without a key: %v %v", resp, err)
	}
}
