package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/store"
)

// restDo sends one REST request with the owner key and returns status and body.
func restDo(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// A full disk: a memory create answers 507 with the JSON error (and an MCP tool error of kind
// insufficient_storage) and writes nothing, reads still answer 200, and writes resume once
// space returns.
func TestDiskFullRefusesWrites(t *testing.T) {
	var free atomic.Uint64
	free.Store(8 << 30)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	env := newGatewayEnvStore(t, store.Options{
		Clock: clk, MappedBudget: -1,
		Statfs: func(string) (uint64, uint64, error) { return free.Load(), 10 << 30, nil },
	})
	st, body := restDo(t, "POST", env.url+"/v1/memory", `{"content":"kept before the disk filled"}`)
	if st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, body)
	}
	var kept struct{ ID string }
	if err := json.Unmarshal(body, &kept); err != nil || kept.ID == "" {
		t.Fatalf("create answer %s: %v", body, err)
	}

	free.Store(100 << 20)
	clk.Advance(time.Second)
	st, body = restDo(t, "POST", env.url+"/v1/memory", `{"content":"refused on a full disk"}`)
	if st != http.StatusInsufficientStorage {
		t.Fatalf("create on a full disk: %d %s, want 507", st, body)
	}
	var e map[string]any
	if err := json.Unmarshal(body, &e); err != nil || len(e) != 1 {
		t.Fatalf(`507 body is not {"error": ...}: %s`, body)
	}
	if msg, _ := e["error"].(string); !strings.Contains(msg, "disk full") || !strings.Contains(msg, "100.0 MiB free") {
		t.Errorf("507 error %q does not say the disk is full and how much is free", msg)
	}
	res := call(t, owner(t, env.url+mcpPath), "crow_store_memory", map[string]any{"content": "refused over MCP"})
	if !res.IsError || res.Meta == nil || res.Meta.AdditionalFields[gateway.KindMetaKey] != "insufficient_storage" {
		t.Errorf("MCP store on a full disk: IsError %v, meta %+v, text %q", res.IsError, res.Meta, text(res))
	}

	// reads keep working, and nothing of the refused writes is there
	if st, body := restDo(t, "GET", env.url+"/v1/memory/"+kept.ID, ""); st != http.StatusOK {
		t.Fatalf("GET on a full disk: %d %s", st, body)
	}
	st, body = restDo(t, "GET", env.url+"/v1/memories/list", "")
	if st != http.StatusOK {
		t.Fatalf("list on a full disk: %d %s", st, body)
	}
	if strings.Contains(string(body), "refused") || !strings.Contains(string(body), kept.ID) {
		t.Errorf("list after refusals: %s", body)
	}

	free.Store(8 << 30)
	clk.Advance(time.Second)
	if st, body := restDo(t, "POST", env.url+"/v1/memory", `{"content":"space returned"}`); st != http.StatusCreated {
		t.Fatalf("create after space returned: %d %s", st, body)
	}
}
