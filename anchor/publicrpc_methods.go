package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// publicMethods are the methods PublicRPC forwards: reads of the chain's
// state, blocks, transactions and logs, and what ethers v6, viem and cast
// send for them (eth_chainId to detect the network, eth_blockNumber, fee
// data for a provider's getFeeData). eth_call and eth_estimateGas execute
// nothing for good: they run against a copy of the state, capped by the
// node's gas cap and EVM timeout. The stateful filters (eth_newFilter,
// eth_getFilterChanges, …) are left out: each holds memory on the node for
// whoever made it.
var publicMethods = map[string]bool{
	"web3_clientVersion": true,
	"net_version":        true,
	"net_listening":      true,

	"eth_chainId":                             true,
	"eth_syncing":                             true,
	"eth_blockNumber":                         true,
	"eth_gasPrice":                            true,
	"eth_maxPriorityFeePerGas":                true,
	"eth_feeHistory":                          true,
	"eth_call":                                true,
	"eth_estimateGas":                         true,
	"eth_getBalance":                          true,
	"eth_getCode":                             true,
	"eth_getStorageAt":                        true,
	"eth_getTransactionCount":                 true,
	"eth_getProof":                            true,
	"eth_getLogs":                             true,
	"eth_getBlockByNumber":                    true,
	"eth_getBlockByHash":                      true,
	"eth_getBlockTransactionCountByNumber":    true,
	"eth_getBlockTransactionCountByHash":      true,
	"eth_getTransactionByHash":                true,
	"eth_getTransactionByBlockNumberAndIndex": true,
	"eth_getTransactionByBlockHashAndIndex":   true,
	"eth_getTransactionReceipt":               true,
}

// call runs one checked call on the chain. budget is how many result bytes
// the request may still return.
func (p *PublicRPC) call(ctx context.Context, c rpcCall, budget int) (json.RawMessage, *rpcError) {
	if !publicMethods[c.method] {
		// go-ethereum's wording, which ethers maps to UNSUPPORTED_OPERATION.
		return nil, errorf(codeMethodNotFound, "the method %s does not exist/is not available: this endpoint is public and read-only", c.method)
	}
	cl := p.src.RPCClient()
	if cl == nil {
		return nil, errorf(codeServer, "the chain is not open")
	}
	ctx, cancel := context.WithTimeout(ctx, p.lim.callTimeout)
	defer cancel()
	if c.method == "eth_getLogs" {
		return p.getLogs(ctx, cl, c.params, budget)
	}
	return p.forward(ctx, cl, c.method, c.params)
}

// forward makes the call as it came and returns the chain's result bytes.
func (p *PublicRPC) forward(ctx context.Context, cl *rpc.Client, method string, params []json.RawMessage) (json.RawMessage, *rpcError) {
	args := make([]any, len(params))
	for i, a := range params {
		args[i] = a
	}
	var res json.RawMessage
	if err := cl.CallContext(ctx, &res, method, args...); err != nil {
		return nil, p.rpcErrorOf(ctx, method, err)
	}
	return res, nil
}

// rpcErrorOf is the answer for a failed call: the chain's own JSON-RPC
// error as it is, or a timeout; anything else (the connection failed) is
// logged and answered without its text, which may name the upstream
// endpoint.
func (p *PublicRPC) rpcErrorOf(ctx context.Context, method string, err error) *rpcError {
	if re, ok := errors.AsType[rpc.Error](err); ok {
		e := &rpcError{Code: re.ErrorCode(), Message: re.Error()}
		if de, ok := errors.AsType[rpc.DataError](err); ok {
			e.Data = de.ErrorData()
		}
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errorf(codeTimeout, "request timed out (at most %s per call)", p.lim.callTimeout)
	case errors.Is(err, context.Canceled):
		return errorf(codeServer, "request canceled")
	case errors.Is(err, rpc.ErrClientQuit):
		return errorf(codeServer, "the chain is closed")
	}
	p.log.Warn("chain rpc: call failed", "method", method, "err", err)
	return errorf(codeInternal, "internal error: the chain did not answer")
}

// getLogs bounds eth_getLogs: a range (fromBlock..toBlock, numbers or tags,
// "latest" by default) spans at most maxLogRange blocks; a blockHash query
// is one block. A range wider than logWindow is read window by window and
// given up once its logs pass budget, so the chain never builds more than
// one window's logs for it at once; the answer is the concatenation, the
// same array the whole range gives.
func (p *PublicRPC) getLogs(ctx context.Context, cl *rpc.Client, params []json.RawMessage, budget int) (json.RawMessage, *rpcError) {
	if len(params) != 1 {
		return p.forward(ctx, cl, "eth_getLogs", params) // the chain refuses the arity
	}
	var crit struct { // decoded as the chain's filters.FilterCriteria decodes them
		BlockHash *common.Hash     `json:"blockHash"`
		FromBlock *rpc.BlockNumber `json:"fromBlock"`
		ToBlock   *rpc.BlockNumber `json:"toBlock"`
	}
	if err := json.Unmarshal(params[0], &crit); err != nil {
		return nil, errorf(codeInvalidParams, "invalid eth_getLogs filter: %v", err)
	}
	if crit.BlockHash != nil {
		return p.forward(ctx, cl, "eth_getLogs", params)
	}
	var head *uint64
	resolve := func(bn *rpc.BlockNumber) (n uint64, ok bool, e *rpcError) {
		b := rpc.LatestBlockNumber
		if bn != nil {
			b = *bn
		}
		switch b {
		case rpc.PendingBlockNumber:
			return 0, false, nil // the chain refuses pending logs
		case rpc.LatestBlockNumber:
			if head == nil {
				var h hexutil.Uint64
				if err := cl.CallContext(ctx, &h, "eth_blockNumber"); err != nil {
					return 0, false, p.rpcErrorOf(ctx, "eth_blockNumber", err)
				}
				head = (*uint64)(&h)
			}
			return *head, true, nil
		case rpc.SafeBlockNumber, rpc.FinalizedBlockNumber:
			var hdr *struct {
				Number hexutil.Uint64 `json:"number"`
			}
			if err := cl.CallContext(ctx, &hdr, "eth_getBlockByNumber", b, false); err != nil {
				return 0, false, p.rpcErrorOf(ctx, "eth_getBlockByNumber", err)
			}
			if hdr == nil {
				return 0, false, errorf(codeInvalidParams, "the chain has no %s block yet", b)
			}
			return uint64(hdr.Number), true, nil
		case rpc.EarliestBlockNumber:
			return 0, true, nil // the chain's earliest may be later: the range is only counted wider
		}
		if b < 0 {
			return 0, false, errorf(codeInvalidParams, "invalid eth_getLogs filter: block %d", b.Int64())
		}
		return uint64(b), true, nil
	}
	from, okFrom, e := resolve(crit.FromBlock)
	if e != nil {
		return nil, e
	}
	to, okTo, e := resolve(crit.ToBlock)
	if e != nil {
		return nil, e
	}
	if !okFrom || !okTo || from > to {
		return p.forward(ctx, cl, "eth_getLogs", params) // the chain refuses these
	}
	if span := to - from + 1; span > p.lim.maxLogRange {
		return nil, errorf(codeLimitExceeded, "eth_getLogs over %d blocks (%d to %d): this public endpoint answers at most %d blocks per query; narrow fromBlock/toBlock or query one block by blockHash",
			span, from, to, p.lim.maxLogRange)
	}
	if to-from < p.lim.logWindow {
		return p.forward(ctx, cl, "eth_getLogs", params)
	}
	return p.getLogsWindowed(ctx, cl, params[0], from, to, budget)
}

// getLogsWindowed reads the logs of from..to, logWindow blocks at a time,
// with the rest of filter as it is.
func (p *PublicRPC) getLogsWindowed(ctx context.Context, cl *rpc.Client, filter json.RawMessage, from, to uint64, budget int) (json.RawMessage, *rpcError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(filter, &fields); err != nil {
		return nil, errorf(codeInvalidParams, "invalid eth_getLogs filter: %v", err)
	}
	for k := range fields { // the chain matches field names without regard to case
		if strings.EqualFold(k, "fromBlock") || strings.EqualFold(k, "toBlock") {
			delete(fields, k)
		}
	}
	out := []byte{'['}
	for lo := from; ; lo += p.lim.logWindow {
		hi := min(lo+p.lim.logWindow-1, to)
		fields["fromBlock"], _ = json.Marshal(hexutil.Uint64(lo))
		fields["toBlock"], _ = json.Marshal(hexutil.Uint64(hi))
		f, err := json.Marshal(fields)
		if err != nil {
			return nil, errorf(codeInvalidParams, "invalid eth_getLogs filter: %v", err)
		}
		res, e := p.forward(ctx, cl, "eth_getLogs", []json.RawMessage{f})
		if e != nil {
			return nil, e
		}
		logs := bytes.TrimSpace(res)
		if bytes.Equal(logs, null) {
			logs = []byte("[]")
		}
		if len(logs) < 2 || logs[0] != '[' || logs[len(logs)-1] != ']' {
			p.log.Warn("chain rpc: eth_getLogs answered no array", "from", lo, "to", hi)
			return nil, errorf(codeInternal, "internal error: the chain answered eth_getLogs with no array")
		}
		if inner := bytes.TrimSpace(logs[1 : len(logs)-1]); len(inner) > 0 {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, inner...)
		}
		if len(out)+1 > budget {
			return nil, errorf(codeLimitExceeded, "eth_getLogs from %d to %d matches more than the %d bytes of logs this request may return; narrow the range or filter by address and topics",
				from, to, budget)
		}
		if hi == to {
			break
		}
	}
	return append(out, ']'), nil
}
