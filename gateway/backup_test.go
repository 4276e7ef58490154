package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/store"
)

// backup.snapshot streams the store over REST (owner only, no-store): what
// client.Stream reads loads into a new store with the rows written before.
func TestBackupSnapshotStreams(t *testing.T) {
	env := newGatewayEnv(t)
	for _, c := range []string{`{"content":"first"}`, `{"content":"second"}`} {
		if st, body := restDo(t, "POST", env.url+"/v1/memory", c); st != http.StatusCreated {
			t.Fatalf("create: %d %s", st, body)
		}
	}
	resp, err := http.Get(env.url + "/v1/backup")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the key: %d", resp.StatusCode)
	}

	body, err := client.Stream(context.Background(), client.New(env.url, testKey), app.BackupSnapshot, app.NoInput{})
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if _, err := snap.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	body.Close()
	to, err := store.Open(t.TempDir(), store.Options{MinFree: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()
	if _, err := to.LoadSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	rows, _, err := to.List(store.TableMemories, store.ListOptions{Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("restored %d memories (%v), want 2", len(rows), err)
	}

	req, _ := http.NewRequest("GET", env.url+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != app.BackupSnapshotType {
		t.Fatalf("headers %v", resp.Header)
	}
	if app.BackupSnapshot.Tool != "" {
		t.Fatal("a streamed answer cannot be an MCP tool")
	}
}
