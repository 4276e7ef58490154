package home

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// tomlKeys lists the dotted toml keys of a struct type's fields.
func tomlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		if f.Type.Kind() == reflect.Struct {
			out = append(out, tomlKeys(f.Type, prefix+tag+".")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	return out
}

// The key table covers every field of Config, and the doc comment of
// Config names every key.
func TestConfigKeysCoverConfig(t *testing.T) {
	want := tomlKeys(reflect.TypeOf(Config{}), "")
	got := ConfigKeys()
	sort.Strings(want)
	sorted := append([]string(nil), got...)
	sort.Strings(sorted)
	if !reflect.DeepEqual(want, sorted) {
		t.Errorf("key table %v, Config has %v", sorted, want)
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func setting(t *testing.T, list []Setting, key string) Setting {
	t.Helper()
	for _, s := range list {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no setting %s", key)
	return Setting{}
}

func TestLoadConfigSources(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(
		"gateway_url = \"http://100.64.0.1:3001\"\nlog_level = \"debug\"\n[chain]\nrpc_url = \"https://eth.example/v3/SECRETKEY\"\n[chain.checkpoint]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, src, err := LoadConfigSources(dir, env(map[string]string{"CROW_LOG_LEVEL": "warn", "CROW_LISTEN": "", "CROW_MIN_FREE_MB": "512"}))
	if err != nil {
		t.Fatal(err)
	}
	src["listen"] = SourceFlag
	cfg.Listen = "127.0.0.1:4000"
	list := Settings(cfg, src)
	for _, c := range []struct {
		key, value string
		source     Source
	}{
		{"listen", "127.0.0.1:4000", SourceFlag},
		{"gateway_url", "http://100.64.0.1:3001", SourceFile},
		{"log_level", "warn", SourceEnv},
		{"min_free_mb", "512", SourceEnv},
		{"chain.rpc_url", "https://eth.example/(redacted)", SourceFile},
		{"chain.replace_after", "30s", SourceDefault},
		{"chain.checkpoint.interval", "1h0m0s", SourceDefault},
		{"sync_dial", "", SourceDefault},
	} {
		s := setting(t, list, c.key)
		if s.Value != c.value || s.Source != c.source {
			t.Errorf("%s = %q (%s), want %q (%s)", c.key, s.Value, s.Source, c.value, c.source)
		}
	}
	for _, s := range list {
		if strings.Contains(s.Value, "SECRETKEY") {
			t.Errorf("%s shows the secret: %s", s.Key, s.Value)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"http://127.0.0.1:8545":            "http://127.0.0.1:8545",
		"https://mainnet.infura.io/v3/KEY": "https://mainnet.infura.io/(redacted)",
		"https://rpc.example/?apikey=KEY":  "https://rpc.example/(redacted)",
		"https://user:pass@rpc.example":    "https://rpc.example/(redacted)",
		"not a url":                        "(redacted)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSetConfigValue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("gateway_url = \"http://100.64.0.1:3001\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"listen", "tailscale"},
		{"chain.rpc_url", "http://127.0.0.1:8545"},
		{"chain.replace_after", "45s"},
		{"chain.max_fee_gwei", "1.5"},
		{"chain.confirmations", "4"},
		{"min_free_mb", "-1"},
		{"sync_announce", "/ip4/127.0.0.1/tcp/4002, /dns4/home.example/tcp/4002"},
		{"sync_dial.abc123", "/ip4/127.0.0.1/tcp/5002"},
		{"chain.checkpoint.rpc_url", "http://127.0.0.1:8546"},
		{"chain.checkpoint.interval", "2h"},
	} {
		if _, err := SetConfigValue(dir, kv[0], kv[1]); err != nil {
			t.Fatalf("set %s %s: %v", kv[0], kv[1], err)
		}
	}
	cfg, err := LoadConfig(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GatewayURL != "http://100.64.0.1:3001" || cfg.Listen != "tailscale" || cfg.Chain.ReplaceAfter.String() != "45s" ||
		cfg.Chain.MaxFee != "1.5" || cfg.Chain.Confirmations != 4 || cfg.MinFreeMB != -1 || len(cfg.SyncAnnounce) != 2 ||
		cfg.SyncDial["abc123"][0] != "/ip4/127.0.0.1/tcp/5002" || cfg.Chain.Checkpoint.Interval.String() != "2h0m0s" {
		t.Errorf("config after set: %+v", cfg)
	}
	// Unset: the default again, the empty table gone.
	for _, k := range []string{"chain.checkpoint.interval", "chain.checkpoint.rpc_url", "listen"} {
		if _, err := SetConfigValue(dir, k, ""); err != nil {
			t.Fatalf("unset %s: %v", k, err)
		}
	}
	cfg, err = LoadConfig(dir, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	if cfg.Listen != DefaultListen || cfg.Chain.Checkpoint.Enabled() || strings.Contains(string(text), "checkpoint") {
		t.Errorf("after unset: listen %s, file:\n%s", cfg.Listen, text)
	}
	before, _ := os.ReadFile(path)
	for _, c := range []struct{ key, value, msg string }{
		{"lisen", "x", "unknown config key"},
		{"chain", "x", "unknown config key"},
		{"sync_dial", "x", "sync_dial.INSTANCE_ID"},
		{"listen", "3001", "HOST:PORT"},
		{"sync_listen", "127.0.0.1:3002", "multiaddr"},
		{"chain.replace_after", "30", "duration"},
		{"chain.max_fee_gwei", "1.0000000001", "1 wei"},
		{"chain.confirmations", "-1", "blocks"},
		{"log_level", "loud", "debug, info"},
		{"chain.contract", "0x12", "not an address"},
		{"chain.checkpoint.interval", "10m", "rpc_url is not"}, // checkpoints off: the whole file is checked
		{"chain.max_priority_fee_gwei", "1", ""},               // then below
		{"min_free_mb", "-2", "MiB"},
	} {
		_, err := SetConfigValue(dir, c.key, c.value)
		if c.msg == "" {
			if err != nil {
				t.Fatalf("set %s %s: %v", c.key, c.value, err)
			}
			before, _ = os.ReadFile(path)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("set %s %q: %v, want an error with %q", c.key, c.value, err, c.msg)
		}
		if c.key == "lisen" && !errors.Is(err, ErrUnknownKey) {
			t.Errorf("unknown key: %v", err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("set %s %q changed the file:\n%s", c.key, c.value, after)
		}
	}
	// The tip above the fee cap: refused by the whole-file check.
	if _, err := SetConfigValue(dir, "chain.max_fee_gwei", "0.5"); err == nil || !strings.Contains(err.Error(), "above max_fee_gwei") {
		t.Errorf("tip above fee: %v", err)
	}
}

func TestSetConfigValueRefusesABrokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("listen = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := SetConfigValue(dir, "log_level", "debug"); err == nil || !strings.Contains(err.Error(), "fix it by hand") {
		t.Errorf("broken file: %v", err)
	}
}
