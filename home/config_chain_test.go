package home

import (
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func loadWith(t *testing.T, text string, env map[string]string) (Config, error) {
	t.Helper()
	d := t.TempDir()
	if text != "" {
		if err := os.WriteFile(filepath.Join(d, ConfigName), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return LoadConfig(d, envOf(env))
}

const contractA = "0x1111111111111111111111111111111111111111"
const contractB = "0x2222222222222222222222222222222222222222"

func TestConfigChainDefaults(t *testing.T) {
	cfg, err := loadWith(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Chain
	if c.MaxFeeWei() != nil || c.MaxPriorityFeeWei() != nil {
		t.Errorf("fee caps by default: %v %v", c.MaxFeeWei(), c.MaxPriorityFeeWei())
	}
	if c.ReplaceAfter.Std() != 30*time.Second || c.Checkpoint.Interval.Std() != time.Hour {
		t.Errorf("replace_after %s, interval %s", c.ReplaceAfter, c.Checkpoint.Interval)
	}
	if c.ConfirmationsOrDefault() != 1 || c.Checkpoint.Enabled() || c.Checkpoint.ConfirmationsOrDefault() != 3 {
		t.Errorf("confirmations %d, checkpoint %v %d", c.ConfirmationsOrDefault(), c.Checkpoint.Enabled(), c.Checkpoint.ConfirmationsOrDefault())
	}
	c.RPCURL = "http://x"
	if c.ConfirmationsOrDefault() != 3 {
		t.Errorf("rpc default confirmations %d", c.ConfirmationsOrDefault())
	}
	c.Confirmations = 7
	if c.ConfirmationsOrDefault() != 7 {
		t.Errorf("explicit confirmations %d", c.ConfirmationsOrDefault())
	}
}

func TestConfigChainFile(t *testing.T) {
	cfg, err := loadWith(t, `
[chain]
rpc_url = "https://mainnet.example/v3/SECRET"
contract = "`+contractA+`"
max_fee_gwei = 1.5
max_priority_fee_gwei = "0.000000001"
confirmations = 12
replace_after = "2m"
public_rpc_url = "https://rpc.example"

[chain.checkpoint]
rpc_url = "https://l2.example/KEY"
key_file = "/k"
contract = "`+contractB+`"
interval = "15m"
confirmations = 5
public_rpc_url = "https://l2-public.example"
max_fee_gwei = 30
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Chain
	if got := c.MaxFeeWei(); got.Cmp(big.NewInt(1_500_000_000)) != 0 {
		t.Errorf("max fee %v wei", got)
	}
	if got := c.MaxPriorityFeeWei(); got.Cmp(big.NewInt(1)) != 0 {
		t.Errorf("max tip %v wei", got)
	}
	if c.Confirmations != 12 || c.ConfirmationsOrDefault() != 12 || c.ReplaceAfter.Std() != 2*time.Minute || c.PublicRPCURL != "https://rpc.example" || c.Contract != contractA {
		t.Errorf("chain = %+v", c)
	}
	cp := c.Checkpoint
	want := CheckpointConfig{RPCURL: "https://l2.example/KEY", KeyFile: "/k", Contract: contractB, Interval: Duration(15 * time.Minute),
		Confirmations: 5, PublicRPCURL: "https://l2-public.example", MaxFee: "30"}
	if cp != want || !cp.Enabled() || cp.ConfirmationsOrDefault() != 5 {
		t.Errorf("checkpoint = %+v, want %+v", cp, want)
	}
	if got := cp.MaxFeeWei(); got.Cmp(big.NewInt(30_000_000_000)) != 0 {
		t.Errorf("checkpoint max fee %v wei", got)
	}
}

func TestConfigChainEnv(t *testing.T) {
	cfg, err := loadWith(t, "[chain]\nmax_fee_gwei = 100\n", map[string]string{
		"CROW_CHAIN_RPC_URL":               "http://127.0.0.1:8545",
		"CROW_CHAIN_MAX_FEE_GWEI":          "2.25",
		"CROW_CHAIN_MAX_PRIORITY_FEE_GWEI": "1",
		"CROW_CHAIN_CONFIRMATIONS":         "4",
		"CROW_CHAIN_REPLACE_AFTER":         "45s",
		"CROW_CHAIN_PUBLIC_RPC_URL":        "http://public.example:8545",
		"CROW_CHECKPOINT_RPC_URL":          "https://sepolia.example",
		"CROW_CHECKPOINT_KEY_FILE":         "/keys/cp",
		"CROW_CHECKPOINT_CONTRACT":         contractB,
		"CROW_CHECKPOINT_INTERVAL":         "90m",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Chain
	if c.MaxFeeWei().Cmp(big.NewInt(2_250_000_000)) != 0 || c.MaxPriorityFeeWei().Cmp(big.NewInt(1_000_000_000)) != 0 {
		t.Errorf("fees %v %v", c.MaxFeeWei(), c.MaxPriorityFeeWei())
	}
	if c.Confirmations != 4 || c.ReplaceAfter.Std() != 45*time.Second || c.PublicRPCURL != "http://public.example:8545" {
		t.Errorf("chain = %+v", c)
	}
	cp := c.Checkpoint
	if cp.RPCURL != "https://sepolia.example" || cp.KeyFile != "/keys/cp" || cp.Contract != contractB || cp.Interval.Std() != 90*time.Minute {
		t.Errorf("checkpoint = %+v", cp)
	}
}

func TestConfigChainErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		toml string
		env  map[string]string
		want []string
	}{
		"negative fee":          {"[chain]\nmax_fee_gwei = -1\n", nil, []string{"max_fee_gwei", "positive"}},
		"zero fee":              {"[chain]\nmax_fee_gwei = 0\n", nil, []string{"max_fee_gwei", "positive"}},
		"fee not a number":      {"[chain]\nmax_fee_gwei = \"cheap\"\n", nil, []string{"max_fee_gwei", "cheap"}},
		"fee exponent":          {"[chain]\nmax_fee_gwei = \"1e3\"\n", nil, []string{"max_fee_gwei", "1e3"}},
		"fee finer than wei":    {"[chain]\nmax_fee_gwei = \"0.0000000001\"\n", nil, []string{"max_fee_gwei", "1 wei"}},
		"fee wrong type":        {"[chain]\nmax_fee_gwei = true\n", nil, []string{"max_fee_gwei"}},
		"env negative tip":      {"", map[string]string{"CROW_CHAIN_MAX_PRIORITY_FEE_GWEI": "-2"}, []string{"max_priority_fee_gwei", "-2"}},
		"tip above fee":         {"[chain]\nmax_fee_gwei = 1\nmax_priority_fee_gwei = 2\n", nil, []string{"max_priority_fee_gwei", "max_fee_gwei"}},
		"negative confirmation": {"[chain]\nconfirmations = -1\n", nil, []string{"confirmations"}},
		"env confirmations":     {"", map[string]string{"CROW_CHAIN_CONFIRMATIONS": "three"}, []string{"CROW_CHAIN_CONFIRMATIONS", "three"}},
		"env neg confirmations": {"", map[string]string{"CROW_CHAIN_CONFIRMATIONS": "-3"}, []string{"CROW_CHAIN_CONFIRMATIONS", "-3"}},
		"bad duration":          {"[chain]\nreplace_after = \"soon\"\n", nil, []string{"replace_after", "soon"}},
		"bare number duration":  {"[chain]\nreplace_after = 30\n", nil, []string{"replace_after", "duration"}},
		"negative duration":     {"[chain]\nreplace_after = \"-5s\"\n", nil, []string{"replace_after", "positive"}},
		"env bad duration":      {"", map[string]string{"CROW_CHAIN_REPLACE_AFTER": "5 minutes"}, []string{"CROW_CHAIN_REPLACE_AFTER", "5 minutes"}},
		"bad contract":          {"", map[string]string{"CROW_CHAIN_CONTRACT": "0xabc"}, []string{"[chain] contract", "0xabc"}},
		"public url embedded":   {"[chain]\npublic_rpc_url = \"https://x\"\n", nil, []string{"public_rpc_url", "rpc_url is not"}},
		"public url scheme":     {"[chain]\nrpc_url = \"http://a\"\npublic_rpc_url = \"ftp://x\"\n", nil, []string{"public_rpc_url", "ftp://x"}},
		"public url secret":     {"[chain]\nrpc_url = \"http://a\"\npublic_rpc_url = \"https://u:p@x\"\n", nil, []string{"public_rpc_url", "credentials"}},
		"interval below 1m":     {"[chain.checkpoint]\nrpc_url = \"https://x\"\ninterval = \"30s\"\n", nil, []string{"interval", "30s", "1m0s"}},
		"env interval below 1m": {"", map[string]string{"CROW_CHECKPOINT_RPC_URL": "https://x", "CROW_CHECKPOINT_INTERVAL": "59s"}, []string{"interval", "59s"}},
		"env bad interval":      {"", map[string]string{"CROW_CHECKPOINT_INTERVAL": "hourly"}, []string{"CROW_CHECKPOINT_INTERVAL", "hourly"}},
		"checkpoint no rpc_url": {"[chain.checkpoint]\nkey_file = \"/k\"\ninterval = \"2h\"\n", nil, []string{"[chain.checkpoint]", "key_file", "interval", "rpc_url"}},
		"env checkpoint no url": {"", map[string]string{"CROW_CHECKPOINT_CONTRACT": contractA}, []string{"[chain.checkpoint]", "contract", "CROW_CHECKPOINT_RPC_URL"}},
		"checkpoint contract":   {"[chain.checkpoint]\nrpc_url = \"https://x\"\ncontract = \"nope\"\n", nil, []string{"[chain.checkpoint] contract", "nope"}},
		"checkpoint fee":        {"[chain.checkpoint]\nrpc_url = \"https://x\"\nmax_fee_gwei = -3\n", nil, []string{"[chain.checkpoint] max_fee_gwei", "positive"}},
		"checkpoint public url": {"[chain.checkpoint]\nrpc_url = \"https://x\"\npublic_rpc_url = \"x\"\n", nil, []string{"[chain.checkpoint] public_rpc_url"}},
		"checkpoint unknown":    {"[chain.checkpoint]\nrpc_url = \"https://x\"\nperiod = \"1h\"\n", nil, []string{"chain.checkpoint.period"}},
		"chain unknown":         {"[chain]\nbatch_interval = \"1m\"\n", nil, []string{"chain.batch_interval"}},
	} {
		_, err := loadWith(t, tc.toml, tc.env)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", name, err, w)
			}
		}
	}
}

func TestGweiWei(t *testing.T) {
	for in, want := range map[Gwei]string{"1": "1000000000", "0.5": "500000000", "123.456789012": "123456789012", "0.000000001": "1", "1000000": "1000000000000000"} {
		got, err := in.Wei()
		if err != nil || got.String() != want {
			t.Errorf("%q.Wei() = %v, %v; want %s", in, got, err, want)
		}
	}
	if w, err := Gwei("").Wei(); w != nil || err != nil {
		t.Errorf("empty = %v, %v", w, err)
	}
}

func TestPathsChainFiles(t *testing.T) {
	p := PathsOf("/h")
	if p.ChainRPCFile() != filepath.Join("/h", "chain-rpc.json") || p.CheckpointRPCFile() != filepath.Join("/h", "checkpoint-rpc.json") {
		t.Errorf("%s %s", p.ChainRPCFile(), p.CheckpointRPCFile())
	}
}
