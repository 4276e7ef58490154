package anchor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
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

	sender atomic.Pointer[sender] // sends and follows each transaction; replaced (SetTxPolicy) under sendMu

	readOnly bool // DialRPCReadOnly: sends nothing
	closed   atomic.Bool
	sendMu   sync.Mutex // held while a transaction is signed, sent and mined: keeps nonces in order

	minedMu sync.Mutex
	mined   map[common.Hash]minedTx // TxStatus: where each transaction asked about was mined
}

// minedTx is where a transaction's receipt put it, and whether it failed.
// While the block at that height still has that hash, the receipt says the
// same, so TxStatus reads the block's hash instead of the receipt again: an
// anchorMemories receipt carries one log per memory (~1 MB of JSON for 2,000),
// and decoding it was half the anchor worker's CPU besides its scan.
type minedTx struct {
	block     uint64
	blockHash common.Hash
	reverted  bool
}

// maxMinedTxs bounds client.mined (it is emptied when full; the worker and
// the checkpointer follow a few transactions at a time).
const maxMinedTxs = 1024

func newClient(ec *ethclient.Client, addr common.Address, key *ecdsa.PrivateKey, chainID *big.Int, info ChainInfo, log *slog.Logger) (*client, error) {
	bound, err := contract.NewProjectStateAnchor(addr, ec)
	if err != nil {
		return nil, fmt.Errorf("binding contract: %w", err)
	}
	from := ethcrypto.PubkeyToAddress(key.PublicKey)
	info.ChainID = chainID.Uint64()
	info.Contract = addr.Hex()
	info.Account = from.Hex()
	c := &client{
		ec: ec, contract: bound, address: addr, key: key, from: from,
		chainID: chainID, info: info, log: log,
	}
	c.sender.Store(newSender(ec, key, chainID, TxPolicy{}, log))
	return c, nil
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
	if err := c.checkContract(ctx); err != nil {
		return err
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

// checkContract fails unless the current ProjectStateAnchor is at c.address.
func (c *client) checkContract(ctx context.Context) error {
	code, err := c.ec.CodeAt(ctx, c.address, nil)
	if err != nil {
		return fmt.Errorf("reading contract code: %w", err)
	}
	if len(code) == 0 {
		return fmt.Errorf("no contract at %s on chain %d", c.address.Hex(), c.chainID)
	}
	current, err := isCurrentContract(ctx, c.ec, c.address)
	if err != nil {
		return err
	}
	if !current {
		return fmt.Errorf("%w: %s on chain %d", ErrOldContract, c.address.Hex(), c.chainID)
	}
	return nil
}

// isCurrentContract reports whether the contract at addr is this package's
// ProjectStateAnchor (v2, Merkle roots), not v1 (one anchor per version):
// only v2 answers getRoot.
func isCurrentContract(ctx context.Context, ec *ethclient.Client, addr common.Address) (bool, error) {
	data, err := contractABI.Pack("getRoot", [32]byte{})
	if err != nil {
		return false, err
	}
	out, err := ec.CallContract(ctx, ethereum.CallMsg{To: &addr, Data: data}, nil)
	if err != nil {
		if _, reverted := ethclient.RevertErrorData(err); reverted || strings.Contains(err.Error(), "execution reverted") {
			return false, nil
		}
		return false, fmt.Errorf("probing the contract at %s: %w", addr.Hex(), err)
	}
	return len(out) == 96, nil
}

func (c *client) AnchorRoot(ctx context.Context, root [32]byte, count int) (Receipt, error) {
	if c.closed.Load() {
		return Receipt{}, ErrClosed
	}
	if root == ([32]byte{}) || count <= 0 {
		return Receipt{}, fmt.Errorf("%w: root %x over %d leaves", ErrInvalid, root, count)
	}
	if count > MaxLeavesPerRoot {
		return Receipt{}, fmt.Errorf("%w: %d leaves, at most %d", ErrBatchTooLarge, count, MaxLeavesPerRoot)
	}
	data, err := contractABI.Pack("anchorRoot", root, uint32(count))
	if err != nil {
		return Receipt{}, fmt.Errorf("anchoring a root: encoding: %w", err)
	}
	r, err := c.sendRoot(ctx, "anchoring a root", data, root)
	if err != nil {
		return Receipt{}, err
	}
	c.log.Debug("anchored a root", "root", HashHex(root), "count", count, "tx", r.TxHash, "block", r.Block)
	return r, nil
}

func (c *client) AnchorMemories(ctx context.Context, root [32]byte, ms []MemoryAnchor) (Receipt, error) {
	if c.closed.Load() {
		return Receipt{}, ErrClosed
	}
	if len(ms) == 0 || root == ([32]byte{}) {
		return Receipt{}, fmt.Errorf("%w: no memories to anchor", ErrInvalid)
	}
	a := memoryArgs(ms)
	if n := a.size(); n > MaxTxDataBytes {
		return Receipt{}, fmt.Errorf("%w: %d memories encode to %d bytes, at most %d (see SplitMemories)", ErrBatchTooLarge, len(ms), n, MaxTxDataBytes)
	}
	data, err := contractABI.Pack("anchorMemories", root, a.eventHashes, a.contents, a.categories, a.importances, a.plainLengths)
	if err != nil {
		return Receipt{}, fmt.Errorf("anchoring memories: encoding: %w", err)
	}
	r, err := c.sendRoot(ctx, "anchoring memories", data, root)
	if err != nil {
		return Receipt{}, err
	}
	c.log.Debug("anchored memories", "count", len(ms), "tx", r.TxHash, "block", r.Block)
	return r, nil
}

// sendRoot sends a call anchoring root and returns where the root's
// RootAnchored event is: in this transaction, or, if the root was already
// anchored (the call was a no-op), in the transaction that first anchored
// it, so a Receipt always points at the event a verifier looks for.
func (c *client) sendRoot(ctx context.Context, doing string, data []byte, root [32]byte) (Receipt, error) {
	r, logs, err := c.send(ctx, doing, data)
	if err != nil {
		return Receipt{}, err
	}
	ev := contractABI.Events["RootAnchored"].ID
	for _, l := range logs {
		if l.Address == c.address && len(l.Topics) == 3 && l.Topics[0] == ev && l.Topics[2] == common.Hash(root) {
			r.RootID = new(big.Int).SetBytes(l.Topics[1][:]).Uint64()
			return r, nil
		}
	}
	// Already anchored: find the first event.
	it, err := c.contract.FilterRootAnchored(&bind.FilterOpts{Context: ctx}, nil, [][32]byte{root})
	if err != nil {
		return r, fmt.Errorf("%s: finding root %s: %w", doing, HashHex(root), err)
	}
	defer it.Close()
	for it.Next() {
		if it.Event.Raw.Removed {
			continue
		}
		blk, err := c.ec.HeaderByNumber(ctx, new(big.Int).SetUint64(it.Event.Raw.BlockNumber))
		if err != nil {
			return r, fmt.Errorf("%s: reading block %d: %w", doing, it.Event.Raw.BlockNumber, err)
		}
		return Receipt{TxHash: it.Event.Raw.TxHash.Hex(), Block: it.Event.Raw.BlockNumber, BlockHash: blk.Hash().Hex(),
			RootID: it.Event.RootId.Uint64()}, nil
	}
	if err := it.Error(); err != nil {
		return r, fmt.Errorf("%s: finding root %s: %w", doing, HashHex(root), err)
	}
	return r, fmt.Errorf("%s: tx %s was mined but root %s has no RootAnchored event", doing, r.TxHash, HashHex(root))
}

func (c *client) GetRoot(ctx context.Context, root [32]byte) (RootInfo, bool, error) {
	if c.closed.Load() {
		return RootInfo{}, false, ErrClosed
	}
	out, err := c.contract.GetRoot(&bind.CallOpts{Context: ctx}, root)
	if err != nil {
		return RootInfo{}, false, fmt.Errorf("reading root %s: %w", HashHex(root), err)
	}
	if out.RootId.Sign() == 0 {
		return RootInfo{}, false, nil
	}
	if !out.RootId.IsUint64() {
		return RootInfo{}, false, fmt.Errorf("reading root %s: id %s out of range", HashHex(root), out.RootId)
	}
	return RootInfo{ID: out.RootId.Uint64(), AnchoredAt: time.Unix(int64(out.AnchoredAt), 0).UTC(), Count: out.Count}, true, nil
}

func (c *client) TxStatus(ctx context.Context, txHash string) (TxState, error) {
	if c.closed.Load() {
		return TxState{}, ErrClosed
	}
	head, err := c.ec.BlockNumber(ctx)
	if err != nil {
		return TxState{}, fmt.Errorf("reading the head: %w", err)
	}
	st := TxState{Head: head}
	h := common.HexToHash(txHash)
	c.minedMu.Lock()
	m, known := c.mined[h]
	c.minedMu.Unlock()
	if known && m.block <= head {
		if bh, err := c.blockHash(ctx, m.block); err == nil && bh == m.blockHash {
			st.Mined, st.Reverted, st.Block, st.BlockHash = true, m.reverted, m.block, m.blockHash.Hex()
			return st, nil
		}
		// Another block at that height (a reorg), none yet, or an error:
		// the receipt says where the transaction is now, if anywhere.
	}
	r, err := c.ec.TransactionReceipt(ctx, h)
	if errors.Is(err, ethereum.NotFound) {
		c.forgetMined(h)
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading the receipt of %s: %w", txHash, err)
	}
	c.rememberMined(r)
	st.Mined, st.Reverted = true, r.Status != types.ReceiptStatusSuccessful
	st.Block, st.BlockHash = r.BlockNumber.Uint64(), r.BlockHash.Hex()
	return st, nil
}

// blockHash returns the hash of the canonical block at number n, read
// without its transactions.
func (c *client) blockHash(ctx context.Context, n uint64) (common.Hash, error) {
	var b struct {
		Hash *common.Hash `json:"hash"`
	}
	if err := c.ec.Client().CallContext(ctx, &b, "eth_getBlockByNumber", hexutil.EncodeUint64(n), false); err != nil {
		return common.Hash{}, err
	}
	if b.Hash == nil {
		return common.Hash{}, ethereum.NotFound
	}
	return *b.Hash, nil
}

// rememberMined records where r's transaction was mined (see minedTx).
func (c *client) rememberMined(r *types.Receipt) {
	if r == nil || r.BlockNumber == nil {
		return
	}
	c.minedMu.Lock()
	defer c.minedMu.Unlock()
	if c.mined == nil || len(c.mined) >= maxMinedTxs {
		c.mined = make(map[common.Hash]minedTx)
	}
	c.mined[r.TxHash] = minedTx{block: r.BlockNumber.Uint64(), blockHash: r.BlockHash, reverted: r.Status != types.ReceiptStatusSuccessful}
}

func (c *client) forgetMined(h common.Hash) {
	c.minedMu.Lock()
	defer c.minedMu.Unlock()
	delete(c.mined, h)
}

// send signs, sends and waits for one transaction calling the contract
// with data (the sender: fee caps, nonces, replacement of a stuck
// transaction, funds named), then makes it durable.
func (c *client) send(ctx context.Context, doing string, data []byte) (Receipt, []*types.Log, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.closed.Load() {
		return Receipt{}, nil, ErrClosed
	}
	if c.readOnly {
		return Receipt{}, nil, fmt.Errorf("%s: %w: this instance only reads the chain (no anchoring key)", doing, ErrNotOwner)
	}
	rcpt, err := c.sender.Load().Send(ctx, c.address, data, doing)
	c.rememberMined(rcpt) // a reverted one too
	if err != nil {
		return Receipt{}, nil, fmt.Errorf("%s: %w", doing, decodeRevert(err))
	}
	if c.durable != nil {
		if err := c.durable(); err != nil {
			return Receipt{}, nil, fmt.Errorf("%s: syncing the chain to disk: %w", doing, err)
		}
	}
	return Receipt{TxHash: rcpt.TxHash.Hex(), Block: rcpt.BlockNumber.Uint64(), BlockHash: rcpt.BlockHash.Hex()}, rcpt.Logs, nil
}

// SetTxPolicy sets the fee caps and replacement timing of the
// transactions sent from now on ([chain] max_fee_gwei,
// max_priority_fee_gwei, replace_after). Call it before anchoring.
func (c *client) SetTxPolicy(p TxPolicy) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.sender.Store(newSender(c.ec, c.key, c.chainID, p, c.log))
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
			// A node can serve the receipt of a block it has stored before
			// that block is its head (geth --dev indexes the block, then the
			// beacon's forkchoice update moves the head): a call at "latest"
			// right after would not see the transaction's effect yet
			// (TestGethDev read GetRoot = false once in CI). Mined means
			// readable at the head.
			head, herr := ec.BlockNumber(ctx)
			if herr == nil && r.BlockNumber != nil && head >= r.BlockNumber.Uint64() {
				return r, nil
			}
			if herr != nil {
				log.Debug("reading the head", "tx", tx.Hex(), "err", herr)
			}
		} else if !errors.Is(err, ethereum.NotFound) {
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
		case "NotOwner":
			return fmt.Errorf("%w: caller %v", ErrNotOwner, vals[0])
		case "ZeroRoot", "ZeroCount":
			return fmt.Errorf("%w: %s", ErrInvalid, name)
		case "LengthMismatch":
			return fmt.Errorf("%w: argument arrays of different lengths", ErrInvalid)
		}
		return fmt.Errorf("contract error %s%v: %w", name, vals, err)
	}
	return err
}
