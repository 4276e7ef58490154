package gateway

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/crow-sync/crow/app"
)

// fuzzDecode checks how REST binds arbitrary bodies of operation op (the
// path wildcards bound to "x1"): it never panics, and a body it accepts
// yields an input that app.Input.EncodeREST encodes back to a body, which is
// accepted again and encodes to the same bytes the second time (the bound
// value is a fixed point of bind∘encode).
func fuzzDecode(f *testing.F, op app.Op, seeds ...string) {
	for _, s := range append(seeds, "", "{}", "null", "[]", `{"x":1}`, "{} {}", `{"a":`) {
		f.Add([]byte(s))
	}
	sp := op.Info()
	info := op.Input()
	f.Fuzz(func(t *testing.T, body []byte) {
		bind := func(b []byte) (reflect.Value, error) {
			return info.BindREST(app.REST{Method: sp.Method, Path: concretePath(sp.Path),
				Value: func(string) string { return "x1" }, Body: b})
		}
		encode := func(v reflect.Value) []byte {
			t.Helper()
			_, _, b, err := info.EncodeREST(sp.Path, v.Interface())
			if err != nil {
				t.Fatalf("accepted %q but the value does not re-encode: %v", body, err)
			}
			return b
		}
		v, err := bind(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("binding failed with an empty message")
			}
			if k := app.KindOf(nil, err); k != app.KindInvalid {
				t.Fatalf("binding %q failed with kind %v, want invalid: %v", body, k, err)
			}
			return
		}
		enc := encode(v)
		v2, err := bind(enc)
		if err != nil {
			t.Fatalf("accepted %q, re-encoded as %s, which it refuses: %v", body, enc, err)
		}
		if enc2 := encode(v2); !bytes.Equal(enc, enc2) {
			t.Fatalf("accepted %q: encodes as %s, then as %s", body, enc, enc2)
		}
	})
}

func FuzzDecodeMemoryCreate(f *testing.F) {
	fuzzDecode(f, app.MemoryCreate,
		`{"content":"We chose badger","project":"crow","category":"decision","importance":8,"tags":["storage"]}`,
		`{"content":"x","importance":null,"tags":null}`, `{"content":"\u00e9\ud800"}`, `{"importance":"8"}`)
}

func FuzzDecodeMemoryPatch(f *testing.F) {
	fuzzDecode(f, app.MemoryUpdate,
		`{"content":"new text","tags":[]}`, `{"importance":3,"project":null}`, `{"tags":["a","b"],"category":"c"}`,
		`{"id":"elsewhere"}`)
}

func FuzzDecodeRegister(f *testing.F) {
	fuzzDecode(f, app.InstancesRegister, `{"gateway_url":"http://100.64.0.2:3001"}`, `{"gateway_url":5}`)
}

func FuzzDecodeAnnounce(f *testing.F) {
	fuzzDecode(f, app.InstancesAnnounce,
		`{"instance_id":"a","gateway_url":"http://127.0.0.1:1","audience":"b","issued_at":1711000000,"signature":"00ff"}`,
		`{"issued_at":1e3}`, `{"issued_at":-9223372036854775808}`)
}

func FuzzDecodeTableRow(f *testing.F) {
	fuzzDecode(f, app.TablesPut, `{"title":"n","body":{"nested":[1,2.5e10,"<&>"]},"done":true}`, `{"a":null}`, `{"a":1,"a":2}`)
}
