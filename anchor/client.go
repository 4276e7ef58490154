package anchor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/crow-sync/crow/anchor/contract"
)

// Polling for receipts starts at pollMin and backs off to pollMax: the
// embedded chain mines within milliseconds, a public chain within seconds.
const (
	pollMin = 10 * time.Millisecond
	pollMax = time.Second
)

var contractABI = func() *abi.ABI {
	a, err := contract.ProjectStateAnchorMetaData.GetAbi()
	if err != nil {
		panic("anchor: the generated ABI does not parse: " + err.Error())
	}
	return a
}()

// client is the Chain implementation shared by Embedded and RPC: the bound
// contract over an ethclient, signing with the owner key.
type client struct {
	ec       *ethclient.Client
	contract *contract.ProjectStateAnchor
	address  common.Address
	key      *ecdsa.PrivateKey
	from     common.Address
	chainID  *big.Int
	info     ChainInfo
	log      *slog.Logger
	// durable, when set, is called after a transaction is mined and before
	// its Receipt is returned (Embedded: sync the database to disk).
	durable func() error

	closed atomic.Bool
	sendMu sync.Mutex // held while a transaction is signed, sent and mined: keeps nonces in order

	locMu sync.Mutex
	locs  map[uint64]location // guarded by locMu: where each anchor id's event is (immutable once found)
}

type location struct {
	tx    common.Hash
	block uint64
}

func newClient(ec *ethclient.Client, addr common.Address, key *ecdsa.PrivateKey, chainID *big.Int, info ChainInfo, log *slog.Logger) (*client, error) {
	bound, err := contract.NewProjectStateAnchor(addr, ec)
	if err != nil {
		return nil, fmt.Errorf("binding contract: %w", err)
	}
	from := ethcrypto.PubkeyToAddress(key.PublicKey)
	info.ChainID = chainID.Uint64()
	info.Contract = addr.Hex()
	info.Account = from.Hex()
	return &client{
		ec: ec, contract: bound, address: addr, key: key, from: from,
		chainID: chainID, info: info, log: log, locs: make(map[uint64]location),
	}, nil
}

// checkOwner fails unless the contract exists at c.address and c.from owns it.
func (c *client) checkOwner(ctx context.Context) error {
	code, err := c.ec.CodeAt(ctx, c.address, nil)
	if err != nil {
		return fmt.Errorf("reading contract code: %w", err)
	}
	if len(code) == 0 {
		return fmt.Errorf("no contract at %s on chain %d", c.address.Hex(), c.chainID)
	}
	owner, err := c.contract.Owner(&bind.CallOpts{Context: ctx})
	if err != nil {
		return fmt.Errorf("reading contract owner: %w", err)
	}
	if owner != c.from {
		return fmt.Errorf("%w: contract %s is owned by %s, the key is %s", ErrNotOwner, c.address.Hex(), owner.Hex(), c.from.Hex())
	}
	return nil
}

func (c *client) Info() ChainInfo { return c.info }

func (c *client) AnchorStates(ctx context.Context, states []StateAnchor) (Receipt, error) {
	if c.closed.Load() {
		return Receipt{}, ErrClosed
	}
	if len(states) == 0 {
		return Receipt{}, fmt.Errorf("%w: no states to anchor", ErrInvalid)
	}
	if len(states) > MaxStatesPerTx {
		return Receipt{}, fmt.Errorf("%w: %d states, at most %d", ErrBatchTooLarge, len(states), MaxStatesPerTx)
	}
	pids := make([][32]byte, len(states))
	versions := make([]uint64, len(states))
	hashes := make([][32]byte, len(states))
	for i, s := range states {
		if s.StateHash == ([32]byte{}) {
			return Receipt{}, fmt.Errorf("%w: state %d (project %x version %d) has an all-zero hash", ErrInvalid, i, s.ProjectID, s.Version)
		}
		pids[i], versions[i], hashes[i] = s.ProjectID, s.Version, s.StateHash
	}
	r, err := c.send(ctx, "anchoring states", func(opts *bind.TransactOpts) (*types.Transaction, error) {
		return c.contract.AnchorBatch(opts, pids, versions, hashes)
	})
	if err != nil {
		return Receipt{}, err
	}
	ids, err := c.contract.GetAnchorIds(&bind.CallOpts{Context: ctx}, pids, versions)
	if err != nil {
		return r, fmt.Errorf("reading anchor ids after tx %s: %w", r.TxHash, err)
	}
	r.AnchorIDs = make([]uint64, len(ids))
	for i, id := range ids {
		if id.Sign() == 0 || !id.IsUint64() {
			return r, fmt.Errorf("reading anchor ids after tx %s: state %d has id %s", r.TxHash, i, id)
		}
		r.AnchorIDs[i] = id.Uint64()
	}
	c.log.Debug("anchored states", "count", len(states), "tx", r.TxHash, "block", r.Block)
	return r, nil
}

func (c *client) AnchorMemories(ctx context.Context, ms []MemoryAnchor) (Receipt, error) {
	if c.closed.Load() {
		return Receipt{}, ErrClosed
	}
	if len(ms) == 0 {
		return Receipt{}, fmt.Errorf("%w: no memories to anchor", ErrInvalid)
	}
	a := memoryArgs(ms)
	if n := a.size(); n > MaxTxDataBytes {
		return Receipt{}, fmt.Errorf("%w: %d memories encode to %d bytes, at most %d (see SplitMemories)", ErrBatchTooLarge, len(ms), n, MaxTxDataBytes)
	}
	r, err := c.send(ctx, "anchoring memories", func(opts *bind.TransactOpts) (*types.Transaction, error) {
		return c.contract.AnchorMemories(opts, a.eventHashes, a.contents, a.categories, a.importances, a.plainLengths)
	})
	if err != nil {
		return Receipt{}, err
	}
	c.log.Debug("anchored memories", "count", len(ms), "tx", r.TxHash, "block", r.Block)
	return r, nil
}

// send signs, sends and waits for one transaction, then makes it durable.
func (c *client) send(ctx context.Context, doing string, transact func(*bind.TransactOpts) (*types.Transaction, error)) (Receipt, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	opts, err := bind.NewKeyedTransactorWithChainID(c.key, c.chainID)
	if err != nil {
		return Receipt{}, fmt.Errorf("%s: making signer: %w", doing, err)
	}
	opts.Context = ctx
	tx, err := transact(opts)
	if err != nil {
		return Receipt{}, fmt.Errorf("%s: %w", doing, decodeRevert(err))
	}
	rcpt, err := c.waitMined(ctx, tx.Hash())
	if err != nil {
		return Receipt{}, fmt.Errorf("%s: waiting for tx %s: %w", doing, tx.Hash().Hex(), err)
	}
	if rcpt.Status != types.ReceiptStatusSuccessful {
		return Receipt{}, fmt.Errorf("%s: %w: tx %s in block %d", doing, ErrReverted, tx.Hash().Hex(), rcpt.BlockNumber)
	}
	if c.durable != nil {
		if err := c.durable(); err != nil {
			return Receipt{}, fmt.Errorf("%s: syncing the chain to disk: %w", doing, err)
		}
	}
	return Receipt{TxHash: tx.Hash().Hex(), Block: rcpt.BlockNumber.Uint64()}, nil
}

// waitMined polls for the receipt of tx until it is mined or ctx ends.
func (c *client) waitMined(ctx context.Context, tx common.Hash) (*types.Receipt, error) {
	return waitMined(ctx, c.ec, tx, c.log)
}

func waitMined(ctx context.Context, ec *ethclient.Client, tx common.Hash, log *slog.Logger) (*types.Receipt, error) {
	wait := pollMin
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		r, err := ec.TransactionReceipt(ctx, tx)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) {
			// Some nodes answer "transaction indexing is in progress" for a
			// while; anything else persistent will show as a timeout.
			log.Debug("polling receipt", "tx", tx.Hex(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, pollMax)
		t.Reset(wait)
	}
}

func (c *client) GetAnchorByID(ctx context.Context, id uint64) (Anchor, bool, error) {
	if c.closed.Load() {
		return Anchor{}, false, ErrClosed
	}
	if id == 0 {
		return Anchor{}, false, nil
	}
	out, err := c.contract.GetAnchorById(&bind.CallOpts{Context: ctx}, new(big.Int).SetUint64(id))
	if err != nil {
		return Anchor{}, false, fmt.Errorf("reading anchor %d: %w", id, err)
	}
	if out.AnchoredAt == 0 {
		return Anchor{}, false, nil
	}
	a := Anchor{
		ID: id, ProjectID: out.ProjectId, Version: out.Version, StateHash: out.StateHash,
		AnchoredAt: time.Unix(int64(out.AnchoredAt), 0).UTC(), AnchoredBy: out.AnchoredBy.Hex(),
	}
	c.locate(ctx, &a, out.AnchoredAt)
	return a, true, nil
}

func (c *client) GetAnchor(ctx context.Context, projectID [32]byte, version uint64) (Anchor, bool, error) {
	if c.closed.Load() {
		return Anchor{}, false, ErrClosed
	}
	out, err := c.contract.GetAnchor(&bind.CallOpts{Context: ctx}, projectID, version)
	if err != nil {
		return Anchor{}, false, fmt.Errorf("reading anchor of %x version %d: %w", projectID, version, err)
	}
	if out.AnchorId.Sign() == 0 {
		return Anchor{}, false, nil
	}
	if !out.AnchorId.IsUint64() {
		return Anchor{}, false, fmt.Errorf("reading anchor of %x version %d: id %s out of range", projectID, version, out.AnchorId)
	}
	a := Anchor{
		ID: out.AnchorId.Uint64(), ProjectID: out.AnchoredProjectId, Version: out.AnchoredVersion,
		StateHash: out.StateHash, AnchoredAt: time.Unix(int64(out.AnchoredAt), 0).UTC(),
		AnchoredBy: out.AnchoredBy.Hex(),
	}
	c.locate(ctx, &a, out.AnchoredAt)
	return a, true, nil
}

// locate fills a.TxHash and a.Block from the anchor's StateAnchored event,
// best effort. It finds the blocks whose timestamp is the anchor's
// anchoredAt by binary search over headers (which any node serves, archive
// or not), then filters logs in just those blocks, so it stays within the
// block-range limits public endpoints put on eth_getLogs.
func (c *client) locate(ctx context.Context, a *Anchor, at uint64) {
	c.locMu.Lock()
	l, ok := c.locs[a.ID]
	c.locMu.Unlock()
	if !ok {
		var err error
		l, err = c.findEvent(ctx, a.ID, at)
		if err != nil {
			c.log.Debug("locating anchor event", "anchor_id", a.ID, "err", err)
			return
		}
		c.locMu.Lock()
		c.locs[a.ID] = l
		c.locMu.Unlock()
	}
	a.TxHash, a.Block = l.tx.Hex(), l.block
}

func (c *client) findEvent(ctx context.Context, id, at uint64) (location, error) {
	head, err := c.ec.HeaderByNumber(ctx, nil)
	if err != nil {
		return location{}, fmt.Errorf("reading head: %w", err)
	}
	last := head.Number.Uint64()
	// first returns the lowest block number in [0, last+1] whose timestamp
	// is >= t (last+1 if none).
	first := func(t uint64) (uint64, error) {
		lo, hi := uint64(0), last+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			h, err := c.ec.HeaderByNumber(ctx, new(big.Int).SetUint64(mid))
			if err != nil {
				return 0, fmt.Errorf("reading header %d: %w", mid, err)
			}
			if h.Time >= t {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return lo, nil
	}
	from, err := first(at)
	if err != nil {
		return location{}, err
	}
	to, err := first(at + 1)
	if err != nil {
		return location{}, err
	}
	if from >= to {
		return location{}, fmt.Errorf("no block has timestamp %d", at)
	}
	end := to - 1
	it, err := c.contract.FilterStateAnchored(&bind.FilterOpts{Start: from, End: &end, Context: ctx}, []*big.Int{new(big.Int).SetUint64(id)}, nil)
	if err != nil {
		return location{}, fmt.Errorf("filtering blocks %d-%d: %w", from, end, err)
	}
	defer it.Close()
	for it.Next() {
		if !it.Event.Raw.Removed {
			return location{tx: it.Event.Raw.TxHash, block: it.Event.Raw.BlockNumber}, nil
		}
	}
	if err := it.Error(); err != nil {
		return location{}, fmt.Errorf("filtering blocks %d-%d: %w", from, end, err)
	}
	return location{}, fmt.Errorf("no StateAnchored event in blocks %d-%d", from, end)
}

func (c *client) MemoryEvents(ctx context.Context, eventHash [32]byte, fromBlock uint64) ([]MemoryEvent, error) {
	return c.memoryEvents(&bind.FilterOpts{Start: fromBlock, Context: ctx}, [][32]byte{eventHash})
}

func (c *client) MemoryEventsBetween(ctx context.Context, fromBlock, toBlock uint64) ([]MemoryEvent, error) {
	if toBlock < fromBlock {
		return nil, fmt.Errorf("%w: block range %d-%d", ErrInvalid, fromBlock, toBlock)
	}
	return c.memoryEvents(&bind.FilterOpts{Start: fromBlock, End: &toBlock, Context: ctx}, nil)
}

// memoryEvents reads the MemoryAnchored events opts selects (of hashes; nil: any).
func (c *client) memoryEvents(opts *bind.FilterOpts, hashes [][32]byte) ([]MemoryEvent, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	it, err := c.contract.FilterMemoryAnchored(opts, hashes)
	if err != nil {
		return nil, fmt.Errorf("filtering memory events: %w", err)
	}
	defer it.Close()
	var out []MemoryEvent
	for it.Next() {
		e := it.Event
		if e.Raw.Removed {
			continue
		}
		out = append(out, MemoryEvent{
			MemoryAnchor: MemoryAnchor{
				EventHash: e.EventHash, EncryptedContent: e.EncryptedContent, Category: e.Category,
				Importance: e.Importance, PlainLength: e.PlainLength,
			},
			TxHash: e.Raw.TxHash.Hex(),
			Block:  e.Raw.BlockNumber,
		})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("filtering memory events: %w", err)
	}
	return out, nil
}

// closeClient marks c closed and closes its RPC connection.
func (c *client) closeClient() {
	if c.closed.Swap(true) {
		return
	}
	c.ec.Close()
}

// decodeRevert turns a revert carrying one of the contract's custom errors
// into the matching ErrXxx; other errors come back as they are.
func decodeRevert(err error) error {
	data, ok := ethclient.RevertErrorData(err)
	if !ok || len(data) < 4 {
		return err
	}
	for name, e := range contractABI.Errors {
		if !bytes.Equal(data[:4], e.ID[:4]) {
			continue
		}
		args, uerr := e.Unpack(data)
		if uerr != nil {
			return fmt.Errorf("contract error %s (undecodable: %v): %w", name, uerr, err)
		}
		vals, _ := args.([]any)
		switch name {
		case "AlreadyAnchored":
			return fmt.Errorf("%w: project %x version %v is anchor %v with state hash %x", ErrAlreadyAnchored, vals[0], vals[1], vals[2], vals[3])
		case "NotOwner":
			return fmt.Errorf("%w: caller %v", ErrNotOwner, vals[0])
		case "ZeroStateHash":
			return fmt.Errorf("%w: all-zero state hash for project %x version %v", ErrInvalid, vals[0], vals[1])
		case "LengthMismatch":
			return fmt.Errorf("%w: argument arrays of different lengths", ErrInvalid)
		}
		return fmt.Errorf("contract error %s%v: %w", name, vals, err)
	}
	return err
}
