package gateway

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
)

// fuzzDecode checks decodeJSON on arbitrary bodies for the REST body type T:
// it never panics, and a body it accepts yields a value that re-encodes, that
// decodeJSON accepts again, and that encodes to the same bytes the second
// time (the decoded value is a fixed point of decode∘encode).
func fuzzDecode[T any](f *testing.F, seeds ...string) {
	for _, s := range append(seeds, "", "{}", "null", "[]", `{"x":1}`, "{} {}", `{"a":`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decode := func(b []byte) (T, error) {
			var v T
			req := httptest.NewRequest("POST", "/", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			err := decodeJSON(httptest.NewRecorder(), req, &v)
			return v, err
		}
		v, err := decode(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("decodeJSON failed with an empty message")
			}
			return
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q but the value does not re-encode: %v", body, err)
		}
		v2, err := decode(enc)
		if err != nil {
			t.Fatalf("accepted %q, re-encoded as %s, which it refuses: %v", body, enc, err)
		}
		enc2, err := json.Marshal(v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("accepted %q: encodes as %s, then as %s (%v)", body, enc, enc2, err)
		}
	})
}

func FuzzDecodeMemoryCreate(f *testing.F) {
	fuzzDecode[memory.CreateInput](f,
		`{"content":"We chose badger","project":"crow","category":"decision","importance":8,"tags":["storage"]}`,
		`{"content":"x","importance":null,"tags":null}`, `{"content":"\u00e9\ud800"}`, `{"importance":"8"}`)
}

func FuzzDecodeMemoryPatch(f *testing.F) {
	fuzzDecode[memory.PatchInput](f,
		`{"content":"new text","tags":[]}`, `{"importance":3,"project":null}`, `{"tags":["a","b"],"category":"c"}`)
}

func FuzzDecodeRegister(f *testing.F) {
	fuzzDecode[registerRequest](f, `{"gateway_url":"http://100.64.0.2:3001"}`, `{"gateway_url":5}`)
}

func FuzzDecodeAnnounce(f *testing.F) {
	fuzzDecode[registry.Announcement](f,
		`{"instance_id":"a","gateway_url":"http://127.0.0.1:1","audience":"b","issued_at":1711000000,"signature":"00ff"}`,
		`{"issued_at":1e3}`, `{"issued_at":-9223372036854775808}`)
}

func FuzzDecodeTableRow(f *testing.F) {
	fuzzDecode[rowData](f, `{"title":"n","body":{"nested":[1,2.5e10,"<&>"]},"done":true}`, `{"a":null}`, `{"a":1,"a":2}`)
}
