package home

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/crow-sync/crow/tailnet"
)

// Source says where a setting's value came from, lowest precedence first.
type Source string

// The sources of a setting.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file" // $CROW_HOME/config.toml
	SourceEnv     Source = "env"  // a CROW_* variable
	SourceFlag    Source = "flag" // a crow serve flag
)

// Sources maps each key (as in config.toml, dotted for tables:
// "chain.checkpoint.interval") to where its value came from; a key not in
// it is a default.
type Sources map[string]Source

// Setting is one key of the effective configuration.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"` // as written in config.toml; secrets redacted
	Source Source `json:"source"`
	Env    string `json:"env,omitempty"` // its CROW_* variable, if it has one
	// Resolved is what the daemon made of Value, when that differs
	// (listen = "tailscale" → the Tailscale address).
	Resolved string `json:"resolved,omitempty"`
}

// configKey is one key of config.toml: how to show it and how `crow config
// set` parses a value for it.
type configKey struct {
	name string
	env  string
	// get formats the key's value of c as config.toml would hold it.
	get func(c *Config) string
	// parse turns a `crow config set` VALUE into the TOML value written.
	parse func(v string) (any, error)
	// secret values are redacted when shown (an RPC URL carries an API key).
	secret bool
}

func str(v string) (any, error) { return v, nil }

func listenValue(v string) (any, error) {
	if tailnet.IsKeyword(v) {
		return v, nil
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return nil, fmt.Errorf("%q: want HOST:PORT (127.0.0.1:3001), tailscale or tailscale:PORT", v)
	}
	return v, nil
}

func multiaddrValue(v string) (any, error) {
	if tailnet.IsKeyword(v) {
		return v, nil
	}
	if _, err := ma.NewMultiaddr(v); err != nil {
		return nil, fmt.Errorf("%q: want a multiaddr (/ip4/127.0.0.1/tcp/3002), tailscale or tailscale:PORT: %w", v, err)
	}
	return v, nil
}

func multiaddrList(v string) (any, error) {
	list := splitList(v, ",")
	for _, a := range list {
		if _, err := ma.NewMultiaddr(a); err != nil {
			return nil, fmt.Errorf("%q: want multiaddrs, comma-separated: %w", a, err)
		}
	}
	return list, nil
}

func durationValue(v string) (any, error) {
	var d Duration
	if err := d.UnmarshalText([]byte(v)); err != nil {
		return nil, err
	}
	return d.String(), nil
}

func gweiValue(v string) (any, error) {
	if _, err := Gwei(v).Wei(); err != nil {
		return nil, err
	}
	return v, nil
}

func blocksValue(v string) (any, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q: want a number of blocks (0 or more)", v)
	}
	return n, nil
}

func urlValue(v string) (any, error) {
	if u, err := url.Parse(v); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%q: want a URL such as http://100.64.0.1:3001", v)
	}
	return v, nil
}

var configKeys = []configKey{
	{name: "listen", env: "CROW_LISTEN", get: func(c *Config) string { return c.Listen }, parse: listenValue},
	{name: "sync_listen", env: "CROW_SYNC_LISTEN", get: func(c *Config) string { return c.SyncListen }, parse: multiaddrValue},
	{name: "sync_announce", env: "CROW_SYNC_ANNOUNCE", get: func(c *Config) string { return strings.Join(c.SyncAnnounce, ",") }, parse: multiaddrList},
	{name: "sync_dial", env: "CROW_SYNC_DIAL", get: func(c *Config) string { return formatSyncDial(c.SyncDial) }},
	{name: "gateway_url", env: "CROW_GATEWAY_URL", get: func(c *Config) string { return c.GatewayURL }, parse: urlValue},
	{name: "log_level", env: "CROW_LOG_LEVEL", get: func(c *Config) string { return c.LogLevel }, parse: func(v string) (any, error) {
		switch l := strings.ToLower(v); l {
		case "debug", "info", "warn", "error":
			return l, nil
		}
		return nil, fmt.Errorf("%q: want debug, info, warn or error", v)
	}},
	{name: "min_free_mb", env: "CROW_MIN_FREE_MB", get: func(c *Config) string { return strconv.FormatInt(c.MinFreeMB, 10) }, parse: func(v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("%q: want a number of MiB, 0 for the default or -1 for no guard", v)
		}
		return n, nil
	}},
	{name: "memory_limit_mb", env: "CROW_MEMORY_LIMIT_MB", get: func(c *Config) string { return strconv.FormatInt(c.MemoryLimitMB, 10) }, parse: func(v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("%q: want a number of MiB, 0 for the default or -1 for none", v)
		}
		return n, nil
	}},
	{name: "chain.rpc_url", env: "CROW_CHAIN_RPC_URL", get: func(c *Config) string { return c.Chain.RPCURL }, parse: urlValue, secret: true},
	{name: "chain.contract", env: "CROW_CHAIN_CONTRACT", get: func(c *Config) string { return c.Chain.Contract }, parse: str},
	{name: "chain.key_file", env: "CROW_CHAIN_KEY_FILE", get: func(c *Config) string { return c.Chain.KeyFile }, parse: str},
	{name: "chain.max_fee_gwei", env: "CROW_CHAIN_MAX_FEE_GWEI", get: func(c *Config) string { return string(c.Chain.MaxFee) }, parse: gweiValue},
	{name: "chain.max_priority_fee_gwei", env: "CROW_CHAIN_MAX_PRIORITY_FEE_GWEI", get: func(c *Config) string { return string(c.Chain.MaxPriorityFee) }, parse: gweiValue},
	{name: "chain.confirmations", env: "CROW_CHAIN_CONFIRMATIONS", get: func(c *Config) string { return strconv.FormatUint(uint64(c.Chain.Confirmations), 10) }, parse: blocksValue},
	{name: "chain.replace_after", env: "CROW_CHAIN_REPLACE_AFTER", get: func(c *Config) string { return c.Chain.ReplaceAfter.String() }, parse: durationValue},
	{name: "chain.public_rpc_url", env: "CROW_CHAIN_PUBLIC_RPC_URL", get: func(c *Config) string { return c.Chain.PublicRPCURL }, parse: urlValue},
	{name: "chain.checkpoint.rpc_url", env: "CROW_CHECKPOINT_RPC_URL", get: func(c *Config) string { return c.Chain.Checkpoint.RPCURL }, parse: urlValue, secret: true},
	{name: "chain.checkpoint.key_file", env: "CROW_CHECKPOINT_KEY_FILE", get: func(c *Config) string { return c.Chain.Checkpoint.KeyFile }, parse: str},
	{name: "chain.checkpoint.contract", env: "CROW_CHECKPOINT_CONTRACT", get: func(c *Config) string { return c.Chain.Checkpoint.Contract }, parse: str},
	{name: "chain.checkpoint.interval", env: "CROW_CHECKPOINT_INTERVAL", get: func(c *Config) string { return c.Chain.Checkpoint.Interval.String() }, parse: durationValue},
	{name: "chain.checkpoint.confirmations", get: func(c *Config) string { return strconv.FormatUint(uint64(c.Chain.Checkpoint.Confirmations), 10) }, parse: blocksValue},
	{name: "chain.checkpoint.public_rpc_url", get: func(c *Config) string { return c.Chain.Checkpoint.PublicRPCURL }, parse: urlValue},
	{name: "chain.checkpoint.max_fee_gwei", get: func(c *Config) string { return string(c.Chain.Checkpoint.MaxFee) }, parse: gweiValue},
}

// ConfigKeys lists the keys of config.toml, in the order `crow config
// show` prints them (sync_dial's entries are set as sync_dial.INSTANCE_ID).
func ConfigKeys() []string {
	out := make([]string, len(configKeys))
	for i, k := range configKeys {
		out[i] = k.name
	}
	return out
}

func formatSyncDial(m map[string][]string) string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + "=" + strings.Join(m[id], ",")
	}
	return strings.Join(parts, ";")
}

// RedactURL keeps the scheme and host of an endpoint URL and hides the rest
// (an RPC provider's API key is in its path, query or user info).
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(redacted)"
	}
	if u.User == nil && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" {
		return s
	}
	return u.Scheme + "://" + u.Host + "/(redacted)"
}

// LoadConfigSources is LoadConfig that also says where each key's value
// came from (file or env; the caller marks the flags it applies).
func LoadConfigSources(dir string, lookupEnv func(string) (string, bool)) (Config, Sources, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	src := Sources{}
	if md, ok, err := readConfigMeta(dir); err != nil {
		return Config{}, nil, err
	} else if ok {
		for _, k := range configKeys {
			if md.IsDefined(strings.Split(k.name, ".")...) {
				src[k.name] = SourceFile
			}
		}
	}
	for _, k := range configKeys {
		if v, ok := lookupEnv(k.env); k.env != "" && ok && v != "" {
			src[k.name] = SourceEnv
		}
	}
	cfg, err := LoadConfig(dir, lookupEnv)
	if err != nil {
		return Config{}, nil, err
	}
	return cfg, src, nil
}

func readConfigMeta(dir string) (toml.MetaData, bool, error) {
	text, err := os.ReadFile(PathsOf(dir).ConfigFile())
	if errors.Is(err, fs.ErrNotExist) {
		return toml.MetaData{}, false, nil
	}
	if err != nil {
		return toml.MetaData{}, false, fmt.Errorf("reading config: %w", err)
	}
	var m map[string]any
	md, err := toml.Decode(string(text), &m)
	if err != nil {
		return toml.MetaData{}, false, fmt.Errorf("parsing %s: %w", PathsOf(dir).ConfigFile(), err)
	}
	return md, true, nil
}

// Settings lists c key by key with the source of each (src from
// LoadConfigSources; a key missing from it is a default), secrets
// redacted.
func Settings(c Config, src Sources) []Setting {
	out := make([]Setting, 0, len(configKeys))
	for _, k := range configKeys {
		s := Setting{Key: k.name, Value: k.get(&c), Source: src[k.name], Env: k.env}
		if s.Source == "" {
			s.Source = SourceDefault
		}
		if k.secret {
			s.Value = RedactURL(s.Value)
		}
		out = append(out, s)
	}
	return out
}

// ErrUnknownKey is returned by SetConfigValue for a key config.toml does
// not have.
var ErrUnknownKey = errors.New("unknown config key")

// SetConfigValue sets key to value in dir/config.toml (value "" removes the
// key: the default applies again), keeping the other keys, after checking
// the value as LoadConfig would and the whole file with it. The file is
// replaced atomically; nothing is written on an error. Comments in the file
// are not kept. It returns the file's path.
func SetConfigValue(dir, key, value string) (string, error) {
	path := PathsOf(dir).ConfigFile()
	var parse func(string) (any, error)
	tkey := strings.Split(key, ".")
	if id, ok := strings.CutPrefix(key, "sync_dial."); ok && id != "" && !strings.Contains(id, ".") {
		parse = multiaddrList
	} else {
		for _, k := range configKeys {
			if k.name == key && k.parse != nil {
				parse = k.parse
			}
		}
	}
	if parse == nil {
		hint := ""
		if key == "sync_dial" {
			hint = " (set one peer's addresses with sync_dial.INSTANCE_ID)"
		}
		return "", fmt.Errorf("%w %q%s: known keys are %s, sync_dial.INSTANCE_ID", ErrUnknownKey, key, hint, strings.Join(settable(), ", "))
	}
	doc := map[string]any{}
	text, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("reading config: %w", err)
	default:
		if _, err := toml.Decode(string(text), &doc); err != nil {
			return "", fmt.Errorf("parsing %s: %w (fix it by hand first)", path, err)
		}
	}
	value = strings.TrimSpace(value)
	if value == "" {
		unsetPath(doc, tkey)
	} else {
		v, err := parse(value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		if err := setPath(doc, tkey, v); err != nil {
			return "", err
		}
	}
	var buf strings.Builder
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("encoding %s: %w", path, err)
	}
	if buf.Len() > 0 && !strings.HasSuffix(buf.String(), "\n") {
		buf.WriteString("\n")
	}
	if _, err := parseConfigText(buf.String(), path); err != nil {
		return "", err
	}
	if err := AtomicWrite(path, []byte(buf.String()), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

func settable() []string {
	var out []string
	for _, k := range configKeys {
		if k.parse != nil {
			out = append(out, k.name)
		}
	}
	return out
}

func setPath(doc map[string]any, path []string, v any) error {
	for i, p := range path[:len(path)-1] {
		next, ok := doc[p].(map[string]any)
		if !ok {
			if _, exists := doc[p]; exists {
				return fmt.Errorf("%s is not a table in config.toml", strings.Join(path[:i+1], "."))
			}
			next = map[string]any{}
			doc[p] = next
		}
		doc = next
	}
	doc[path[len(path)-1]] = v
	return nil
}

func unsetPath(doc map[string]any, path []string) {
	if len(path) == 1 {
		delete(doc, path[0])
		return
	}
	if next, ok := doc[path[0]].(map[string]any); ok {
		unsetPath(next, path[1:])
		if len(next) == 0 {
			delete(doc, path[0])
		}
	}
}
