package registry_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

// racingTable lets a replicated row land between the registry's read and its
// insert, once.
type racingTable struct {
	*registrytest.MemTable
	once sync.Once
	row  json.RawMessage
}

func (t *racingTable) Put(ctx context.Context, id string, insert bool, data json.RawMessage) error {
	if insert {
		t.once.Do(func() { t.MemTable.Set(id, t.row) })
	}
	return t.MemTable.Put(ctx, id, insert, data)
}

func TestInsertRacesReplication(t *testing.T) {
	ctx := context.Background()
	// The row as another machine registered it an hour earlier.
	src := newEnv(t, "home-1", registry.RoleHome)
	h, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := src.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	replicated, _ := src.table.Get(ctx, "sat-1")
	h.Update(func(d *registry.HealthDoc) { d.Name = "renamed" })

	e := newEnv(t, "home-1", "")
	e.clock.Advance(3600e9)
	rt := &racingTable{MemTable: e.table, row: replicated}
	cfg := e.config("home-1")
	cfg.Table, cfg.Observations, cfg.MirrorPath = rt, nil, ""
	reg, err := registry.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	in, err := reg.Register(ctx, url)
	if err != nil {
		t.Fatalf("Register racing a replicated insert: %v", err)
	}
	if in.Name != "renamed" || in.CreatedAt != "2026-11-29T21:00:00Z" {
		t.Errorf("view = %+v, want the update on top of the replicated row (its created_at)", in)
	}
}

func TestConcurrentRegister(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	var urls []string
	for _, id := range []string{"sat-1", "sat-2", "sat-3"} {
		_, u := peer(t, ourSeed, id, registry.RoleSatellite)
		urls = append(urls, u)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			if _, err := e.reg.Register(ctx, urls[i%3]); err != nil {
				t.Errorf("Register: %v", err)
			}
			e.reg.List()
			e.reg.IsAdmitted("sat-1")
		})
	}
	p := registry.NewProber(e.reg, registry.ProberConfig{})
	wg.Go(func() { p.ProbeOnce(ctx) })
	wg.Wait()
	if got := e.table.Puts(); got != 1+3 { // self + one insert each
		t.Errorf("puts = %d, want 4", got)
	}
	for _, id := range []string{"sat-1", "sat-2", "sat-3"} {
		if !e.reg.IsAdmitted(id) {
			t.Errorf("%s not admitted", id)
		}
	}
}
