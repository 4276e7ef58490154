package daemon

import (
	"context"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/registry"
)

// buildDomain is stage 2: the registry, memories, conflicts, projects.
func (d *Daemon) buildDomain() error {
	var err error
	d.reg, err = registry.New(context.Background(), registry.Config{
		Seed: d.h.Seed(), SelfID: d.h.InstanceID,
		Table:        registry.StoreTable{DB: d.db, Writer: d.writer},
		Observations: registry.StoreObservations{DB: d.db},
		MirrorPath:   d.h.InstancesFile(), Clock: d.clk, Logger: d.log,
	})
	if err != nil {
		return err
	}
	d.prober = registry.NewProber(d.reg, registry.ProberConfig{})
	d.mem = memory.NewService(d.db, d.writer, d.index, memory.Options{Clock: d.clk})
	d.conflicts = conflicts.NewStore(d.db, d.clk.Now)
	d.forks = conflicts.NewForkNotifier(d.conflicts, d.reg.DescribeKey, d.log)
	d.projects = projects.New(d.db, d.writer, d.h.Role == registry.RoleHome)
	return nil
}
