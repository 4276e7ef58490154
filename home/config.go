package home

import (
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/ethereum/go-ethereum/common"
	ma "github.com/multiformats/go-multiaddr"
)

// Config holds the daemon's settings. Precedence, lowest to highest:
// defaults, $CROW_HOME/config.toml, CROW_* environment variables, then flags
// (applied by the caller on top of what LoadConfig returns).
//
//	toml key                              environment variable              default
//	listen                                CROW_LISTEN                       127.0.0.1:3001 ("tailscale[:PORT]": the Tailscale IPv4, port 3001)
//	sync_listen                           CROW_SYNC_LISTEN                  "" (caller derives: gateway port + 1; "tailscale[:PORT]" too)
//	sync_announce                         CROW_SYNC_ANNOUNCE                [] (announce the listen addresses; env: comma-separated)
//	[sync_dial] INSTANCE_ID = [addrs]     CROW_SYNC_DIAL                    {} (dial the registry's addresses; env: ID=ADDR,ADDR;ID=ADDR)
//	gateway_url                           CROW_GATEWAY_URL                  "" (URL peers use to reach this gateway)
//	log_level                             CROW_LOG_LEVEL                    info (debug | info | warn | error)
//	min_free_mb                           CROW_MIN_FREE_MB                  0 (256 MiB; refuse writes below max(this, 1 % of the disk); -1: off)
//	memory_limit_mb                       CROW_MEMORY_LIMIT_MB              0 (home 400 MiB, satellite 192; the Go soft memory limit, unless GOMEMLIMIT is set; -1: none)
//	[chain] rpc_url                       CROW_CHAIN_RPC_URL                "" (embedded dev chain)
//	[chain] contract                      CROW_CHAIN_CONTRACT               "" (home: deploy once, keep it in chain-rpc.json)
//	[chain] key_file                      CROW_CHAIN_KEY_FILE               "" (key derived from the seed)
//	[chain] max_fee_gwei                  CROW_CHAIN_MAX_FEE_GWEI           "" (no cap on maxFeePerGas)
//	[chain] max_priority_fee_gwei         CROW_CHAIN_MAX_PRIORITY_FEE_GWEI  "" (no cap on maxPriorityFeePerGas)
//	[chain] confirmations                 CROW_CHAIN_CONFIRMATIONS          0 (backend default: 1 embedded, 3 rpc)
//	[chain] replace_after                 CROW_CHAIN_REPLACE_AFTER          30s (resend a stuck transaction after)
//	[chain] public_rpc_url                CROW_CHAIN_PUBLIC_RPC_URL         "" (rpc_url is never published)
//	[chain.checkpoint] rpc_url            CROW_CHECKPOINT_RPC_URL           "" (no checkpoints)
//	[chain.checkpoint] key_file           CROW_CHECKPOINT_KEY_FILE          "" (the seed's anchoring key)
//	[chain.checkpoint] contract           CROW_CHECKPOINT_CONTRACT          "" (deploy once, keep it in checkpoint-rpc.json)
//	[chain.checkpoint] interval           CROW_CHECKPOINT_INTERVAL          1h (at least 1m)
//	[chain.checkpoint] confirmations      -                                 0 (backend default: 3)
//	[chain.checkpoint] public_rpc_url     -                                 "" (rpc_url is never published)
//	[chain.checkpoint] max_fee_gwei       -                                 "" (no cap)
//
// Fees in gwei are a TOML number (1.5) or a decimal string ("1.5"), at most
// 9 decimal places (1 wei), and positive. Durations are Go duration strings
// ("30s", "1h30m"). Unknown keys in config.toml are an error naming them. An
// environment variable set to the empty string counts as unset.
// LoadConfigSources also says where each value came from, Settings lists
// them (`crow config show`) and SetConfigValue changes one key of the file
// (`crow config set`), all from the one key table in configkeys.go.
type Config struct {
	Listen     string `toml:"listen"`
	SyncListen string `toml:"sync_listen"`
	// SyncAnnounce pins the sync multiaddrs this instance writes in its
	// registry row (what peers dial) instead of its listen addresses: a
	// proxy or a forwarded port in front of it.
	SyncAnnounce []string `toml:"sync_announce"`
	// SyncDial pins, by peer instance id, the multiaddrs dialled for that
	// peer instead of the ones its registry row announces.
	SyncDial   map[string][]string `toml:"sync_dial"`
	GatewayURL string              `toml:"gateway_url"`
	LogLevel   string              `toml:"log_level"`
	// MinFreeMB is the free-space guard's floor in MiB (0: 256; -1: no guard): writes are
	// refused with 507 while the store's filesystem has less free than it or 1 % of its size.
	MinFreeMB int64 `toml:"min_free_mb"`
	// MemoryLimitMB is the soft memory limit in MiB crow serve gives the Go runtime
	// (debug.SetMemoryLimit) when GOMEMLIMIT is not set (0: DefaultMemoryLimitMB on the home,
	// DefaultSatelliteMemoryLimitMB on a satellite; -1: none, the runtime's default). It is a
	// target for the garbage collector, not a cap: above it the collector runs more often (up
	// to about half the CPU), nothing fails.
	MemoryLimitMB int64       `toml:"memory_limit_mb"`
	Chain         ChainConfig `toml:"chain"`
}

// ChainConfig selects the anchoring chain. RPCURL empty means the embedded dev
// chain in $CROW_HOME/chain with the account derived from the seed.
type ChainConfig struct {
	RPCURL   string `toml:"rpc_url"`  // JSON-RPC endpoint of an external EVM chain; may carry an API key, never published
	Contract string `toml:"contract"` // ProjectStateAnchor address on that chain
	KeyFile  string `toml:"key_file"` // hex secp256k1 key file, instead of the seed's

	MaxFee         Gwei     `toml:"max_fee_gwei"`          // cap on EIP-1559 maxFeePerGas; "" = none (see MaxFeeWei)
	MaxPriorityFee Gwei     `toml:"max_priority_fee_gwei"` // cap on maxPriorityFeePerGas; "" = none
	Confirmations  Blocks   `toml:"confirmations"`         // blocks on top before "final"; 0 = backend default (see ConfirmationsOrDefault)
	ReplaceAfter   Duration `toml:"replace_after"`         // a transaction not included after this long is replaced
	PublicRPCURL   string   `toml:"public_rpc_url"`        // endpoint put in verification packets (RPC backend only)

	Checkpoint CheckpointConfig `toml:"checkpoint"`
}

// CheckpointConfig is [chain.checkpoint]: periodic commits of the latest
// roots to an external (public) EVM chain (SPEC §11). Opt-in: RPCURL empty
// means no checkpoints, and then every other key must be unset.
//
// KeyFile empty means the seed's anchoring key: the checkpoints are then
// sent from the same address as the anchors, the one the verification
// packet's signature binds to the crow id, so a verifier can attribute them
// without trusting anything else. Set it to pay from another funded account.
// Only an instance that holds the seed (home) checkpoints.
type CheckpointConfig struct {
	RPCURL        string   `toml:"rpc_url"`        // JSON-RPC endpoint of the checkpoint chain; never published
	KeyFile       string   `toml:"key_file"`       // hex secp256k1 key file; "" = the seed's anchoring key
	Contract      string   `toml:"contract"`       // ProjectStateAnchor address there; "" = deploy once, persisted
	Interval      Duration `toml:"interval"`       // how often the latest roots are committed
	Confirmations Blocks   `toml:"confirmations"`  // 0 = backend default (see ConfirmationsOrDefault)
	PublicRPCURL  string   `toml:"public_rpc_url"` // endpoint put in verification packets
	MaxFee        Gwei     `toml:"max_fee_gwei"`   // cap on maxFeePerGas; "" = none
}

// Defaults of the chain settings.
const (
	DefaultReplaceAfter          = 30 * time.Second
	DefaultCheckpointInterval    = time.Hour
	MinCheckpointInterval        = time.Minute
	DefaultEmbeddedConfirmations = 1 // [chain] confirmations = 0 on the embedded chain
	DefaultRPCConfirmations      = 3 // [chain] or [chain.checkpoint] confirmations = 0 on an RPC chain
)

// Enabled reports whether checkpoints are configured (rpc_url is set).
func (c CheckpointConfig) Enabled() bool { return c.RPCURL != "" }

// MaxFeeWei is the cap on maxFeePerGas in wei, nil for none. It is nil
// on a value Validate would refuse.
func (c ChainConfig) MaxFeeWei() *big.Int { return c.MaxFee.weiOrNil() }

// MaxPriorityFeeWei is the cap on maxPriorityFeePerGas in wei, nil for none.
func (c ChainConfig) MaxPriorityFeeWei() *big.Int { return c.MaxPriorityFee.weiOrNil() }

// ConfirmationsOrDefault is Confirmations, or when it is 0 the backend's
// default: DefaultRPCConfirmations with RPCURL set, else
// DefaultEmbeddedConfirmations.
func (c ChainConfig) ConfirmationsOrDefault() uint64 {
	switch {
	case c.Confirmations > 0:
		return uint64(c.Confirmations)
	case c.RPCURL != "":
		return DefaultRPCConfirmations
	default:
		return DefaultEmbeddedConfirmations
	}
}

// MaxFeeWei is the checkpoint chain's cap on maxFeePerGas in wei, nil for
// none.
func (c CheckpointConfig) MaxFeeWei() *big.Int { return c.MaxFee.weiOrNil() }

// ConfirmationsOrDefault is Confirmations, or DefaultRPCConfirmations when it
// is 0.
func (c CheckpointConfig) ConfirmationsOrDefault() uint64 {
	if c.Confirmations > 0 {
		return uint64(c.Confirmations)
	}
	return DefaultRPCConfirmations
}

// DefaultMemoryLimitMB is memory_limit_mb's default (0) on the home. Measured at 100k memories
// (docs/BENCHMARKS.md, session 13): the satellite's peak RSS during a full sync 577–682 →
// 505–517 MB, the sync within ~5 %; the live heap at that peak is ~215 MB. In session 9,
// before badger's table builders stopped keeping their heap, a 384 MiB limit doubled
// that sync, because the live heap was then ~900 MB. The home keeps it: its bulk write
// of 100k memories halved at 256 MiB (session 25).
const DefaultMemoryLimitMB = 400

// DefaultSatelliteMemoryLimitMB is memory_limit_mb's default (0) on a satellite. A
// satellite's live heap during a 100k full sync is 55–85 MB (session 27, heap profiles);
// at 192 MiB its peak RSS fell 287–307 → 263–265 MB with the sync as fast (at 144 MiB:
// 235 MB, searchable ~1 s later).
const DefaultSatelliteMemoryLimitMB = 192

// MemoryLimitBytes is the soft memory limit memory_limit_mb asks for an instance of
// role (RoleHome or RoleSatellite), in bytes, and false for none (-1).
func (c Config) MemoryLimitBytes(role string) (int64, bool) {
	switch {
	case c.MemoryLimitMB == 0 && role == RoleSatellite:
		return DefaultSatelliteMemoryLimitMB << 20, true
	case c.MemoryLimitMB == 0:
		return DefaultMemoryLimitMB << 20, true
	case c.MemoryLimitMB < 0:
		return 0, false
	}
	return c.MemoryLimitMB << 20, true
}

// DefaultListen is the gateway's default address.
const DefaultListen = "127.0.0.1:3001"

// DefaultConfig returns the built-in defaults.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen, LogLevel: "info", Chain: ChainConfig{
		ReplaceAfter: Duration(DefaultReplaceAfter),
		Checkpoint:   CheckpointConfig{Interval: Duration(DefaultCheckpointInterval)},
	}}
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
		if cfg, err = decodeConfig(string(text), path); err != nil {
			return Config{}, err
		}
	}
	if err := cfg.applyEnv(lookupEnv); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decodeConfig decodes the text of config.toml (at path, for messages) over
// the defaults; an unknown key is an error naming it.
func decodeConfig(text, path string) (Config, error) {
	cfg := DefaultConfig()
	md, err := toml.Decode(text, &cfg)
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
	return cfg, nil
}

// parseConfigText is what LoadConfig makes of the text of config.toml
// alone (no environment): decoded and validated.
func parseConfigText(text, path string) (Config, error) {
	cfg, err := decodeConfig(text, path)
	if err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// applyEnv sets the fields named by CROW_* variables; an empty value counts
// as unset.
func (c *Config) applyEnv(lookupEnv func(string) (string, bool)) error {
	str := func(dst *string) func(string) error {
		return func(v string) error { *dst = v; return nil }
	}
	gwei := func(dst *Gwei) func(string) error {
		return func(v string) error { *dst = Gwei(strings.TrimSpace(v)); return nil }
	}
	dur := func(dst *Duration) func(string) error {
		return func(v string) error { return dst.UnmarshalText([]byte(v)) }
	}
	for _, e := range []struct {
		name string
		set  func(string) error
	}{
		{"CROW_LISTEN", str(&c.Listen)},
		{"CROW_SYNC_LISTEN", str(&c.SyncListen)},
		{"CROW_SYNC_ANNOUNCE", func(v string) error { c.SyncAnnounce = splitList(v, ","); return nil }},
		{"CROW_SYNC_DIAL", func(v string) error {
			m, err := ParseSyncDial(v)
			c.SyncDial = m
			return err
		}},
		{"CROW_GATEWAY_URL", str(&c.GatewayURL)},
		{"CROW_LOG_LEVEL", str(&c.LogLevel)},
		{"CROW_MIN_FREE_MB", func(v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a number of MiB", v)
			}
			c.MinFreeMB = n
			return nil
		}},
		{"CROW_MEMORY_LIMIT_MB", func(v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a number of MiB", v)
			}
			c.MemoryLimitMB = n
			return nil
		}},
		{"CROW_CHAIN_RPC_URL", str(&c.Chain.RPCURL)},
		{"CROW_CHAIN_CONTRACT", str(&c.Chain.Contract)},
		{"CROW_CHAIN_KEY_FILE", str(&c.Chain.KeyFile)},
		{"CROW_CHAIN_MAX_FEE_GWEI", gwei(&c.Chain.MaxFee)},
		{"CROW_CHAIN_MAX_PRIORITY_FEE_GWEI", gwei(&c.Chain.MaxPriorityFee)},
		{"CROW_CHAIN_CONFIRMATIONS", func(v string) error {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a number of blocks (0 or more)", v)
			}
			c.Chain.Confirmations = Blocks(n)
			return nil
		}},
		{"CROW_CHAIN_REPLACE_AFTER", dur(&c.Chain.ReplaceAfter)},
		{"CROW_CHAIN_PUBLIC_RPC_URL", str(&c.Chain.PublicRPCURL)},
		{"CROW_CHECKPOINT_RPC_URL", str(&c.Chain.Checkpoint.RPCURL)},
		{"CROW_CHECKPOINT_KEY_FILE", str(&c.Chain.Checkpoint.KeyFile)},
		{"CROW_CHECKPOINT_CONTRACT", str(&c.Chain.Checkpoint.Contract)},
		{"CROW_CHECKPOINT_INTERVAL", dur(&c.Chain.Checkpoint.Interval)},
	} {
		if v, ok := lookupEnv(e.name); ok && v != "" {
			if err := e.set(v); err != nil {
				return fmt.Errorf("environment variable %s: %w", e.name, err)
			}
		}
	}
	return nil
}

// Validate checks the settings and normalises LogLevel to lower case.
func (c *Config) Validate() error {
	c.LogLevel = strings.ToLower(strings.TrimSpace(c.LogLevel))
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("invalid log_level %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.MinFreeMB < -1 {
		return fmt.Errorf("invalid min_free_mb %d: want a number of MiB, 0 for the default or -1 for no guard", c.MinFreeMB)
	}
	if c.MemoryLimitMB < -1 {
		return fmt.Errorf("invalid memory_limit_mb %d: want a number of MiB, 0 for the default or -1 for none", c.MemoryLimitMB)
	}
	if c.Listen == "" {
		return errors.New("listen address is empty")
	}
	for _, a := range c.SyncAnnounce {
		if _, err := ma.NewMultiaddr(a); err != nil {
			return fmt.Errorf("invalid sync_announce address %q: %w", a, err)
		}
	}
	for id, addrs := range c.SyncDial {
		if id == "" || len(addrs) == 0 {
			return fmt.Errorf("invalid sync_dial entry %q = %v: want an instance id and at least one multiaddr", id, addrs)
		}
		for _, a := range addrs {
			if _, err := ma.NewMultiaddr(a); err != nil {
				return fmt.Errorf("invalid sync_dial address %q for %s: %w", a, id, err)
			}
		}
	}
	return c.Chain.validate()
}

// ParseSyncDial parses the CROW_SYNC_DIAL (and crow serve --sync-dial) form
// of [sync_dial]: "ID=ADDR[,ADDR...][;ID=ADDR...]". The addresses are checked
// by Validate.
func ParseSyncDial(v string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, e := range splitList(v, ";") {
		id, addrs, ok := strings.Cut(e, "=")
		id = strings.TrimSpace(id)
		list := splitList(addrs, ",")
		if !ok || id == "" || len(list) == 0 {
			return nil, fmt.Errorf("sync dial entry %q: want INSTANCE_ID=MULTIADDR[,MULTIADDR]", e)
		}
		out[id] = append(out[id], list...)
	}
	return out, nil
}

// splitList splits v on sep, trimming spaces and dropping empty items.
func splitList(v, sep string) []string {
	var out []string
	for _, s := range strings.Split(v, sep) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c ChainConfig) validate() error {
	if err := checkAddress("[chain] contract", c.Contract); err != nil {
		return err
	}
	if err := c.MaxFee.check("[chain] max_fee_gwei"); err != nil {
		return err
	}
	if err := c.MaxPriorityFee.check("[chain] max_priority_fee_gwei"); err != nil {
		return err
	}
	if fee, tip := c.MaxFeeWei(), c.MaxPriorityFeeWei(); fee != nil && tip != nil && tip.Cmp(fee) > 0 {
		return fmt.Errorf("[chain] max_priority_fee_gwei %s is above max_fee_gwei %s: the tip is part of the fee", c.MaxPriorityFee, c.MaxFee)
	}
	if c.ReplaceAfter <= 0 {
		return fmt.Errorf("[chain] replace_after %s: want a positive duration such as \"30s\"", c.ReplaceAfter)
	}
	if c.PublicRPCURL != "" && c.RPCURL == "" {
		return errors.New("[chain] public_rpc_url is set but rpc_url is not: the embedded chain is published by the gateway itself (/v1/chain/rpc)")
	}
	if err := checkPublicURL("[chain] public_rpc_url", c.PublicRPCURL); err != nil {
		return err
	}
	return c.Checkpoint.validate()
}

func (c CheckpointConfig) validate() error {
	if !c.Enabled() {
		var set []string
		for _, f := range []struct {
			key string
			on  bool
		}{
			{"key_file", c.KeyFile != ""},
			{"contract", c.Contract != ""},
			{"interval", c.Interval != Duration(DefaultCheckpointInterval)},
			{"confirmations", c.Confirmations != 0},
			{"public_rpc_url", c.PublicRPCURL != ""},
			{"max_fee_gwei", c.MaxFee != ""},
		} {
			if f.on {
				set = append(set, f.key)
			}
		}
		if len(set) > 0 {
			return fmt.Errorf("[chain.checkpoint] %s set but rpc_url is not: set rpc_url (CROW_CHECKPOINT_RPC_URL) to turn checkpoints on, or remove the rest", strings.Join(set, ", "))
		}
		return nil
	}
	if err := checkAddress("[chain.checkpoint] contract", c.Contract); err != nil {
		return err
	}
	if c.Interval.Std() < MinCheckpointInterval {
		return fmt.Errorf("[chain.checkpoint] interval %s is below the minimum of %s", c.Interval, MinCheckpointInterval)
	}
	if err := c.MaxFee.check("[chain.checkpoint] max_fee_gwei"); err != nil {
		return err
	}
	return checkPublicURL("[chain.checkpoint] public_rpc_url", c.PublicRPCURL)
}

func checkAddress(key, s string) error {
	if s != "" && !common.IsHexAddress(s) {
		return fmt.Errorf("%s %q is not an address: want 0x and 40 hex digits", key, s)
	}
	return nil
}

// checkPublicURL refuses what a third party could not use, or should not
// see: a published endpoint is http(s), with a host and no user:password.
func checkPublicURL(key, s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want an http:// or https:// URL", key, s)
	}
	if u.User != nil {
		return fmt.Errorf("%s %q carries credentials; it is published in every verification packet", key, s)
	}
	return nil
}

// Gwei is an amount in gwei as written in the config: a decimal string with
// at most 9 decimal places, "" for unset. In config.toml it may be a number
// (50, 1.5) or a string ("1.5").
type Gwei string

// UnmarshalTOML implements toml.Unmarshaler.
func (g *Gwei) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*g = Gwei(strings.TrimSpace(v))
	case int64:
		*g = Gwei(strconv.FormatInt(v, 10))
	case float64:
		*g = Gwei(strconv.FormatFloat(v, 'f', -1, 64))
	default:
		return fmt.Errorf("want an amount in gwei (a number or a decimal string), not %T", v)
	}
	return nil
}

// Wei converts g to wei; "" is nil (unset). It refuses a value that is not
// a decimal number, is not positive, or is finer than 1 wei.
func (g Gwei) Wei() (*big.Int, error) {
	if g == "" {
		return nil, nil
	}
	s := string(g)
	if strings.ContainsAny(s, "eE/") { // big.Rat takes exponents and fractions; a config wants plain decimals
		return nil, fmt.Errorf("%q: want a plain decimal number of gwei such as 1.5", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q: want a decimal number of gwei such as 1.5", s)
	}
	if r.Sign() <= 0 {
		return nil, fmt.Errorf("%q: a fee cap must be positive (leave it unset for no cap)", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(1e9))
	if !r.IsInt() {
		return nil, fmt.Errorf("%q: finer than 1 wei (at most 9 decimal places)", s)
	}
	return new(big.Int).Set(r.Num()), nil
}

func (g Gwei) check(key string) error {
	if _, err := g.Wei(); err != nil {
		return fmt.Errorf("%s %w", key, err)
	}
	return nil
}

func (g Gwei) weiOrNil() *big.Int {
	w, err := g.Wei()
	if err != nil {
		return nil
	}
	return w
}

// Duration is a time.Duration written as a Go duration string ("30s",
// "1h30m") in config.toml and CROW_* variables; a bare number is refused (it
// would silently mean nanoseconds).
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText formats d as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: want a Go duration such as \"30s\" or \"1h\"", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalTOML implements toml.Unmarshaler: only a string is a duration.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a duration string such as \"30s\", not %v", v)
	}
	return d.UnmarshalText([]byte(s))
}

// Blocks is a number of blocks (0 or more); config.toml refuses a negative
// number, which a plain uint64 would silently wrap.
type Blocks uint64

// UnmarshalTOML implements toml.Unmarshaler.
func (b *Blocks) UnmarshalTOML(v any) error {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return fmt.Errorf("want a number of blocks (0 or more), not %v", v)
	}
	*b = Blocks(n)
	return nil
}
