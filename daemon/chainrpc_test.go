package daemon_test

import (
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/daemon"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/sync/transport"
)

// TestChainRPCWiring: a home on the embedded chain serves its JSON-RPC at
// /v1/chain/rpc, read-only, to a standard client with no key; an instance
// without a chain answers 404.
func TestChainRPCWiring(t *testing.T) {
	key, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, withChain := range []bool{true, false} {
		h := newHome(t)
		settings := home.DefaultConfig()
		settings.Listen = "127.0.0.1:0"
		d, err := daemon.New(daemon.Config{Home: h, Settings: settings, Version: "test"}, daemon.Deps{
			Logger:        slog.New(slog.DiscardHandler),
			Transport:     daemon.MemTransport(transport.NewMemNetwork()),
			InMemoryStore: true,
			Chain: func(_ context.Context, log *slog.Logger) (anchor.Chain, error) {
				if !withChain {
					return nil, nil
				}
				return openTestEmbedded(t, key, log)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Serve(sctx) }()
		t.Cleanup(func() {
			stop()
			<-done
		})
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if addr, _ := h.ReadGatewayAddr(); addr != "" {
				break
			}
		}
		url := d.GatewayURL() + "/v1/chain/rpc"
		if !withChain {
			resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"error"`) {
				t.Errorf("without a chain: %d %s", resp.StatusCode, b)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ec, err := ethclient.DialContext(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := ec.ChainID(ctx); err != nil || id.Uint64() != 1337 {
			t.Errorf("ChainID at %s = %v, %v", url, id, err)
		}
		if _, err := ec.BlockNumber(ctx); err != nil {
			t.Errorf("BlockNumber: %v", err)
		}
		ec.Close()
		cancel()
	}
}

func openTestEmbedded(t *testing.T, key *ecdsa.PrivateKey, log *slog.Logger) (anchor.Chain, error) {
	return anchor.OpenEmbedded(t.TempDir(), key, log)
}
