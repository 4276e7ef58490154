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
		"anchorRoot":     "anchorRoot(bytes32,uint32)",
		"anchorMemories": "anchorMemories(bytes32,bytes32[],bytes[],string[],uint8[],uint32[])",
		"getRoot":        "getRoot(bytes32)",
		"rootCount":      "rootCount()",
		"owner":          "owner()",
	} {
		if m, ok := parsed.Methods[name]; !ok || m.Sig != sig {
			t.Errorf("method %s: have %q, want %q", name, m.Sig, sig)
		}
	}
	if len(parsed.Methods) != 5 {
		t.Errorf("the ABI has %d methods, want 5", len(parsed.Methods))
	}
	// getRoot(root) returns (uint256 rootId, uint64 anchoredAt, uint32
	// count): what verifiers decode (SPEC §11).
	var outs []string
	for _, o := range parsed.Methods["getRoot"].Outputs {
		outs = append(outs, o.Name+" "+o.Type.String())
	}
	if got := strings.Join(outs, ", "); got != "rootId uint256, anchoredAt uint64, count uint32" {
		t.Errorf("getRoot returns (%s)", got)
	}
	for _, m := range []string{"getRoot", "rootCount", "owner"} {
		if !parsed.Methods[m].IsConstant() {
			t.Errorf("%s is not a view", m)
		}
	}
	// The v1 interface is gone.
	for _, old := range []string{"anchor", "anchorBatch", "getAnchorById", "getAnchor", "getAnchorIds", "anchorCount"} {
		if _, ok := parsed.Methods[old]; ok {
			t.Errorf("v1 method %s is still in the ABI", old)
		}
	}
	for name, sig := range map[string]string{
		"RootAnchored":   "RootAnchored(uint256,bytes32,uint32)",
		"MemoryAnchored": "MemoryAnchored(bytes32,bytes,string,uint8,uint32)",
	} {
		if e, ok := parsed.Events[name]; !ok || e.Sig != sig {
			t.Errorf("event %s: have %q, want %q", name, e.Sig, sig)
		}
	}
	if len(parsed.Events) != 2 {
		t.Errorf("the ABI has %d events, want 2", len(parsed.Events))
	}
	// RootAnchored's rootId and root are indexed (topics 1 and 2: eth_getLogs
	// finds a root by value), count is data.
	var indexed []string
	for _, in := range parsed.Events["RootAnchored"].Inputs {
		if in.Indexed {
			indexed = append(indexed, in.Name)
		}
	}
	if strings.Join(indexed, ",") != "rootId,root" {
		t.Errorf("RootAnchored indexes %v, want rootId and root", indexed)
	}
	for name, sig := range map[string]string{
		"NotOwner":       "NotOwner(address)",
		"LengthMismatch": "LengthMismatch()",
		"ZeroRoot":       "ZeroRoot()",
		"ZeroCount":      "ZeroCount()",
	} {
		if e, ok := parsed.Errors[name]; !ok || e.Sig != sig {
			t.Errorf("error %s: have %q, want %q", name, e.Sig, sig)
		}
	}
}
