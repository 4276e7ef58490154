package home

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(t.TempDir(), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, DefaultConfig()) || cfg.Listen != "127.0.0.1:3001" || cfg.LogLevel != "info" {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestConfigPrecedence(t *testing.T) {
	d := t.TempDir()
	toml := `listen = "0.0.0.0:4000"
sync_listen = "/ip4/127.0.0.1/tcp/4001"
log_level = "debug"
min_free_mb = 512
memory_limit_mb = 256
gateway_url = "http://100.64.0.1:4000"

[chain]
rpc_url = "http://localhost:8545"
`
	if err := os.WriteFile(filepath.Join(d, ConfigName), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(d, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Listen, want.SyncListen, want.LogLevel = "0.0.0.0:4000", "/ip4/127.0.0.1/tcp/4001", "debug"
	want.GatewayURL, want.Chain.RPCURL = "http://100.64.0.1:4000", "http://localhost:8545"
	want.MinFreeMB, want.MemoryLimitMB = 512, 256
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("file only = %+v, want %+v", cfg, want)
	}

	cfg, err = LoadConfig(d, envOf(map[string]string{
		"CROW_LISTEN":          "127.0.0.1:5000",
		"CROW_LOG_LEVEL":       "WARN",
		"CROW_SYNC_LISTEN":     "", // empty = unset
		"CROW_CHAIN_CONTRACT":  "0x00000000000000000000000000000000000000Ab",
		"CROW_MIN_FREE_MB":     "-1",
		"CROW_MEMORY_LIMIT_MB": "512",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want.Listen, want.LogLevel, want.Chain.Contract = "127.0.0.1:5000", "warn", "0x00000000000000000000000000000000000000Ab"
	want.MinFreeMB, want.MemoryLimitMB = -1, 512
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("file + env = %+v, want %+v", cfg, want)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		toml string
		env  map[string]string
		want []string
	}{
		"unknown keys":      {"listen = \"x:1\"\nlisten_addr = \"y\"\n[chain]\nrpc = \"z\"\n", nil, []string{"listen_addr", "chain.rpc"}},
		"unknown table":     {"[gateway]\nport = 1\n", nil, []string{"gateway"}},
		"syntax":            {"listen = ", nil, []string{"config.toml"}},
		"wrong type":        {"listen = 3001\n", nil, []string{"listen"}},
		"bad log level":     {"log_level = \"loud\"\n", nil, []string{"loud"}},
		"bad env log level": {"", map[string]string{"CROW_LOG_LEVEL": "trace"}, []string{"trace"}},
		"bad min_free_mb":   {"min_free_mb = -2\n", nil, []string{"min_free_mb"}},
		"bad env min free":  {"", map[string]string{"CROW_MIN_FREE_MB": "lots"}, []string{"CROW_MIN_FREE_MB"}},
		"bad memory limit":  {"memory_limit_mb = -2\n", nil, []string{"memory_limit_mb"}},
		"bad env mem limit": {"", map[string]string{"CROW_MEMORY_LIMIT_MB": "lots"}, []string{"CROW_MEMORY_LIMIT_MB"}},
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, ConfigName), []byte(tc.toml), 0o600)
		_, err := LoadConfig(d, envOf(tc.env))
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

func TestConfigPinnedSyncAddresses(t *testing.T) {
	d := t.TempDir()
	toml := `sync_announce = ["/ip4/127.0.0.1/tcp/7001"]

[sync_dial]
inst-b = ["/ip4/127.0.0.1/tcp/7002", "/ip4/127.0.0.1/tcp/7003"]
`
	if err := os.WriteFile(filepath.Join(d, ConfigName), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(d, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.SyncAnnounce, []string{"/ip4/127.0.0.1/tcp/7001"}) ||
		!reflect.DeepEqual(cfg.SyncDial, map[string][]string{"inst-b": {"/ip4/127.0.0.1/tcp/7002", "/ip4/127.0.0.1/tcp/7003"}}) {
		t.Fatalf("file: announce %v dial %v", cfg.SyncAnnounce, cfg.SyncDial)
	}
	cfg, err = LoadConfig(d, envOf(map[string]string{
		"CROW_SYNC_ANNOUNCE": " /ip4/127.0.0.1/tcp/8001 , /ip6/::1/tcp/8001",
		"CROW_SYNC_DIAL":     "inst-c=/ip4/127.0.0.1/tcp/8002; inst-d=/ip4/127.0.0.1/tcp/8003,/ip4/127.0.0.1/tcp/8004",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.SyncAnnounce, []string{"/ip4/127.0.0.1/tcp/8001", "/ip6/::1/tcp/8001"}) ||
		!reflect.DeepEqual(cfg.SyncDial, map[string][]string{
			"inst-c": {"/ip4/127.0.0.1/tcp/8002"},
			"inst-d": {"/ip4/127.0.0.1/tcp/8003", "/ip4/127.0.0.1/tcp/8004"},
		}) {
		t.Fatalf("env over file: announce %v dial %v", cfg.SyncAnnounce, cfg.SyncDial)
	}
	for name, tc := range map[string]struct {
		toml string
		env  map[string]string
		want string
	}{
		"bad announce":      {`sync_announce = ["127.0.0.1:7001"]`, nil, "sync_announce"},
		"bad dial address":  {"[sync_dial]\nx = [\"nope\"]\n", nil, "sync_dial"},
		"empty dial":        {"[sync_dial]\nx = []\n", nil, "sync_dial"},
		"bad env dial":      {"", map[string]string{"CROW_SYNC_DIAL": "/ip4/127.0.0.1/tcp/1"}, "CROW_SYNC_DIAL"},
		"bad env dial addr": {"", map[string]string{"CROW_SYNC_DIAL": "x=oops"}, "oops"},
		"bad env announce":  {"", map[string]string{"CROW_SYNC_ANNOUNCE": "oops"}, "oops"},
	} {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, ConfigName), []byte(tc.toml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(d, envOf(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
}
