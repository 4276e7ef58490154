package anchor

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/crow-sync/crow/clock"
)

// The embedded chain's base fee falls by 1/8 per empty block down to 7 wei
// and no lower (7/8 rounds to 0), and its miner skips tips under 0.001 gwei:
// a transaction priced at 1 wei is never mined there.
var senderUnminable = big.NewInt(1)

// senderEnv is an embedded chain, its funded key, and a call that is a valid
// no-op transaction: owner() on the deployed contract.
type senderEnv struct {
	e    *Embedded
	key  *ecdsa.PrivateKey
	to   common.Address
	data []byte
	logs *senderLogs
}

func newSenderEnv(t *testing.T) senderEnv {
	t.Helper()
	key, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	logs := &senderLogs{}
	e, err := OpenEmbedded(t.TempDir(), key, slog.New(logs))
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	data, err := contractABI.Pack("owner")
	if err != nil {
		t.Fatal(err)
	}
	return senderEnv{e: e, key: key, to: common.HexToAddress(e.Info().Contract), data: data, logs: logs}
}

func (env senderEnv) sender(key *ecdsa.PrivateKey, p TxPolicy) *sender {
	return newSender(env.e.ec, key, env.e.chainID, p, slog.New(env.logs))
}

func senderCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// senderEventually fails t unless ok holds within 20 s.
func senderEventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (env senderEnv) head(t *testing.T) uint64 {
	t.Helper()
	n, err := env.e.ec.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (env senderEnv) txOf(t *testing.T, h common.Hash) *types.Transaction {
	t.Helper()
	tx, _, err := env.e.ec.TransactionByHash(context.Background(), h)
	if err != nil {
		t.Fatalf("transaction %s: %v", h.Hex(), err)
	}
	return tx
}

func (env senderEnv) notMined(t *testing.T, h common.Hash) {
	t.Helper()
	if _, err := env.e.ec.TransactionReceipt(context.Background(), h); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("tx %s: receipt err %v, want not found", h.Hex(), err)
	}
}

type senderDone struct {
	r   *types.Receipt
	err error
}

func goSend(ctx context.Context, s *sender, env senderEnv) <-chan senderDone {
	done := make(chan senderDone, 1)
	go func() {
		r, err := s.Send(ctx, env.to, env.data, "testing")
		done <- senderDone{r, err}
	}()
	return done
}

// senderLogs records log records for assertions (and prints them under -v).
type senderLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *senderLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *senderLogs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *senderLogs) WithGroup(string) slog.Handler            { return l }

func (l *senderLogs) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	if testing.Verbose() {
		fmt.Fprintln(os.Stderr, b.String())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, b.String())
	return nil
}

// count returns how many records hold every one of subs.
func (l *senderLogs) count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		n++
	}
	return n
}

func TestSenderSendsAndWaits(t *testing.T) {
	env := newSenderEnv(t)
	ctx := senderCtx(t)
	from := ethcrypto.PubkeyToAddress(env.key.PublicKey)
	start, err := env.e.ec.NonceAt(ctx, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := env.sender(env.key, TxPolicy{})
	for i := range uint64(4) {
		to, data := env.to, env.data
		if i == 3 { // a plain transfer of nothing, with no calldata
			to, data = common.HexToAddress("0x00000000000000000000000000000000000c0ffe"), nil
		}
		r, err := s.Send(ctx, to, data, "testing")
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("send %d: status %d", i, r.Status)
		}
		tx := env.txOf(t, r.TxHash)
		if tx.Nonce() != start+i {
			t.Fatalf("send %d: nonce %d, want %d", i, tx.Nonce(), start+i)
		}
		if tx.Type() != types.DynamicFeeTxType || *tx.To() != to || tx.GasTipCap().Cmp(tx.GasFeeCap()) > 0 {
			t.Fatalf("send %d: type %d to %s tip %s cap %s", i, tx.Type(), tx.To().Hex(), tx.GasTipCap(), tx.GasFeeCap())
		}
		if r.GasUsed >= tx.Gas() {
			t.Fatalf("send %d: used %d of %d gas: no margin", i, r.GasUsed, tx.Gas())
		}
		if p, ok := s.Pending(); ok {
			t.Fatalf("send %d: still pending after Send: %+v", i, p)
		}
	}
	if n, _ := env.e.ec.NonceAt(ctx, from, nil); n != start+4 || s.nonce != start+4 {
		t.Fatalf("chain nonce %d, sender's %d, want %d", n, s.nonce, start+4)
	}
}

func TestSenderReplacesStuckTransaction(t *testing.T) {
	env := newSenderEnv(t)
	ctx := senderCtx(t)
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := env.sender(env.key, TxPolicy{ReplaceAfter: time.Minute, Clock: fc})
	s.firstFees = func(baseFee, tip *big.Int) (*big.Int, *big.Int) { return senderUnminable, senderUnminable }

	done := goSend(ctx, s, env)
	var first PendingTx
	senderEventually(t, "the first attempt", func() bool {
		var ok bool
		first, ok = s.Pending()
		return ok
	})
	if first.Attempts != 1 || first.MaxFeeWei != "1" || first.MaxTipWei != "1" || first.SentAt != "2023-11-14T22:13:20Z" {
		t.Fatalf("first attempt: %+v", first)
	}
	firstHash := common.HexToHash(first.Hash)
	if env.logs.count("WARN", "below the base fee", "raise [chain] max_fee_gwei") != 1 {
		t.Fatal("no warning about the fee cap below the base fee")
	}

	// Stuck, not slow: the chain seals (empty) blocks past it while it
	// sits in the pool, and the sender does not replace it before its time.
	h0 := env.head(t)
	senderEventually(t, "blocks sealed past the stuck tx", func() bool { return env.head(t) >= h0+5 })
	if _, isPending, err := env.e.ec.TransactionByHash(ctx, firstHash); err != nil || !isPending {
		t.Fatalf("first attempt: pending %v, err %v; want in the pool", isPending, err)
	}
	env.notMined(t, firstHash)
	if p, _ := s.Pending(); p.Hash != first.Hash || p.Attempts != 1 {
		t.Fatalf("replaced before ReplaceAfter: %+v", p)
	}
	select {
	case res := <-done:
		t.Fatalf("Send returned while its tx is stuck: %v, %v", res.r, res.err)
	default:
	}

	fc.BlockUntil(1) // the replacement timer
	fc.Advance(59 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if p, _ := s.Pending(); p.Attempts != 1 {
		t.Fatalf("replaced before ReplaceAfter: %+v", p)
	}
	fc.Advance(time.Second)

	res := <-done
	if res.err != nil {
		t.Fatalf("Send: %v", res.err)
	}
	if res.r.TxHash == firstHash {
		t.Fatal("the underpriced first attempt was mined")
	}
	mined := env.txOf(t, res.r.TxHash)
	if mined.Nonce() != first.Nonce {
		t.Fatalf("mined nonce %d, first attempt's %d", mined.Nonce(), first.Nonce)
	}
	if mined.GasTipCap().Cmp(bump(senderUnminable)) < 0 || mined.GasFeeCap().Cmp(bump(senderUnminable)) < 0 {
		t.Fatalf("replacement tip %s cap %s: not bumped", mined.GasTipCap(), mined.GasFeeCap())
	}
	if env.logs.count("replaced a transaction not mined in time", "attempt=2", "tx="+res.r.TxHash.Hex()) != 1 {
		t.Fatal("no log of attempt 2 being the mined transaction")
	}
	env.notMined(t, firstHash)
	if _, ok := s.Pending(); ok {
		t.Fatal("still pending after Send")
	}
}

func TestSenderCapStopsBump(t *testing.T) {
	env := newSenderEnv(t)
	// The fake starts at the real time: the RPC client passes ctx's
	// (fake) deadline on, which must not be in the past already.
	fc := clock.NewFake(time.Now())
	maxFee := big.NewInt(5) // under the 7 wei the base fee never falls below
	s := env.sender(env.key, TxPolicy{MaxFeePerGas: maxFee, ReplaceAfter: time.Minute, Clock: fc})
	ctx, cancel := clock.WithTimeout(senderCtx(t), fc, 90*time.Second)
	defer cancel()

	done := goSend(ctx, s, env)
	var p PendingTx
	senderEventually(t, "the transaction in the pool", func() bool {
		var ok bool
		p, ok = s.Pending()
		return ok
	})
	if p.MaxFeeWei != "5" || p.MaxTipWei != "5" {
		t.Fatalf("fees over the cap: %+v", p)
	}
	if env.logs.count("WARN", "max fee 0.000000005 gwei is below the base fee", "raise [chain] max_fee_gwei") != 1 {
		t.Fatal("no warning naming the cap below the base fee")
	}

	fc.BlockUntil(2) // the replacement timer and ctx's deadline
	for range 3 {
		fc.Advance(20 * time.Second) // past ReplaceAfter, not past the deadline
	}
	senderEventually(t, "the no-room warning", func() bool { return env.logs.count("WARN", "no room to replace") == 1 })
	if q, _ := s.Pending(); q.Hash != p.Hash || q.Attempts != 1 {
		t.Fatalf("replaced although the cap leaves no room: %+v", q)
	}
	env.notMined(t, common.HexToHash(p.Hash))

	fc.Advance(30 * time.Second) // the deadline
	res := <-done
	if !errors.Is(res.err, context.DeadlineExceeded) || !strings.Contains(res.err.Error(), p.Hash) {
		t.Fatalf("Send: %v, want the deadline, naming tx %s", res.err, p.Hash)
	}
	if env.logs.count("below the base fee") != 1 || env.logs.count("no room to replace") != 1 {
		t.Fatal("a warning was repeated")
	}

	// Without the cap, the next Send outbids the stuck transaction at its
	// nonce instead of queueing behind it.
	s.policy.MaxFeePerGas = nil
	r, err := s.Send(senderCtx(t), env.to, env.data, "testing")
	if err != nil {
		t.Fatalf("Send after raising the cap: %v", err)
	}
	if tx := env.txOf(t, r.TxHash); tx.Nonce() != p.Nonce {
		t.Fatalf("next Send used nonce %d, the stuck one is %d", tx.Nonce(), p.Nonce)
	}
	env.notMined(t, common.HexToHash(p.Hash))
}

func TestSenderInsufficientFunds(t *testing.T) {
	env := newSenderEnv(t)
	ctx := senderCtx(t)
	poor, err := ethcrypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := ethcrypto.PubkeyToAddress(poor.PublicKey).Hex()
	s := env.sender(poor, TxPolicy{})

	_, err = s.Send(ctx, env.to, env.data, "anchoring a root")
	if !errors.Is(err, ErrInsufficientFunds) {
		t.Fatalf("Send: %v, want ErrInsufficientFunds", err)
	}
	msg := err.Error()
	for _, want := range []string{"anchoring a root: ", "account " + addr + " holds 0 ETH (0 wei)", "this transaction needs up to ", " wei: gas ", " gwei)", "fund " + addr} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	t.Log(msg)

	// The node's own refusal is mapped to the same error.
	s.skipFundsCheck = true
	_, err = s.Send(ctx, env.to, env.data, "anchoring a root")
	if !errors.Is(err, ErrInsufficientFunds) || !strings.Contains(err.Error(), "fund "+addr) || !strings.Contains(err.Error(), "node: insufficient funds") {
		t.Fatalf("Send with the node checking: %v, want ErrInsufficientFunds naming %s", err, addr)
	}
	if _, ok := s.Pending(); ok {
		t.Fatal("pending after a refused Send")
	}
}

func TestSenderRecoversNonce(t *testing.T) {
	env := newSenderEnv(t)
	ctx := senderCtx(t)
	s := env.sender(env.key, TxPolicy{})
	if _, err := s.Send(ctx, env.to, env.data, "testing"); err != nil {
		t.Fatal(err)
	}
	next := s.nonce

	// Behind the sender's back: the same account uses that nonce.
	tip, err := env.e.ec.SuggestGasTipCap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := types.MustSignNewTx(env.key, types.LatestSignerForChainID(env.e.chainID), &types.DynamicFeeTx{
		ChainID: env.e.chainID, Nonce: next, GasTipCap: tip, GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21000, To: &env.to,
	})
	if err := env.e.ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	senderEventually(t, "the other transaction mined", func() bool {
		_, err := env.e.ec.TransactionReceipt(ctx, tx.Hash())
		return err == nil
	})
	if s.nonce != next {
		t.Fatalf("sender's nonce %d moved on its own", s.nonce)
	}

	r, err := s.Send(ctx, env.to, env.data, "testing")
	if err != nil {
		t.Fatalf("Send after the nonce was used elsewhere: %v", err)
	}
	if got := env.txOf(t, r.TxHash).Nonce(); got != next+1 {
		t.Fatalf("mined with nonce %d, want %d", got, next+1)
	}
	if s.nonce != next+2 {
		t.Fatalf("sender's next nonce %d, want %d", s.nonce, next+2)
	}
	if env.logs.count("the nonce was used by another transaction") != 1 {
		t.Fatal("no log of the nonce refresh")
	}
}

func TestSenderFees(t *testing.T) {
	w := big.NewInt
	fl := func(feeCap, tip int64) *txFees { return &txFees{feeCap: w(feeCap), tip: w(tip)} }
	for _, c := range []struct {
		name             string
		p                TxPolicy
		base, tip        int64
		floor            *txFees
		wantCap, wantTip int64
		wantOK           bool
	}{
		{"no caps", TxPolicy{}, 100, 10, nil, 210, 10, true},
		{"tip cap", TxPolicy{MaxPriorityFeePerGas: w(5)}, 100, 10, nil, 205, 5, true},
		{"fee cap", TxPolicy{MaxFeePerGas: w(150)}, 100, 10, nil, 150, 10, true},
		{"fee cap under the tip", TxPolicy{MaxFeePerGas: w(8)}, 100, 10, nil, 8, 8, true},
		{"bump over the floor", TxPolicy{}, 100, 10, fl(300, 20), 338, 23, true},
		{"base fee rose past the bump", TxPolicy{}, 200, 10, fl(210, 10), 412, 12, true},
		{"suggestion above the bump", TxPolicy{}, 100, 50, fl(210, 10), 250, 50, true},
		{"fee cap leaves no room", TxPolicy{MaxFeePerGas: w(300)}, 100, 10, fl(300, 20), 300, 23, false},
		{"tip cap leaves no room", TxPolicy{MaxPriorityFeePerGas: w(20)}, 100, 10, fl(300, 20), 338, 20, false},
		{"bump within the caps", TxPolicy{MaxFeePerGas: w(400), MaxPriorityFeePerGas: w(30)}, 100, 10, fl(300, 20), 338, 23, true},
		{"from 1 wei", TxPolicy{}, 7, 1_000_000, fl(1, 1), 1_000_014, 1_000_000, true},
	} {
		f, ok := c.p.nextFees(w(c.base), w(c.tip), c.floor)
		if f.feeCap.Int64() != c.wantCap || f.tip.Int64() != c.wantTip || ok != c.wantOK {
			t.Errorf("%s: cap %s tip %s ok %v, want %d %d %v", c.name, f.feeCap, f.tip, ok, c.wantCap, c.wantTip, c.wantOK)
		}
	}
	// geth replaces a transaction only for more than +10% on both fees.
	for x := int64(0); x < 10_000; x++ {
		b := bump(w(x)).Int64()
		if b <= x || b*100 < x*110 || b > x+x/8+1 {
			t.Fatalf("bump(%d) = %d", x, b)
		}
	}
	for _, c := range []struct {
		wei  int64
		want string
	}{{42_000_000_000, "42"}, {7, "0.000000007"}, {1_500_000_000, "1.5"}, {0, "0"}} {
		if got := formatGwei(w(c.wei)); got != c.want {
			t.Errorf("formatGwei(%d) = %q, want %q", c.wei, got, c.want)
		}
	}
}

func TestSenderClassifiesNodeErrors(t *testing.T) {
	// geth's answers, as the embedded chain gives them.
	for msg, want := range map[string]sendResult{
		"already known": sentOK,
		"nonce too low: next nonce 2, tx nonce 1": sentNonceTooLow,
		"replacement transaction underpriced":     sentUnderpriced,
		"insufficient funds for gas * price + value: balance 0, tx cost 21002100000, overshot 21002100000": sentNoFunds,
		"intrinsic gas too low": sentOther,
	} {
		if got := sendOutcome(errors.New(msg)); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
}
