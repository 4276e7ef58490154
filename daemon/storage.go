package daemon

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/reenroll"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/feeds"
)

// buildStorage is stage 1: the serve lock, the store, the feeds on it, the
// local write path and the search index.
func (d *Daemon) buildStorage(inMemory bool) error {
	t := time.Now()
	var took []any // each step's time, logged at debug (a slow start-up says where it went)
	step := func(name string) {
		took = append(took, name, time.Since(t))
		t = time.Now()
	}
	defer func() { d.log.Debug("storage opened", took...) }()
	unlock, err := d.h.Lock()
	if err != nil {
		return err
	}
	d.onClose("home lock", unlock)
	d.metrics = prometheus.NewRegistry()
	d.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	minFree := d.cfg.Settings.MinFreeMB << 20 // 0: store's default; negative: no guard
	step("lock")
	// The search index opens beside the store (neither reads the other
	// until the indexer runs): a start waits for the longer of the two.
	type opened struct {
		index *search.Index
		err   error
	}
	indexOpened := make(chan opened, 1)
	go func() {
		began := time.Now()
		x, err := search.Open(d.h.IndexDir(), d.log)
		d.log.Debug("search index opened", "took", time.Since(began))
		indexOpened <- opened{x, err}
	}()
	indexTaken := false
	defer func() { // the build failed before it took the index: close it
		if !indexTaken {
			if o := <-indexOpened; o.err == nil {
				o.index.Close()
			}
		}
	}()
	d.db, err = store.Open(d.h.DBDir(), store.Options{Logger: d.log.With("component", "badger"), Clock: d.clk, InMemory: inMemory, MinFree: minFree})
	if err != nil {
		return fmt.Errorf("opening store: %w", err)
	}
	d.onClose("store", func() error {
		if err := d.db.Close(); err != nil {
			return fmt.Errorf("closing store: %w", err)
		}
		return nil
	})
	d.metrics.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "crow_store_free_bytes",
			Help: "Free bytes on the filesystem of the store, as the free-space guard last read them (-1: unknown)."},
			func() float64 {
				if free, ok := d.db.FreeSpace(); ok {
					return float64(free)
				}
				return -1
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_store_refused_writes_total",
			Help: "Writes the free-space guard refused (local writes and apply batches) because the disk was too full."},
			func() float64 { return float64(d.db.RefusedWrites()) }),
	)
	step("store")
	// Feeds: our own log and the verified replicas of everyone else's.
	feedStore := feed.NewKVStorage(d.db)
	if d.own, err = feed.OpenLog(feedStore, d.h.InstanceKey()); err != nil {
		return err
	}
	d.reps = feed.OpenReplicas(feedStore, d.own.Key())
	// The local write path appends to our feed in the row's transaction;
	// each commit raises the signal the sync node announces new heads on.
	d.changes = feeds.NewChanges()
	// While the own feed is forked (a restored or cloned copy) every local
	// write is refused with the cause and the fix (package reenroll).
	d.writer, err = store.NewWriter(d.db, store.WriterOptions{InstanceID: d.h.InstanceID, Journal: d.changes.Journal(d.own), Logger: d.log,
		Gate: func() error { return reenroll.Refusal(d.h.InstanceID, d.own) }})
	if err != nil {
		return err
	}
	step("feeds")
	o := <-indexOpened
	indexTaken = true
	if o.err != nil {
		return fmt.Errorf("opening search index: %w", o.err)
	}
	d.index = o.index
	d.onClose("search index", d.index.Close)
	step("index wait")
	d.indexer = search.NewIndexer(d.db, d.index)
	d.indexer.Foreground = d.quiet
	d.indexer.Clock = d.clk
	// A full disk pauses indexing before bleve writes (the index catches up after).
	d.indexer.SpaceCheck = d.db.CheckSpace
	return nil
}
