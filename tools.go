//go:build tools

// Package tools pins the module's dependencies until the packages that use them land.
package tools

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/blevesearch/bleve/v2"
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/ethereum/go-ethereum/ethclient"
	_ "github.com/libp2p/go-libp2p"
	_ "github.com/mark3labs/mcp-go/client"
	_ "github.com/mark3labs/mcp-go/server"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "golang.org/x/crypto/chacha20poly1305"
	_ "golang.org/x/crypto/hkdf"
	_ "golang.org/x/crypto/scrypt"
)
