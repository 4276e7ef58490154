package anchor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// publicRPCEnv is an embedded chain with one anchored root, served by a
// PublicRPC over HTTP.
type publicRPCEnv struct {
	chain    *Embedded
	key      *ecdsa.PrivateKey
	account  common.Address
	contract common.Address
	anchored Receipt // the RootAnchored transaction
	p        *PublicRPC
	url      string
}

func newPublicRPCEnv(t *testing.T, lim rpcLimits) *publicRPCEnv {
	t.Helper()
	key, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	e, err := OpenEmbedded(t.TempDir(), key, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.AnchorRoot(ctx, [32]byte(ethcrypto.Keccak256([]byte("public rpc root"))), 1)
	if err != nil {
		t.Fatalf("AnchorRoot: %v", err)
	}
	p := newPublicRPC(e, slog.New(slog.DiscardHandler), lim)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return &publicRPCEnv{chain: e, key: key, account: ethcrypto.PubkeyToAddress(key.PublicKey),
		contract: common.HexToAddress(e.Info().Contract), anchored: r, p: p, url: srv.URL}
}

func (env *publicRPCEnv) dial(t *testing.T) *ethclient.Client {
	t.Helper()
	ec, err := ethclient.Dial(env.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	return ec
}

// post sends body with Content-Type application/json.
func (env *publicRPCEnv) post(t *testing.T, body string) (*http.Response, []byte) {
	t.Helper()
	return env.send(t, "POST", body, map[string]string{"Content-Type": "application/json"})
}

func (env *publicRPCEnv) send(t *testing.T, method, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, env.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// rpcAnswer is one JSON-RPC response object.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

func decodeAnswer(t *testing.T, b []byte) rpcAnswer {
	t.Helper()
	var a rpcAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.JSONRPC != "2.0" {
		t.Fatalf("not a JSON-RPC 2.0 answer: %s", b)
	}
	return a
}

func decodeBatch(t *testing.T, b []byte) []rpcAnswer {
	t.Helper()
	var as []rpcAnswer
	if err := json.Unmarshal(b, &as); err != nil {
		t.Fatalf("not a batch answer: %s", b)
	}
	return as
}

// wantRPCError fails unless err is a JSON-RPC error with code whose message
// contains want.
func wantRPCError(t *testing.T, what string, err error, code int, want string) {
	t.Helper()
	re, ok := errors.AsType[rpc.Error](err)
	if !ok {
		t.Errorf("%s: error %v, want JSON-RPC error %d", what, err, code)
		return
	}
	if re.ErrorCode() != code || !strings.Contains(re.Error(), want) {
		t.Errorf("%s: error %d %q, want %d containing %q", what, re.ErrorCode(), re.Error(), code, want)
	}
}

// TestPublicRPCServesStandardReads drives the endpoint with go-ethereum's
// own client, as a third party would: network, head, the contract's code
// and owner, the anchoring transaction, its receipt, block and logs.
func TestPublicRPCServesStandardReads(t *testing.T) {
	env := newPublicRPCEnv(t, defaultRPCLimits)
	ec := env.dial(t)
	ctx := context.Background()

	id, err := ec.ChainID(ctx)
	if err != nil || id.Uint64() != env.chain.Info().ChainID {
		t.Fatalf("ChainID = %v, %v; want %d", id, err, env.chain.Info().ChainID)
	}
	head, err := ec.BlockNumber(ctx)
	if err != nil || head != env.anchored.Block {
		t.Fatalf("BlockNumber = %d, %v; want %d", head, err, env.anchored.Block)
	}
	code, err := ec.CodeAt(ctx, env.contract, nil)
	if err != nil || len(code) == 0 {
		t.Fatalf("CodeAt(contract) = %d bytes, %v", len(code), err)
	}
	data, _ := contractABI.Pack("owner")
	out, err := ec.CallContract(ctx, ethereum.CallMsg{To: &env.contract, Data: data}, nil)
	if err != nil || common.BytesToAddress(out) != env.account {
		t.Fatalf("owner() = %x, %v; want %s", out, err, env.account.Hex())
	}
	if _, err := ec.EstimateGas(ctx, ethereum.CallMsg{To: &env.contract, Data: data}); err != nil {
		t.Errorf("EstimateGas: %v", err)
	}
	if n, err := ec.NonceAt(ctx, env.account, nil); err != nil || n != 2 {
		t.Errorf("NonceAt = %d, %v; want 2 (deploy, anchor)", n, err)
	}
	if bal, err := ec.BalanceAt(ctx, env.account, nil); err != nil || bal.Sign() <= 0 {
		t.Errorf("BalanceAt = %v, %v", bal, err)
	}
	if _, err := ec.SuggestGasPrice(ctx); err != nil {
		t.Errorf("SuggestGasPrice: %v", err)
	}
	if _, err := ec.SuggestGasTipCap(ctx); err != nil {
		t.Errorf("SuggestGasTipCap: %v", err)
	}

	// The deployment is the account's first transaction: find it in the
	// chain's blocks, then its receipt names the contract.
	var deploy *types.Transaction
	for n := uint64(1); n <= head && deploy == nil; n++ {
		b, err := ec.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatalf("BlockByNumber(%d): %v", n, err)
		}
		for _, tx := range b.Transactions() {
			if tx.To() == nil && tx.Nonce() == 0 {
				deploy = tx
			}
		}
	}
	if deploy == nil {
		t.Fatal("no deployment transaction in the chain")
	}
	rcpt, err := ec.TransactionReceipt(ctx, deploy.Hash())
	if err != nil || rcpt.ContractAddress != env.contract || rcpt.Status != 1 {
		t.Fatalf("TransactionReceipt(deploy) = %+v, %v", rcpt, err)
	}
	if tx, pending, err := ec.TransactionByHash(ctx, deploy.Hash()); err != nil || pending || tx.Hash() != deploy.Hash() {
		t.Fatalf("TransactionByHash(deploy) = %v, %v, %v", tx, pending, err)
	}
	hdr, err := ec.HeaderByNumber(ctx, nil)
	if err != nil || hdr.Number.Uint64() != head || hdr.Hash().Hex() != env.anchored.BlockHash {
		t.Fatalf("HeaderByNumber(latest) = %v, %v; want block %d %s", hdr, err, head, env.anchored.BlockHash)
	}
	if b, err := ec.BlockByHash(ctx, hdr.Hash()); err != nil || b.Transactions()[0].Hash().Hex() != env.anchored.TxHash {
		t.Fatalf("BlockByHash = %v, %v", b, err)
	}

	// Logs: the RootAnchored event, by range and by block hash.
	rootAnchored := contractABI.Events["RootAnchored"].ID
	q := ethereum.FilterQuery{Addresses: []common.Address{env.contract}, Topics: [][]common.Hash{{rootAnchored}}}
	for name, fq := range map[string]ethereum.FilterQuery{
		"default range":         q,
		"0..latest":             withRange(q, big.NewInt(0), nil),
		"by block hash":         {BlockHash: &[]common.Hash{hdr.Hash()}[0], Addresses: q.Addresses, Topics: q.Topics},
		"earliest..latest tags": withRange(q, big.NewInt(rpc.EarliestBlockNumber.Int64()), big.NewInt(rpc.LatestBlockNumber.Int64())),
	} {
		logs, err := ec.FilterLogs(ctx, fq)
		if err != nil || len(logs) != 1 || logs[0].TxHash.Hex() != env.anchored.TxHash {
			t.Errorf("FilterLogs %s = %v, %v; want the one RootAnchored", name, logs, err)
		}
	}
	// 10,000 blocks pass the bound (and this short chain's node refuses a
	// range past its head); one more is refused before the node sees it.
	_, err = ec.FilterLogs(ctx, withRange(q, big.NewInt(0), big.NewInt(9_999)))
	wantRPCError(t, "FilterLogs 0..9999", err, codeInvalidParams, "beyond current head")
	for name, fq := range map[string]ethereum.FilterQuery{
		"10,001 blocks":           withRange(q, big.NewInt(0), big.NewInt(10_000)),
		"past the head":           withRange(q, new(big.Int).SetUint64(head), new(big.Int).SetUint64(head+20_000)),
		"earliest to a far block": withRange(q, big.NewInt(rpc.EarliestBlockNumber.Int64()), big.NewInt(1<<40)),
	} {
		_, err := ec.FilterLogs(ctx, fq)
		wantRPCError(t, "FilterLogs "+name, err, codeLimitExceeded, "at most 10000 blocks")
	}
}

// TestPublicRPCLogTags: eth_getLogs ranges given by tag, and field names in
// any case (the node reads them so), are bounded as numbers are.
func TestPublicRPCLogTags(t *testing.T) {
	env := newPublicRPCEnv(t, defaultRPCLimits)
	for _, tc := range []struct {
		filter string
		code   int // 0: the one RootAnchored log; 1: an answer (the simulated beacon finalizes late)
	}{
		{`{"fromBlock":"earliest","toBlock":"latest"}`, 0},
		{`{"fromBlock":"earliest","toBlock":"finalized"}`, 1},
		{`{"fromBlock":"0x0","toBlock":"safe"}`, 1},
		{`{"toBlock":"latest"}`, 0}, // from latest: the anchoring block is the head
		{`{"fromBlock":"earliest","toBlock":"0x2710"}`, codeLimitExceeded},
		{`{"FROMBLOCK":"0x0","ToBlock":"0x2710"}`, codeLimitExceeded},
		{`{"fromBlock":"0x0","toBlock":"0x5","fromblock":"0x0","TOBLOCK":"0x2710"}`, codeLimitExceeded},
		{`{"fromBlock":"earliest","toBlock":"pending"}`, codeInvalidParams},                     // the node's refusal
		{`{"fromBlock":"0x2","toBlock":"0x1"}`, codeInvalidParams},                              // the node's refusal
		{`{"blockHash":"0x01","fromBlock":"0x0"}`, codeInvalidParams},                           // bad hash
		{`{"blockHash":"` + env.anchored.BlockHash + `","fromBlock":"0x0"}`, codeInvalidParams}, // the node's refusal
	} {
		_, b := env.post(t, `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[`+tc.filter+`]}`)
		a := decodeAnswer(t, b)
		switch {
		case tc.code == 0 && (a.Error != nil || bytes.Count(a.Result, []byte(`"logIndex"`)) != 1):
			t.Errorf("%s: %s; want one log", tc.filter, b)
		case tc.code == 1 && (a.Error != nil || a.Result[0] != '['):
			t.Errorf("%s: %s; want logs", tc.filter, b)
		case tc.code < 0 && (a.Error == nil || a.Error.Code != tc.code):
			t.Errorf("%s: %s; want error %d", tc.filter, b, tc.code)
		}
	}
}

func withRange(q ethereum.FilterQuery, from, to *big.Int) ethereum.FilterQuery {
	q.FromBlock, q.ToBlock = from, to
	return q
}

// TestPublicRPCRefusesWrites: a validly signed transaction is refused and the
// account's nonce and the head do not move; every write, admin, debug, dev,
// personal, txpool, engine and filter method is refused with -32601, though
// the node behind serves some of them in process.
func TestPublicRPCRefusesWrites(t *testing.T) {
	env := newPublicRPCEnv(t, defaultRPCLimits)
	ec := env.dial(t)
	ctx := context.Background()
	nonce, err := ec.PendingNonceAt(ctx, env.account)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := ec.BlockNumber(ctx)
	tip := big.NewInt(1)
	tx, err := types.SignNewTx(env.key, types.LatestSignerForChainID(new(big.Int).SetUint64(env.chain.Info().ChainID)),
		&types.DynamicFeeTx{Nonce: nonce, GasTipCap: tip, GasFeeCap: big.NewInt(1e12), Gas: 21_000, To: &env.account, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "SendTransaction", ec.SendTransaction(ctx, tx), codeMethodNotFound, "public and read-only")
	time.Sleep(100 * time.Millisecond) // a block would be sealed within milliseconds
	direct := ethclient.NewClient(env.chain.RPCClient())
	if n, err := direct.PendingNonceAt(ctx, env.account); err != nil || n != nonce {
		t.Errorf("the nonce moved: %d, %v; want %d", n, err, nonce)
	}
	// The head alone is no witness: the dev beacon seals a block for every pool
	// event, and one that arrives late (the setup's own transactions, on a busy
	// machine) seals an empty block. What must not happen is a block holding a
	// transaction after the refusal.
	h, err := direct.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for n := head + 1; n <= h; n++ {
		b, err := direct.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		if k := len(b.Transactions()); k != 0 {
			t.Errorf("the head moved to %d, block %d holds %d transactions; want none since %d", h, n, k, head)
		}
	}
	if _, _, err := direct.TransactionByHash(ctx, tx.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Errorf("the refused transaction is known to the node: %v", err)
	}

	for _, m := range []struct {
		method string
		params string
	}{
		{"eth_sendRawTransaction", `["0x00"]`},
		{"eth_sendTransaction", fmt.Sprintf(`[{"from":%q,"to":%q,"value":"0x1"}]`, env.account.Hex(), env.account.Hex())},
		{"eth_sign", fmt.Sprintf(`[%q,"0x00"]`, env.account.Hex())},
		{"eth_signTransaction", `[{}]`},
		{"eth_signTypedData_v4", `[]`},
		{"eth_accounts", `[]`},
		{"personal_unlockAccount", fmt.Sprintf(`[%q,"",0]`, env.account.Hex())},
		{"personal_sendTransaction", `[{},""]`},
		{"debug_traceTransaction", fmt.Sprintf(`[%q]`, env.anchored.TxHash)},
		{"debug_setHead", `["0x1"]`},
		{"admin_peers", `[]`},
		{"admin_nodeInfo", `[]`},
		{"admin_addPeer", `["enode://x"]`},
		{"miner_setGasLimit", `["0x1"]`},
		{"dev_setFeeRecipient", fmt.Sprintf(`[%q]`, env.account.Hex())},
		{"dev_addWithdrawal", `[{}]`},
		{"txpool_content", `[]`},
		{"txpool_status", `[]`},
		{"engine_forkchoiceUpdatedV3", `[{},null]`},
		{"eth_subscribe", `["newHeads"]`},
		{"eth_newFilter", `[{}]`},
		{"eth_newBlockFilter", `[]`},
		{"eth_getFilterChanges", `["0x1"]`},
		{"rpc_modules", `[]`},
		{"no_suchMethod", `[]`},
	} {
		_, b := env.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, m.method, m.params))
		a := decodeAnswer(t, b)
		if string(a.ID) != "7" || a.Error == nil || a.Error.Code != codeMethodNotFound || !strings.Contains(a.Error.Message, "public and read-only") || a.Result != nil {
			t.Errorf("%s: %s; want error -32601 public and read-only", m.method, b)
		}
	}
	// The node does serve these in process: the allow-list is what keeps
	// them from the public.
	var status map[string]any
	if err := env.chain.RPCClient().CallContext(ctx, &status, "txpool_status"); err != nil {
		t.Errorf("txpool_status in process: %v", err)
	}
	var peers []any
	if err := env.chain.RPCClient().CallContext(ctx, &peers, "admin_peers"); err != nil {
		t.Errorf("admin_peers in process: %v", err)
	}
}

// TestPublicRPCWireRules: JSON-RPC 2.0 framing over HTTP and the bounds.
func TestPublicRPCWireRules(t *testing.T) {
	env := newPublicRPCEnv(t, defaultRPCLimits)
	wantChainID := fmt.Sprintf(`"0x%x"`, env.chain.Info().ChainID)

	// Ids are echoed as sent; a result passes through as the node wrote it.
	for _, id := range []string{`"abc"`, `7`, `-1.5e3`, `null`} {
		resp, b := env.post(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"eth_chainId"}`)
		a := decodeAnswer(t, b)
		if resp.StatusCode != 200 || string(a.ID) != id || string(a.Result) != wantChainID {
			t.Errorf("id %s: %d %s", id, resp.StatusCode, b)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("id %s: headers %v", id, resp.Header)
		}
	}
	var direct json.RawMessage
	if err := env.chain.RPCClient().CallContext(context.Background(), &direct, "eth_getBlockByNumber", "0x1", true); err != nil {
		t.Fatal(err)
	}
	_, b := env.post(t, `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x1",true]}`)
	if a := decodeAnswer(t, b); !bytes.Equal(a.Result, direct) {
		t.Errorf("block 1 through the endpoint differs from the node's answer:\n%s\n%s", a.Result, direct)
	}

	// A batch: answers in order, ids echoed, errors in place, notifications
	// unanswered; 20 calls is the most.
	var calls []string
	for i := range 19 {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"eth_chainId"}`, i))
	}
	calls = append(calls, `{"jsonrpc":"2.0","id":"w","method":"eth_sendRawTransaction","params":["0x00"]}`)
	_, b = env.post(t, "["+strings.Join(calls, ",")+"]")
	as := decodeBatch(t, b)
	if len(as) != 20 || as[19].Error == nil || as[19].Error.Code != codeMethodNotFound || string(as[19].ID) != `"w"` {
		t.Fatalf("batch of 20: %s", b)
	}
	for i, a := range as[:19] {
		if string(a.ID) != fmt.Sprint(i) || string(a.Result) != wantChainID {
			t.Errorf("batch answer %d: %+v", i, a)
		}
	}
	_, b = env.post(t, "["+strings.Join(append(calls, calls[0]), ",")+"]")
	if a := decodeAnswer(t, b); a.Error == nil || a.Error.Code != codeInvalidRequest || !strings.Contains(a.Error.Message, "batch too large") {
		t.Errorf("batch of 21: %s", b)
	}
	_, b = env.post(t, `[{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}]`)
	if as := decodeBatch(t, b); len(as) != 1 || string(as[0].ID) != "2" {
		t.Errorf("batch with a notification: %s", b)
	}
	resp, b := env.post(t, `{"jsonrpc":"2.0","method":"eth_chainId"}`)
	if resp.StatusCode != http.StatusNoContent || len(b) != 0 {
		t.Errorf("a notification: %d %q", resp.StatusCode, b)
	}

	// Malformed bodies.
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"`, codeParseError},
		{`not json`, codeParseError},
		{``, codeParseError},
		{`[]`, codeInvalidRequest},
		{`"eth_chainId"`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1}`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":3}`, codeInvalidRequest},
		{`{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":{},"method":"eth_chainId"}`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":{"address":"0x0"}}`, codeInvalidParams},
		{`{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"yesterday"}]}`, codeInvalidParams},
	} {
		resp, b := env.post(t, tc.body)
		a := decodeAnswer(t, b)
		if resp.StatusCode != 200 || a.Error == nil || a.Error.Code != tc.code {
			t.Errorf("body %q: %d %s; want error %d", tc.body, resp.StatusCode, b, tc.code)
		}
	}
	_, b = env.post(t, `[1,"x"]`)
	if as := decodeBatch(t, b); len(as) != 2 || as[0].Error.Code != codeInvalidRequest || string(as[1].ID) != "null" {
		t.Errorf("batch of non-objects: %s", b)
	}

	// Oversize bodies: 413, with and without a Content-Length.
	big := `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"data":"0x` + strings.Repeat("00", 70<<10) + `"},"latest"]}`
	resp, b = env.post(t, big)
	if a := decodeAnswer(t, b); resp.StatusCode != http.StatusRequestEntityTooLarge || a.Error == nil || !strings.Contains(a.Error.Message, "larger than") {
		t.Errorf("oversize body: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("POST", env.url, io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != http.StatusRequestEntityTooLarge || decodeAnswer(t, b).Error == nil {
		t.Errorf("oversize chunked body: %d %s", r2.StatusCode, b)
	}

	// HTTP methods and content types; the CORS preflight.
	resp, b = env.send(t, "GET", "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "POST") || decodeAnswer(t, b).Error == nil {
		t.Errorf("GET: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	resp, b = env.send(t, "POST", `{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`, map[string]string{"Content-Type": "text/plain"})
	if resp.StatusCode != http.StatusUnsupportedMediaType || decodeAnswer(t, b).Error == nil {
		t.Errorf("text/plain: %d %s", resp.StatusCode, b)
	}
	resp, _ = env.send(t, "OPTIONS", "", map[string]string{"Origin": "https://verifier.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") || resp.Header.Get("Access-Control-Allow-Headers") != "content-type" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestPublicRPCLimits: in-flight requests beyond the limit get a 429 at once,
// and results past the response budget an error.
func TestPublicRPCLimits(t *testing.T) {
	lim := defaultRPCLimits
	lim.maxInFlight = 2
	lim.maxResponse = 200
	env := newPublicRPCEnv(t, lim)

	env.p.slots <- struct{}{}
	env.p.slots <- struct{}{}
	start := time.Now()
	resp, b := env.post(t, `[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}]`)
	as := decodeBatch(t, b)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(as) != 2 ||
		as[1].Error == nil || as[1].Error.Code != codeLimitExceeded || time.Since(start) > 2*time.Second {
		t.Errorf("busy: %d %s", resp.StatusCode, b)
	}
	<-env.p.slots
	<-env.p.slots

	_, b = env.post(t, `[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_getBlockByNumber","params":["latest",true]}]`)
	as = decodeBatch(t, b)
	if len(as) != 2 || as[0].Error != nil || as[1].Error == nil || as[1].Error.Code != codeTooLarge {
		t.Errorf("past the response budget: %s", b)
	}
}

// TestPublicRPCWindowedLogs: a range read window by window answers exactly
// what the node answers for the whole range, and gives up past the budget.
func TestPublicRPCWindowedLogs(t *testing.T) {
	lim := defaultRPCLimits
	lim.logWindow = 1
	env := newPublicRPCEnv(t, lim)
	ctx := context.Background()
	if _, err := env.chain.AnchorRoot(ctx, [32]byte(ethcrypto.Keccak256([]byte("second root"))), 3); err != nil {
		t.Fatal(err)
	}
	filter := fmt.Sprintf(`{"fromBlock":"0x0","toBlock":"latest","address":%q}`, env.contract.Hex())
	var want json.RawMessage
	if err := env.chain.RPCClient().CallContext(ctx, &want, "eth_getLogs", json.RawMessage(filter)); err != nil {
		t.Fatal(err)
	}
	_, b := env.post(t, `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[`+filter+`]}`)
	a := decodeAnswer(t, b)
	if a.Error != nil || !bytes.Equal(a.Result, want) || bytes.Count(want, []byte(`"logIndex"`)) != 2 {
		t.Errorf("windowed logs:\n%s\nthe node's:\n%s", a.Result, want)
	}

	lim.maxResponse = 600
	small := newPublicRPC(env.chain, nil, lim)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[`+filter+`]}`))
	req.Header.Set("Content-Type", "application/json")
	small.ServeHTTP(rec, req)
	if a := decodeAnswer(t, rec.Body.Bytes()); a.Error == nil || a.Error.Code != codeLimitExceeded || !strings.Contains(a.Error.Message, "narrow the range") {
		t.Errorf("windowed logs past the budget: %s", rec.Body.Bytes())
	}
}
