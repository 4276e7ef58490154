package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/BurntSushi/toml"
)

// Config holds the daemon's settings. Precedence, lowest to highest:
// defaults, $CROW_HOME/config.toml, CROW_* environment variables, then flags
// (applied by the caller on top of what LoadConfig returns).
//
//	toml key            environment variable  default
//	listen              CROW_LISTEN           127.0.0.1:3001
//	sync_listen         CROW_SYNC_LISTEN      "" (caller derives: gateway port + 1)
//	gateway_url         CROW_GATEWAY_URL      "" (URL peers use to reach this gateway)
//	log_level           CROW_LOG_LEVEL        info (debug | info | warn | error)
//	[chain] rpc_url     CROW_CHAIN_RPC_URL    "" (embedded dev chain)
//	[chain] contract    CROW_CHAIN_CONTRACT   "" (deploy on first start)
//	[chain] key_file    CROW_CHAIN_KEY_FILE   "" (key derived from the seed)
//
// Unknown keys in config.toml are an error naming them. An environment
// variable set to the empty string counts as unset.
type Config struct {
	Listen     string      `toml:"listen"`
	SyncListen string      `toml:"sync_listen"`
	GatewayURL string      `toml:"gateway_url"`
	LogLevel   string      `toml:"log_level"`
	Chain      ChainConfig `toml:"chain"`
}

// ChainConfig selects the anchoring chain. All empty means the embedded dev
// chain in $CROW_HOME/chain with the account derived from the seed.
type ChainConfig struct {
	RPCURL   string `toml:"rpc_url"`  // JSON-RPC endpoint of an external EVM chain
	Contract string `toml:"contract"` // ProjectStateAnchor address on that chain
	KeyFile  string `toml:"key_file"` // hex secp256k1 key file, instead of the seed's
}

// DefaultListen is the gateway's default address.
const DefaultListen = "127.0.0.1:3001"

// DefaultConfig returns the built-in defaults.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen, LogLevel: "info"}
}

// LoadConfig reads dir/config.toml (a missing file is fine) over the
// defaults, then applies CROW_* variables looked up with lookupEnv (nil means
// os.LookupEnv). It validates the result.
func LoadConfig(dir string, lookupEnv func(string) (string, bool)) (Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	cfg := DefaultConfig()
	path := PathsOf(dir).ConfigFile()
	text, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Config{}, fmt.Errorf("reading config: %w", err)
	default:
		md, err := toml.Decode(string(text), &cfg)
		if err != nil {
			return Config{}, fmt.Errorf("parsing %s: %w", path, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, len(und))
			for i, k := range und {
				keys[i] = k.String()
			}
			return Config{}, fmt.Errorf("%s: unknown key(s): %s", path, strings.Join(keys, ", "))
		}
	}
	for _, e := range []struct {
		name string
		dst  *string
	}{
		{"CROW_LISTEN", &cfg.Listen},
		{"CROW_SYNC_LISTEN", &cfg.SyncListen},
		{"CROW_GATEWAY_URL", &cfg.GatewayURL},
		{"CROW_LOG_LEVEL", &cfg.LogLevel},
		{"CROW_CHAIN_RPC_URL", &cfg.Chain.RPCURL},
		{"CROW_CHAIN_CONTRACT", &cfg.Chain.Contract},
		{"CROW_CHAIN_KEY_FILE", &cfg.Chain.KeyFile},
	} {
		if v, ok := lookupEnv(e.name); ok && v != "" {
			*e.dst = v
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks the settings and normalises LogLevel to lower case.
func (c *Config) Validate() error {
	c.LogLevel = strings.ToLower(strings.TrimSpace(c.LogLevel))
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("invalid log_level %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.Listen == "" {
		return errors.New("listen address is empty")
	}
	return nil
}
