package home

import (
	"os"
	"path/filepath"
	"strings"
)

// File and directory names inside $CROW_HOME. Frozen: scripts rely on them.
const (
	IdentityName    = "identity"
	InstanceIDName  = "instance-id"
	InstanceName    = "instance.json"
	InstanceKeyName = "instance.key"
	CertificateName = "certificate"
	JoinName        = "join.json"
	APIKeyName      = "api-key"
	APIKeyHashName  = "api-key.sha256"
	ConfigName      = "config.toml"
	GatewayAddrName = "gateway.addr"
	InstancesName   = "instances.json"
	DBName          = "db"
	IndexName       = "index"
	ChainName       = "chain"
	LockName        = "serve.lock"
	ChainRPCName    = "chain-rpc.json"
	CheckpointName  = "checkpoint-rpc.json"
)

// Resolve picks the data directory: flagValue (--home) if set, else
// $CROW_HOME, else ~/.crow (or ".crow" in the working directory if the user's
// home directory is unknown). A leading "~/" is expanded.
func Resolve(flagValue string) string {
	return resolve(flagValue, os.Getenv, os.UserHomeDir)
}

func resolve(flagValue string, getenv func(string) string, userHome func() (string, error)) string {
	dir := flagValue
	if dir == "" {
		dir = getenv("CROW_HOME")
	}
	if dir == "" {
		dir = "~/.crow"
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		if h, err := userHome(); err == nil && h != "" {
			dir = filepath.Join(h, dir[1:])
		} else {
			dir = strings.TrimPrefix(strings.TrimPrefix(dir, "~"), "/")
			if dir == "" {
				dir = "."
			}
		}
	}
	return filepath.Clean(dir)
}

// Paths names the files of one data directory. The zero value is not useful;
// use PathsOf.
type Paths struct {
	Root string // the $CROW_HOME directory
}

// PathsOf returns the layout rooted at dir.
func PathsOf(dir string) Paths { return Paths{Root: dir} }

func (p Paths) join(name string) string { return filepath.Join(p.Root, name) }

// IdentityFile is the path of the master seed.
func (p Paths) IdentityFile() string { return p.join(IdentityName) }

// InstanceIDFile is the path of the instance id.
func (p Paths) InstanceIDFile() string { return p.join(InstanceIDName) }

// InstanceFile is the path of instance.json (name and role).
func (p Paths) InstanceFile() string { return p.join(InstanceName) }

// InstanceKeyFile is the path of instance.key, the own Ed25519 key of an
// instance that joined by invitation.
func (p Paths) InstanceKeyFile() string { return p.join(InstanceKeyName) }

// CertificateFile is the path of this instance's membership certificate.
func (p Paths) CertificateFile() string { return p.join(CertificateName) }

// JoinFile is the path of join.json, the enrollment a joined satellite has
// not completed yet.
func (p Paths) JoinFile() string { return p.join(JoinName) }

// APIKeyFile is the path of the plaintext owner API key.
func (p Paths) APIKeyFile() string { return p.join(APIKeyName) }

// APIKeyHashFile is the path of the owner API key's SHA-256.
func (p Paths) APIKeyHashFile() string { return p.join(APIKeyHashName) }

// ConfigFile is the path of config.toml.
func (p Paths) ConfigFile() string { return p.join(ConfigName) }

// GatewayAddrFile is the path of gateway.addr.
func (p Paths) GatewayAddrFile() string { return p.join(GatewayAddrName) }

// InstancesFile is the path of the registry's instances.json mirror.
func (p Paths) InstancesFile() string { return p.join(InstancesName) }

// DBDir is the badger database directory.
func (p Paths) DBDir() string { return p.join(DBName) }

// IndexDir is the full-text index directory.
func (p Paths) IndexDir() string { return p.join(IndexName) }

// LockFile is the file a running daemon holds locked (see Paths.Lock).
func (p Paths) LockFile() string { return p.join(LockName) }

// ChainDir is the embedded dev chain's directory.
func (p Paths) ChainDir() string { return p.join(ChainName) }

// ChainRPCFile is where home keeps the contract it deployed on the [chain]
// rpc_url chain (see ContractRecord).
func (p Paths) ChainRPCFile() string { return p.join(ChainRPCName) }

// CheckpointRPCFile is where home keeps the contract it deployed on the
// [chain.checkpoint] chain (see ContractRecord).
func (p Paths) CheckpointRPCFile() string { return p.join(CheckpointName) }
