package contract

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestBindingsMatchArtifacts catches a stale generation: bindings.go must
// embed exactly the committed ProjectStateAnchor.abi and .bin (build.sh
// regenerates all three; build.sh --check verifies the .sol gives them).
func TestBindingsMatchArtifacts(t *testing.T) {
	abiFile, err := os.ReadFile("ProjectStateAnchor.abi")
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(abiFile, &want); err != nil {
		t.Fatalf("ProjectStateAnchor.abi: %v", err)
	}
	if err := json.Unmarshal([]byte(ProjectStateAnchorMetaData.ABI), &got); err != nil {
		t.Fatalf("bindings ABI: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("bindings.go's ABI differs from ProjectStateAnchor.abi: run anchor/contract/build.sh")
	}

	binFile, err := os.ReadFile("ProjectStateAnchor.bin")
	if err != nil {
		t.Fatal(err)
	}
	if wantBin, gotBin := "0x"+strings.TrimSpace(string(binFile)), ProjectStateAnchorMetaData.Bin; gotBin != wantBin {
		t.Errorf("bindings.go's bytecode differs from ProjectStateAnchor.bin (%d vs %d chars): run anchor/contract/build.sh", len(gotBin), len(wantBin))
	}

	// The ABI must also parse, and carry the interface the anchor package
	// and third-party verifiers rely on.
	parsed, err := ProjectStateAnchorMetaData.GetAbi()
	if err != nil {
		t.Fatal(err)
	}
	for name, sig := range map[string]string{
		"anchor":         "anchor(bytes32,uint64,bytes32)",
		"anchorBatch":    "anchorBatch(bytes32[],uint64[],bytes32[])",
		"anchorMemories": "anchorMemories(bytes32[],bytes[],string[],uint8[],uint32[])",
		"getAnchorById":  "getAnchorById(uint256)",
		"getAnchor":      "getAnchor(bytes32,uint64)",
		"getAnchorIds":   "getAnchorIds(bytes32[],uint64[])",
		"anchorCount":    "anchorCount()",
		"owner":          "owner()",
	} {
		if m, ok := parsed.Methods[name]; !ok || m.Sig != sig {
			t.Errorf("method %s: have %q, want %q", name, m.Sig, sig)
		}
	}
	for name, sig := range map[string]string{
		"StateAnchored":  "StateAnchored(uint256,bytes32,uint64,bytes32)",
		"MemoryAnchored": "MemoryAnchored(bytes32,bytes,string,uint8,uint32)",
	} {
		if e, ok := parsed.Events[name]; !ok || e.Sig != sig {
			t.Errorf("event %s: have %q, want %q", name, e.Sig, sig)
		}
	}
}
