package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ethcrypto "github.com/ethereum/go-ethereum/crypto"

	"github.com/crow-sync/crow/anchor"
)

// openCheckpoint deploys a contract on an external chain that has none
// configured, binds an existing one when it is configured, reads the key
// from key_file, and refuses to run without a key.
func TestOpenCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ext, err := anchor.OpenEmbedded(t.TempDir(), key, nil, anchor.WithLoopbackRPC("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	url := ext.Info().RPCURL
	keyFile := filepath.Join(t.TempDir(), "checkpoint.key")
	if err := ethcrypto.SaveECDSA(keyFile, key); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)

	deployed, err := openCheckpoint(ctx, url, keyFile, "", nil, log)
	if err != nil {
		t.Fatalf("deploying: %v", err)
	}
	defer deployed.Close()
	info := deployed.Info()
	if info.Kind != anchor.KindRPC || info.Contract == ext.Info().Contract || info.Account != ext.Info().Account {
		t.Fatalf("deployed checkpoint chain = %+v", info)
	}
	again, err := openCheckpoint(ctx, url, "", info.Contract, key, log) // the fallback key
	if err != nil {
		t.Fatalf("binding the configured contract: %v", err)
	}
	defer again.Close()
	if again.Info().Contract != info.Contract {
		t.Fatalf("bound %s, want %s", again.Info().Contract, info.Contract)
	}
	if _, err := openCheckpoint(ctx, url, "", info.Contract, nil, log); err == nil || !strings.Contains(err.Error(), "key_file") {
		t.Fatalf("no key: %v", err)
	}
}
