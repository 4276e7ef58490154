package gateway

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
)

// Without a chain, POST /v1/chain/rpc is public and answers 404 with the
// JSON error; GET is a 405.
func TestChainRPCWithoutAChain(t *testing.T) {
	s := bareServer(t)
	w := serve(s, "POST", ChainRPCPath, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`))
	if w.Code != http.StatusNotFound || !strings.Contains(errorOf(t, w), "no chain RPC") {
		t.Errorf("POST %s without a chain: %d %s", ChainRPCPath, w.Code, w.Body.String())
	}
	w = serve(s, "GET", ChainRPCPath, "", nil)
	if w.Code != http.StatusMethodNotAllowed || !strings.Contains(w.Header().Get("Allow"), "POST") {
		t.Errorf("GET %s: %d %v", ChainRPCPath, w.Code, w.Header())
	}
	errorOf(t, w)
}

// With the embedded chain behind anchor.PublicRPC, the gateway serves it to
// a standard client without a key, from a foreign origin too; the Host check
// and the query refusal still hold.
func TestChainRPCServesTheChain(t *testing.T) {
	key, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	chain, err := anchor.OpenEmbedded(t.TempDir(), key, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chain.Close() })
	logger := slog.New(slog.DiscardHandler)
	s := New(Config{
		Logger:   logger,
		App:      app.New(app.Deps{Logger: logger, Self: Self{InstanceID: "inst-1", Name: "home", Role: "home", Version: "test"}}),
		Keys:     NewKeyChecker(sha256.Sum256([]byte(ownerKey))),
		ChainRPC: anchor.NewPublicRPC(chain, logger),
	})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := rpc.DialOptions(ctx, srv.URL+ChainRPCPath, rpc.WithHeader("Origin", "https://dapp.example"), rpc.WithHeader("Sec-Fetch-Site", "cross-site"))
	if err != nil {
		t.Fatal(err)
	}
	ec := ethclient.NewClient(rc)
	defer ec.Close()
	if id, err := ec.ChainID(ctx); err != nil || id.Uint64() != chain.Info().ChainID {
		t.Fatalf("ChainID through the gateway = %v, %v", id, err)
	}
	if code, err := ec.CodeAt(ctx, common.HexToAddress(chain.Info().Contract), nil); err != nil || len(code) == 0 {
		t.Fatalf("CodeAt through the gateway = %d bytes, %v", len(code), err)
	}

	send := func(method, target, host, body string, h map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		return w
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`
	if w := send("POST", ChainRPCPath, "evil.example", call, nil); w.Code != http.StatusForbidden {
		t.Errorf("a rebound Host: %d %s", w.Code, w.Body.String())
	}
	if w := send("POST", ChainRPCPath+"?x=1", "127.0.0.1:3001", call, nil); w.Code != http.StatusBadRequest {
		t.Errorf("a query string: %d %s", w.Code, w.Body.String())
	}
	w := send("OPTIONS", ChainRPCPath, "127.0.0.1:3001", "", map[string]string{"Origin": "https://dapp.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight: %d %v", w.Code, w.Header())
	}
	w = send("POST", ChainRPCPath, "127.0.0.1:3001", `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x00"]}`, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"code":-32601`) {
		t.Errorf("a write through the gateway: %d %s", w.Code, w.Body.String())
	}
}
