package app

import (
	"net/url"
	"testing"
)

// BenchmarkBindRESTMemoryCreate binds the body of POST /v1/memory as
// crowbench sends it (256 bytes of content, a project, two tags, an
// importance): the gateway's share of a single-memory write.
func BenchmarkBindRESTMemoryCreate(b *testing.B) {
	body := []byte(`{"content":"memory 12345: sync badger feed merkle replica home satellite memory vector lamport conflict index search project anchor chain noise yamux ledger policy deploy review design storage latency network tailscale laptop server decision sync badger feed merkle","importance":6,"project":"proj-5","tags":["t2","t11"]}`)
	in := MemoryCreate.Input()
	r := REST{Method: "POST", Path: "/v1/memory", Value: func(string) string { return "" }, Query: url.Values{}, Body: body}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := in.BindREST(r); err != nil {
			b.Fatal(err)
		}
	}
}
