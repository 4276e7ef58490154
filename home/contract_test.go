package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

func TestContractRecordRoundTrip(t *testing.T) {
	path := PathsOf(t.TempDir()).ChainRPCFile()
	if r, err := ReadContractRecord(path); r != nil || err != nil {
		t.Fatalf("missing file: %v, %v", r, err)
	}
	want := ContractRecord{Status: ContractDeployed, ChainID: 1337, Genesis: common.HexToHash("0x01"),
		Contract: common.HexToAddress("0x02"), DeployBlock: 7, DeployedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Account: common.HexToAddress("0x03"), DeployNonce: 4}
	if err := WriteContractRecord(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadContractRecord(path)
	want.Format = ContractFormat
	if err != nil || *got != want {
		t.Fatalf("read %+v, %v; want %+v", got, err, want)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v, %v", st, err)
	}
	text, _ := os.ReadFile(path)
	for _, k := range []string{`"chain_id": 1337`, `"genesis_hash"`, `"contract"`, `"deploy_block": 7`, `"deployed_at": "2026-01-02T03:04:05Z"`} {
		if !strings.Contains(string(text), k) {
			t.Errorf("file lacks %s:\n%s", k, text)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("%d entries next to the record", len(ents))
	}
}

func TestContractRecordBad(t *testing.T) {
	for name, text := range map[string]string{
		"not json":    "{",
		"format":      `{"format":"crow-contract-v9","status":"deployed"}`,
		"status":      `{"format":"crow-contract-v1","status":"maybe"}`,
		"no contract": `{"format":"crow-contract-v1","status":"deployed","genesis_hash":"0x0000000000000000000000000000000000000000000000000000000000000001"}`,
	} {
		path := filepath.Join(t.TempDir(), CheckpointName)
		os.WriteFile(path, []byte(text), 0o600)
		if _, err := ReadContractRecord(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v does not name the file", name, err)
		}
	}
}
