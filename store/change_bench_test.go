package store

import (
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkChangeMarshal encodes the change record of a typical memory insert (a 256-byte
// memory's row): ChangeRecord.Marshal (appendChange) against encoding/json's
// reflection, which Marshal used before.
func BenchmarkChangeMarshal(b *testing.B) {
	data := json.RawMessage(`{"id":"01M9783G3663WT3XCGR8NSPZZ7","project":"proj-0","content":"memory 0: sync tailscale satellite chain ledger chain network lamport conflict conflict decision design laptop vector laptop chain server review conflict review anchor lamport network index tailscale policy latency sync replica decision replica storage syn","content_hash":"d7bebf0d47141e678e08479a3896d40bd14e45da914ccdbd2bf53d8e502c9511","category":"general","importance":1,"tags":["t0"],"source":"api","origin":"a916f13d-adc8-4fe2-8bce-c8892114559f","created_at":"2026-12-07T03:17:35.974Z","updated_at":"2026-12-07T03:17:35.974Z"}`)
	r := &Row{RowID: "01M9783G3663WT3XCGR8NSPZZ7", Table: TableMemories, Data: data, LamportTS: 3,
		InstanceID: "a916f13d-adc8-4fe2-8bce-c8892114559f", VV: VV{"a916f13d-adc8-4fe2-8bce-c8892114559f": 1},
		UpdatedAt: time.Date(2026, 12, 7, 3, 17, 35, 0, time.UTC)}
	c := changeFor(r, OpInsert)
	b.Run("appendChange", func(b *testing.B) {
		for range b.N {
			if _, err := c.Marshal(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
