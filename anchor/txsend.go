package anchor

// Anchoring transactions on a real chain: EIP-1559 fees under the [chain]
// caps, the account's nonce kept here, and a transaction that is not mined
// in time replaced by one with the same nonce and higher fees.

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"

	"github.com/crow-sync/crow/clock"
)

const (
	// defaultReplaceAfter is TxPolicy.ReplaceAfter when unset.
	defaultReplaceAfter = 30 * time.Second
	// gasMarginPercent is added to the gas estimate: the state a
	// transaction runs on may differ a little from the state it was
	// estimated on.
	gasMarginPercent = 20
	// bumpDivisor: a replacement raises the tip and the fee cap by at least
	// 1/bumpDivisor (12.5%; geth's pool asks for 10%).
	bumpDivisor = 8
	// maxSendTries bounds the immediate resends of one attempt (nonce too
	// low, replacement underpriced) before waiting ReplaceAfter.
	maxSendTries = 16
	// Receipts are polled from txPollMin, backing off to txPollMax: the
	// embedded chain mines within milliseconds, a public chain in seconds.
	txPollMin = 10 * time.Millisecond
	txPollMax = time.Second
)

// Errors of sender.Send.
var (
	// ErrInsufficientFunds is wrapped by sender.Send when the account cannot
	// pay for the transaction at its fee cap (checked before sending, and
	// what a node's "insufficient funds" answer is mapped to). The message
	// names the account, its balance and what the transaction needs.
	ErrInsufficientFunds = errors.New("anchor: insufficient funds")
	// ErrNoBaseFee is wrapped by sender.Send when the chain's head has no
	// base fee: the chain does not run EIP-1559 (London), which crow needs.
	ErrNoBaseFee = errors.New("anchor: the chain has no EIP-1559 base fee")
)

// TxPolicy: fee caps and timing of anchoring transactions (from [chain]
// config).
type TxPolicy struct {
	MaxFeePerGas         *big.Int      // cap on maxFeePerGas; nil: no cap
	MaxPriorityFeePerGas *big.Int      // cap on the tip; nil: the endpoint's suggestion
	ReplaceAfter         time.Duration // a transaction not mined after this is replaced (same nonce, fees bumped); default 30s
	Clock                clock.Clock   // measures ReplaceAfter and stamps PendingTx.SentAt; default clock.System{}
}

// txFees is the price of one attempt.
type txFees struct {
	feeCap, tip *big.Int
}

// txAttempt is one signed transaction a node accepted.
type txAttempt struct {
	hash  common.Hash
	nonce uint64
	fees  txFees
}

// sender signs, sends and waits for the transactions of one account. It
// serializes them: one Send at a time, so one transaction in flight, and it
// keeps the account's next nonce itself. It starts no goroutines.
//
// Nothing else should send from the account while a Send is in progress;
// a nonce consumed elsewhere between Sends is recovered from ("nonce too
// low" makes it read the nonce from the chain again).
type sender struct {
	ec      *ethclient.Client
	key     *ecdsa.PrivateKey
	from    common.Address
	chainID *big.Int
	signer  types.Signer
	policy  TxPolicy // ReplaceAfter and Clock resolved
	log     *slog.Logger

	// sem holds a token while a Send runs. The fields after it are owned
	// by the Send holding it.
	sem       chan struct{}
	nonce     uint64 // the account's next nonce, if haveNonce
	haveNonce bool
	// stale is the newest attempt of a Send that gave up (its context
	// ended) while the transaction was still in the pool: the next Send
	// takes its nonce, and must outbid it.
	stale *txAttempt

	mu      sync.Mutex // guards pending
	pending *PendingTx // the transaction of the Send in progress; nil: none

	// Test hooks. firstFees, when set, replaces the fees of each Send's
	// first attempt. skipFundsCheck leaves the balance check to the node.
	firstFees      func(baseFee, tip *big.Int) (feeCap, newTip *big.Int)
	skipFundsCheck bool
}

// newSender returns the sender for key's account on the chain ec talks to.
// log may be nil.
func newSender(ec *ethclient.Client, key *ecdsa.PrivateKey, chainID *big.Int, p TxPolicy, log *slog.Logger) *sender {
	if p.ReplaceAfter <= 0 {
		p.ReplaceAfter = defaultReplaceAfter
	}
	p.Clock = clock.Or(p.Clock)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &sender{
		ec: ec, key: key, from: ethcrypto.PubkeyToAddress(key.PublicKey), chainID: chainID,
		signer: types.LatestSignerForChainID(chainID), policy: p, log: log,
		sem: make(chan struct{}, 1),
	}
}

// Send signs and sends an EIP-1559 transaction calling `to` with calldata
// `data` (gas estimated, with a margin), and waits until it is mined,
// replacing it while it is not: every ReplaceAfter it sends the same nonce
// with the tip and the fee cap raised by at least 12.5%, within the policy's
// caps. It returns the receipt of whichever attempt was mined. doing names
// the work in errors and logs ("anchoring a root").
//
// A reverted transaction returns its receipt and an error wrapping
// ErrReverted; an account that cannot pay, ErrInsufficientFunds. When ctx
// ends first, Send returns ctx.Err() wrapped, and the transaction may still
// be mined later: the next Send takes the same nonce and outbids it, so at
// most one of the two is mined (if the caps leave no room to outbid, the
// next Send waits until that nonce is used).
func (s *sender) Send(ctx context.Context, to common.Address, data []byte, doing string) (*types.Receipt, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: waiting for the transaction in flight: %w", doing, ctx.Err())
	}
	defer func() { <-s.sem }()
	defer s.setPending(nil)

	gas, err := s.estimate(ctx, to, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", doing, err)
	}
	if !s.haveNonce {
		n, err := s.ec.NonceAt(ctx, s.from, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: reading the nonce of %s: %w", doing, s.from.Hex(), err)
		}
		s.nonce, s.haveNonce = n, true
	}
	f := &flight{doing: doing, to: to, data: data, gas: gas, nonce: s.nonce}
	if s.stale != nil && s.stale.nonce == f.nonce {
		prev := s.stale.fees
		f.floor = &prev
	}
	r, err := s.fly(ctx, f)
	if err != nil {
		if f.floor != nil {
			// Something of ours may still hold this nonce in the pool.
			s.stale = &txAttempt{nonce: f.nonce, fees: *f.floor}
		}
		return nil, err
	}
	s.stale = nil
	for _, a := range f.attempts {
		if a.hash == r.TxHash {
			s.nonce = max(s.nonce, a.nonce+1)
		}
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return r, fmt.Errorf("%s: %w: tx %s in block %d", doing, ErrReverted, r.TxHash.Hex(), r.BlockNumber)
	}
	return r, nil
}

// Pending reports the transaction of the Send in progress, if any (for
// `crow chain status`): its newest attempt's hash, nonce, fee cap, tip and
// send time, and how many attempts there were. A Send that has not got a
// transaction into the pool yet reports none.
func (s *sender) Pending() (PendingTx, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		return PendingTx{}, false
	}
	return *s.pending, true
}

func (s *sender) setPending(p *PendingTx) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = p
}

// flight is one Send's state.
type flight struct {
	doing    string
	to       common.Address
	data     []byte
	gas      uint64
	nonce    uint64
	floor    *txFees // what the pool holds at nonce, to outbid; nil: nothing known
	attempts []txAttempt

	warnedBase, warnedBump, warnedFunds bool
}

// fly sends f's first attempt and waits for a receipt of any of its
// attempts, replacing the newest every ReplaceAfter.
func (s *sender) fly(ctx context.Context, f *flight) (*types.Receipt, error) {
	r, err := s.attempt(ctx, f)
	if r != nil || err != nil {
		return r, s.ended(ctx, f, err)
	}
	replace := s.policy.Clock.NewTimer(s.policy.ReplaceAfter)
	defer replace.Stop()
	// Polling paces calls to the node, so it runs on real time even when
	// the policy's clock is a fake one.
	wait := txPollMin
	poll := time.NewTimer(wait)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, s.ended(ctx, f, ctx.Err())
		case <-poll.C:
			if r := s.receipt(ctx, f); r != nil {
				return r, nil
			}
			wait = min(2*wait, txPollMax)
			poll.Reset(wait)
		case <-replace.C():
			n := len(f.attempts)
			r, err := s.attempt(ctx, f)
			if r != nil {
				return r, nil
			}
			if err != nil {
				if ctx.Err() != nil || n == 0 {
					return nil, s.ended(ctx, f, err)
				}
				// The attempts in the pool stay valid: keep waiting for
				// them, and try again at the next ReplaceAfter.
				s.log.Warn(f.doing+": replacing a transaction not mined in time failed; still waiting for it", "tx", f.attempts[n-1].hash.Hex(), "err", err)
			}
			if len(f.attempts) > n {
				wait = txPollMin
				poll.Reset(wait)
			}
			replace.Reset(s.policy.ReplaceAfter)
		}
	}
}

// ended returns err, or, once ctx has ended, ctx.Err() wrapped with what
// is still in the pool.
func (s *sender) ended(ctx context.Context, f *flight, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if len(f.attempts) == 0 {
		return fmt.Errorf("%s: before the node accepted a transaction: %w", f.doing, ctx.Err())
	}
	a := f.attempts[len(f.attempts)-1]
	return fmt.Errorf("%s: tx %s (nonce %d) not mined yet, and may still be: %w", f.doing, a.hash.Hex(), a.nonce, ctx.Err())
}

// receipt returns the receipt of whichever of f's attempts is mined (nil:
// none yet). Errors other than "not found" are logged and polled through:
// some nodes answer "transaction indexing is in progress" for a while.
func (s *sender) receipt(ctx context.Context, f *flight) *types.Receipt {
	for i := len(f.attempts) - 1; i >= 0 && ctx.Err() == nil; i-- {
		h := f.attempts[i].hash
		r, err := s.ec.TransactionReceipt(ctx, h)
		if err == nil {
			return r
		}
		if !errors.Is(err, ethereum.NotFound) {
			s.log.Debug("polling receipt", "tx", h.Hex(), "err", err)
		}
	}
	return nil
}

// nonceTaken checks whether the chain has moved past f.nonce. If one of
// f's attempts is mined it returns its receipt; if something else took the
// nonce, f moves to the chain's next nonce, with nothing to outbid.
func (s *sender) nonceTaken(ctx context.Context, f *flight) (r *types.Receipt, moved bool, err error) {
	n, err := s.ec.NonceAt(ctx, s.from, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s: reading the nonce of %s: %w", f.doing, s.from.Hex(), err)
	}
	if n <= f.nonce {
		return nil, false, nil
	}
	// Read after the nonce: if one of ours took it, its receipt is there.
	if r := s.receipt(ctx, f); r != nil {
		return r, false, nil
	}
	s.log.Info(f.doing+": the nonce was used by another transaction, taking the chain's next one", "nonce", f.nonce, "chain_nonce", n, "account", s.from.Hex())
	f.nonce, f.floor = n, nil
	s.nonce = n
	return nil, true, nil
}

// attempt sends a transaction for f: the first, or one replacing the
// newest at f.floor's fees. It returns a receipt only if it finds one of
// f's attempts mined (a "nonce too low" answer), and sends nothing, without
// error, when the caps leave no room to outbid f.floor or the account cannot
// pay for the bump: the attempts in the pool stay valid.
func (s *sender) attempt(ctx context.Context, f *flight) (*types.Receipt, error) {
	for try := 0; try < maxSendTries; try++ {
		head, err := s.ec.HeaderByNumber(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: reading the head: %w", f.doing, err)
		}
		if head.BaseFee == nil {
			return nil, fmt.Errorf("%s: %w (block %d)", f.doing, ErrNoBaseFee, head.Number)
		}
		suggested, err := s.ec.SuggestGasTipCap(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: reading the suggested tip: %w", f.doing, err)
		}
		fees, ok := s.policy.nextFees(head.BaseFee, suggested, f.floor)
		if !ok {
			// The transaction to outbid may be gone (mined): then there is
			// nothing to outbid.
			r, moved, err := s.nonceTaken(ctx, f)
			if r != nil || err != nil {
				return r, err
			}
			if moved {
				continue
			}
			if !f.warnedBump {
				f.warnedBump = true
				s.log.Warn(fmt.Sprintf("%s: the fee caps leave no room to replace the pending transaction (tip %s gwei, max fee %s gwei, +12.5%% needed); waiting for it to be mined: raise [chain] max_fee_gwei or max_priority_fee_gwei",
					f.doing, formatGwei(f.floor.tip), formatGwei(f.floor.feeCap)),
					"nonce", f.nonce, "account", s.from.Hex())
			}
			return nil, nil
		}
		if len(f.attempts) == 0 && s.firstFees != nil {
			fees.feeCap, fees.tip = s.firstFees(head.BaseFee, fees.tip)
		}
		if fees.feeCap.Cmp(head.BaseFee) < 0 && !f.warnedBase {
			f.warnedBase = true
			s.log.Warn(fmt.Sprintf("%s: the max fee %s gwei is below the base fee %s gwei; the transaction waits in the pool until the base fee falls: raise [chain] max_fee_gwei",
				f.doing, formatGwei(fees.feeCap), formatGwei(head.BaseFee)),
				"nonce", f.nonce, "account", s.from.Hex())
		}
		if !s.skipFundsCheck {
			bal, err := s.ec.BalanceAt(ctx, s.from, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: reading the balance of %s: %w", f.doing, s.from.Hex(), err)
			}
			if need := fees.cost(f.gas); bal.Cmp(need) < 0 {
				ferr := s.fundsError(bal, f.gas, fees.feeCap)
				if len(f.attempts) == 0 {
					return nil, fmt.Errorf("%s: %w", f.doing, ferr)
				}
				s.warnFundsOnce(f, ferr)
				return nil, nil
			}
		}

		tx, err := types.SignNewTx(s.key, s.signer, &types.DynamicFeeTx{
			ChainID: s.chainID, Nonce: f.nonce, GasTipCap: fees.tip, GasFeeCap: fees.feeCap,
			Gas: f.gas, To: &f.to, Data: f.data,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: signing: %w", f.doing, err)
		}
		err = s.ec.SendTransaction(ctx, tx)
		switch sendOutcome(err) {
		case sentOK:
			s.sent(f, tx.Hash(), fees)
			return nil, nil
		case sentNonceTooLow:
			// Mined already: one of ours ends the wait; something sent
			// behind our back moves f to the chain's next nonce.
			r, moved, err := s.nonceTaken(ctx, f)
			if r != nil || err != nil {
				return r, err
			}
			if !moved {
				// The node and its latest block disagree for a moment.
				s.log.Debug(f.doing+": nonce too low, but the chain's nonce is not past it", "nonce", f.nonce)
			}
		case sentUnderpriced:
			// The pool holds a transaction at this nonce that these fees
			// do not outbid (ours from an earlier process, or not ours):
			// bump again.
			s.log.Info(f.doing+": replacement underpriced, bumping the fees", "nonce", f.nonce, "tip_gwei", formatGwei(fees.tip), "max_fee_gwei", formatGwei(fees.feeCap))
			f.floor = &fees
		case sentNoFunds:
			bal, berr := s.ec.BalanceAt(ctx, s.from, nil)
			if berr != nil {
				return nil, fmt.Errorf("%s: %w: %s: %w", f.doing, ErrInsufficientFunds, s.from.Hex(), err)
			}
			ferr := s.fundsError(bal, f.gas, fees.feeCap)
			if len(f.attempts) == 0 {
				return nil, fmt.Errorf("%s: %w (node: %w)", f.doing, ferr, err)
			}
			s.warnFundsOnce(f, ferr)
			return nil, nil
		default:
			return nil, fmt.Errorf("%s: sending tx (nonce %d): %w", f.doing, f.nonce, err)
		}
	}
	s.log.Warn(f.doing+": the node refused every attempt, trying again later", "nonce", f.nonce, "tries", maxSendTries, "replace_after", s.policy.ReplaceAfter)
	return nil, nil
}

// sent records an attempt the node accepted.
func (s *sender) sent(f *flight, h common.Hash, fees txFees) {
	now := s.policy.Clock.Now()
	f.floor = &fees
	if n := len(f.attempts); n > 0 && f.attempts[n-1].hash == h {
		return // "already known": the same bytes again
	}
	f.attempts = append(f.attempts, txAttempt{hash: h, nonce: f.nonce, fees: fees})
	p := &PendingTx{
		Hash: h.Hex(), Nonce: f.nonce, MaxFeeWei: fees.feeCap.String(), MaxTipWei: fees.tip.String(),
		SentAt: now.UTC().Format(time.RFC3339), Attempts: len(f.attempts), Doing: f.doing,
		Replacements: len(f.attempts) - 1,
	}
	if len(f.attempts) > 1 {
		p.FirstHash = f.attempts[0].hash.Hex()
		s.log.Info(f.doing+": replaced a transaction not mined in time", "tx", h.Hex(), "nonce", f.nonce,
			"attempt", len(f.attempts), "tip_gwei", formatGwei(fees.tip), "max_fee_gwei", formatGwei(fees.feeCap))
	}
	s.setPending(p)
}

func (s *sender) warnFundsOnce(f *flight, err error) {
	if !f.warnedFunds {
		f.warnedFunds = true
		s.log.Warn(f.doing+": cannot pay for a replacement; waiting for the pending transaction", "err", err)
	}
}

// estimate returns the gas for calling to with data, with the margin.
func (s *sender) estimate(ctx context.Context, to common.Address, data []byte) (uint64, error) {
	gas, err := s.ec.EstimateGas(ctx, ethereum.CallMsg{From: s.from, To: &to, Data: data})
	if err != nil {
		if sendOutcome(err) == sentNoFunds {
			return 0, fmt.Errorf("estimating gas: %w: account %s: %w", ErrInsufficientFunds, s.from.Hex(), err)
		}
		return 0, fmt.Errorf("estimating gas: %w", decodeRevert(err))
	}
	return gas + gas*gasMarginPercent/100, nil
}

// fundsError is ErrInsufficientFunds wrapped with the account, its balance
// and the most a transaction of gas at feeCap costs.
func (s *sender) fundsError(balance *big.Int, gas uint64, feeCap *big.Int) error {
	need := txFees{feeCap: feeCap}.cost(gas)
	addr := s.from.Hex()
	return fmt.Errorf("%w: account %s holds %s ETH (%s wei); this transaction needs up to %s ETH (%s wei: gas %d × max fee %s gwei): fund %s",
		ErrInsufficientFunds, addr, FormatETH(balance), balance, FormatETH(need), need, gas, formatGwei(feeCap), addr)
}

// cost is the most a transaction of gas pays at these fees.
func (f txFees) cost(gas uint64) *big.Int {
	return new(big.Int).Mul(new(big.Int).SetUint64(gas), f.feeCap)
}

// nextFees prices an attempt: the tip is the endpoint's suggestion and the
// fee cap twice the base fee plus the tip, each under its cap, tip ≤ fee cap.
// A replacement (floor set: the fees to outbid) raises both by at least
// 12.5% over floor; ok is false when the caps leave no room for that.
func (p TxPolicy) nextFees(baseFee, suggestedTip *big.Int, floor *txFees) (f txFees, ok bool) {
	tip := new(big.Int).Set(suggestedTip)
	if floor != nil {
		tip = bigMax(tip, bump(floor.tip))
	}
	if p.MaxPriorityFeePerGas != nil {
		tip = bigMin(tip, p.MaxPriorityFeePerGas)
	}
	feeCap := new(big.Int).Add(new(big.Int).Lsh(baseFee, 1), tip)
	if floor != nil {
		feeCap = bigMax(feeCap, bump(floor.feeCap))
	}
	if p.MaxFeePerGas != nil {
		feeCap = bigMin(feeCap, p.MaxFeePerGas)
	}
	tip = bigMin(tip, feeCap)
	f = txFees{feeCap: feeCap, tip: tip}
	if floor == nil {
		return f, true
	}
	return f, tip.Cmp(bump(floor.tip)) >= 0 && feeCap.Cmp(bump(floor.feeCap)) >= 0
}

// bump returns x raised by 1/bumpDivisor, rounded up, and by at least 1 wei.
func bump(x *big.Int) *big.Int {
	up := new(big.Int).Add(x, big.NewInt(bumpDivisor-1))
	up.Quo(up, big.NewInt(bumpDivisor))
	if up.Sign() == 0 {
		up.SetInt64(1)
	}
	return up.Add(up, x)
}

func bigMin(a, b *big.Int) *big.Int {
	if a.Cmp(b) <= 0 {
		return new(big.Int).Set(a)
	}
	return new(big.Int).Set(b)
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return new(big.Int).Set(a)
	}
	return new(big.Int).Set(b)
}

// formatGwei formats wei as gwei with up to 9 decimals ("42", "0.000000007").
func formatGwei(wei *big.Int) string {
	r := new(big.Rat).SetFrac(wei, big.NewInt(params.GWei))
	s := strings.TrimRight(strings.TrimRight(r.FloatString(9), "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

// sendResult classifies a node's answer to eth_sendRawTransaction. Nodes
// answer in prose; these are the phrases geth, Erigon, Nethermind, Besu and
// reth use.
type sendResult int

const (
	sentOther sendResult = iota
	sentOK
	sentNonceTooLow
	sentUnderpriced
	sentNoFunds
)

func sendOutcome(err error) sendResult {
	if err == nil {
		return sentOK
	}
	msg := strings.ToLower(err.Error())
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("already known", "known transaction", "already imported", "alreadyknown"):
		return sentOK // the same signed bytes are in the pool: sent
	case has("nonce too low", "nonce is too low", "oldnonce"):
		return sentNonceTooLow
	case has("underpriced", "feetoolowtocompete"):
		return sentUnderpriced
	case has("insufficient funds"):
		return sentNoFunds
	}
	return sentOther
}
