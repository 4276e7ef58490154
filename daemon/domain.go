package daemon

import (
	"context"
	"crypto/ed25519"

	"github.com/crow-sync/crow/feed"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/registry"
)

// buildDomain is stage 2: the registry, memories, conflicts, projects.
func (d *Daemon) buildDomain() error {
	var err error
	cfg := registry.Config{
		Trust:    registry.Trust{CrowID: d.h.CrowID, RootPublicKey: d.h.RootPublicKey()},
		SelfID:   d.h.InstanceID,
		SelfKey:  d.h.InstanceKey(),
		SelfCert: d.cert,
		Table:    registry.StoreTable{DB: d.db, Writer: d.writer},
		// Revocations replicate in their own table: written once by home,
		// never changed, so no conflict can ever lose one.
		Revocations:  registry.StoreRevocations(d.db, d.writer),
		Observations: registry.StoreObservations{DB: d.db},
		MirrorPath:   d.h.InstancesFile(), Clock: d.clk, Logger: d.log,
		FeedForked: d.feedForked,
	}
	// Only home holds the root key (SPEC §2): it alone certifies (invites)
	// and revokes. A satellite made with --import holds the seed too, but
	// enrolls and revokes nothing until it is promoted.
	if d.h.Role == registry.RoleHome && d.h.HasSeed() {
		cfg.RootKey = d.h.Seed().RootKey()
		cfg.Invites = registry.StoreInvites{DB: d.db}
	}
	d.reg, err = registry.New(context.Background(), cfg)
	if err != nil {
		return err
	}
	// Home failover: the home records may have moved the role (role.go).
	if err := d.checkRole(); err != nil {
		return err
	}
	d.prober = registry.NewProber(d.reg, registry.ProberConfig{})
	d.mem = memory.NewService(d.db, d.writer, d.index, memory.Options{Clock: d.clk})
	d.conflicts = conflicts.NewStore(d.db, d.clk.Now)
	d.forks = conflicts.NewForkNotifier(d.conflicts, d.reg.DescribeKey, d.log)
	d.projects = projects.New(d.db, d.writer, d.h.Role == registry.RoleHome)
	return nil
}

// feedForked reports whether the feed of key forked here: the own feed
// (this copy was restored or cloned) or a peer's replica.
func (d *Daemon) feedForked(key ed25519.PublicKey) bool {
	var k feed.PublicKey
	if len(key) != len(k) {
		return false
	}
	copy(k[:], key)
	if k == d.own.Key() {
		return d.own.Forked() != nil
	}
	fe, err := d.reps.Fork(k)
	return err == nil && fe != nil
}
