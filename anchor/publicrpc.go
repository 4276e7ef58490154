package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/rpc"
)

// RPCSource is a chain whose JSON-RPC can be read directly: Embedded (the
// node's in-process handler) and RPC (the endpoint it dialed).
type RPCSource interface {
	// RPCClient returns the chain's JSON-RPC client. It belongs to the
	// chain: callers must not close it, and it stops working when the chain
	// is closed.
	RPCClient() *rpc.Client
}

// PublicRPC serves a chain's JSON-RPC to anyone, read-only (SPEC §11:
// POST /v1/chain/rpc), so that a third party verifies anchors with ethers,
// viem or cast and no crow code. It is an http.Handler:
//
//  1. POST with a JSON body (Content-Type application/json) carrying a
//     JSON-RPC 2.0 request or a batch of at most 20; OPTIONS answers a CORS
//     preflight; every other method is a 405. Every answer allows any
//     origin (Access-Control-Allow-Origin: *).
//  2. Only the read methods of publicMethods are forwarded; any other
//     method (eth_sendRawTransaction, eth_sendTransaction, eth_sign*,
//     personal_*, admin_*, debug_*, miner_*, dev_*, txpool_*, engine_*,
//     eth_subscribe, the eth_newFilter family, …) is answered with error
//     -32601 and never reaches the chain.
//  3. Results pass through byte for byte, and so do the chain's errors
//     (code, message, data); a failure of the connection itself is
//     reported without its details, which stay in the log.
//  4. Bounds: a body of at most 128 KiB (413), an eth_getLogs range of at
//     most 10,000 blocks (by number or tag; a blockHash query is one block),
//     at most 4 MiB of results per HTTP request (-32003 for the call that
//     would pass it), 5 s per call (-32002) and 15 s per request, at most 8
//     requests in flight (beyond that a 429 with error -32005 and
//     Retry-After, never a queue).
//  5. Notifications (no id) are not executed (every allowed method is a
//     read, so there is nothing to do) and get no answer; a request of
//     notifications only is answered 204.
//
// It is safe for concurrent use.
type PublicRPC struct {
	src   RPCSource
	log   *slog.Logger
	lim   rpcLimits
	slots chan struct{} // one token per request being served
}

// rpcLimits are PublicRPC's bounds (defaultRPCLimits; tests shrink them).
type rpcLimits struct {
	maxBody     int64         // request body, bytes
	maxBatch    int           // calls per batch
	maxLogRange uint64        // blocks per eth_getLogs range query, both ends included
	logWindow   uint64        // a wider eth_getLogs range is read this many blocks at a time
	maxResponse int           // result bytes per HTTP request
	callTimeout time.Duration // per call
	reqTimeout  time.Duration // per HTTP request (a batch's calls run one after the other)
	maxInFlight int           // HTTP requests served at once
}

var defaultRPCLimits = rpcLimits{
	maxBody:     128 << 10,
	maxBatch:    20,
	maxLogRange: 10_000,
	logWindow:   500,
	maxResponse: 4 << 20,
	callTimeout: 5 * time.Second,
	reqTimeout:  15 * time.Second,
	maxInFlight: 8,
}

// NewPublicRPC serves src's JSON-RPC read-only. log may be nil.
func NewPublicRPC(src RPCSource, log *slog.Logger) *PublicRPC {
	return newPublicRPC(src, log, defaultRPCLimits)
}

func newPublicRPC(src RPCSource, log *slog.Logger, lim rpcLimits) *PublicRPC {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PublicRPC{src: src, log: log, lim: lim, slots: make(chan struct{}, lim.maxInFlight)}
}

// JSON-RPC error codes PublicRPC answers with itself (the chain's own errors
// pass through with theirs).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeServer         = -32000
	codeTimeout        = -32002 // as go-ethereum's server
	codeTooLarge       = -32003 // as go-ethereum's server: response too large
	codeLimitExceeded  = -32005 // EIP-1474: a request exceeds a limit
)

// rpcError is a JSON-RPC 2.0 error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rpcCall is one request of the body, checked.
type rpcCall struct {
	id     json.RawMessage // the request's id as sent; nil for a notification
	method string
	params []json.RawMessage
	// bad, when set, is the answer: the request was malformed and is not run.
	bad *rpcError
}

func (c rpcCall) notification() bool { return c.id == nil && c.bad == nil }

// acceptedTypes are the request media types go-ethereum's server accepts.
var acceptedTypes = map[string]bool{"application/json": true, "application/json-rpc": true, "application/jsonrequest": true}

func (p *PublicRPC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		allow := r.Header.Get("Access-Control-Request-Headers")
		if allow == "" {
			allow = "Content-Type"
		}
		h.Set("Access-Control-Allow-Headers", allow)
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		h.Set("Allow", "POST, OPTIONS")
		writeRPCFailure(w, http.StatusMethodNotAllowed, errorf(codeInvalidRequest,
			"method %s is not allowed: send a JSON-RPC 2.0 request as POST with Content-Type: application/json", r.Method))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || !acceptedTypes[mt] {
		writeRPCFailure(w, http.StatusUnsupportedMediaType, errorf(codeInvalidRequest,
			"Content-Type %q is not accepted: the body must be JSON (application/json)", r.Header.Get("Content-Type")))
		return
	}
	tooLarge := errorf(codeInvalidRequest, "the request body is larger than the %d bytes this public endpoint accepts", p.lim.maxBody)
	if r.ContentLength > p.lim.maxBody {
		writeRPCFailure(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.lim.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeRPCFailure(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		writeRPCFailure(w, http.StatusBadRequest, errorf(codeParseError, "reading the request body: %v", err))
		return
	}
	calls, batch, fail := p.parse(body)
	if fail != nil {
		writeRPCFailure(w, http.StatusOK, fail)
		return
	}
	answered := 0
	for _, c := range calls {
		if !c.notification() {
			answered++
		}
	}
	if answered == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}

	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		busy := errorf(codeLimitExceeded, "busy: %d requests are being served; retry in a moment", p.lim.maxInFlight)
		h.Set("Retry-After", "1")
		p.writeAnswers(w, http.StatusTooManyRequests, calls, batch, func(c rpcCall) (json.RawMessage, *rpcError) {
			if c.bad != nil {
				return nil, c.bad
			}
			return nil, busy
		})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.lim.reqTimeout)
	defer cancel()
	budget := p.lim.maxResponse
	p.writeAnswers(w, http.StatusOK, calls, batch, func(c rpcCall) (json.RawMessage, *rpcError) {
		if c.bad != nil {
			return nil, c.bad
		}
		res, e := p.call(ctx, c, budget)
		if e != nil {
			return nil, e
		}
		if len(res) > budget {
			return nil, errorf(codeTooLarge, "response too large: %s's result is %d bytes and this request may return %d more; ask for less",
				c.method, len(res), budget)
		}
		budget -= len(res)
		return res, nil
	})
}

// parse splits the body into calls. A body that is not JSON, or an empty
// or too large batch, is one error for the whole body.
func (p *PublicRPC) parse(body []byte) (calls []rpcCall, batch bool, fail *rpcError) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || !json.Valid(body) {
		return nil, false, errorf(codeParseError, "parse error: the body is not JSON")
	}
	if body[0] != '[' {
		return []rpcCall{parseCall(body)}, false, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, false, errorf(codeParseError, "parse error: %v", err)
	}
	switch {
	case len(raws) == 0:
		return nil, true, errorf(codeInvalidRequest, "empty batch")
	case len(raws) > p.lim.maxBatch:
		return nil, true, errorf(codeInvalidRequest, "batch too large: %d calls, at most %d per batch on this public endpoint", len(raws), p.lim.maxBatch)
	}
	calls = make([]rpcCall, len(raws))
	for i, raw := range raws {
		calls[i] = parseCall(raw)
	}
	return calls, true, nil
}

var null = json.RawMessage("null")

// parseCall checks one request object (raw is valid JSON).
func parseCall(raw json.RawMessage) rpcCall {
	invalid := func(id json.RawMessage, msg string) rpcCall {
		if id == nil {
			id = null
		}
		return rpcCall{id: id, bad: errorf(codeInvalidRequest, "invalid request: %s", msg)}
	}
	if len(raw) == 0 || raw[0] != '{' {
		return invalid(nil, "a request is a JSON object")
	}
	var m struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return invalid(nil, err.Error())
	}
	c := rpcCall{id: m.ID}
	if c.id != nil {
		switch b := c.id[0]; {
		case b == '"', b == '-', b >= '0' && b <= '9', bytes.Equal(c.id, null):
		default:
			return invalid(nil, "id must be a string, a number or null")
		}
	}
	if m.JSONRPC != nil && string(m.JSONRPC) != `"2.0"` {
		return invalid(c.id, `jsonrpc must be "2.0"`)
	}
	if len(m.Method) == 0 || m.Method[0] != '"' || json.Unmarshal(m.Method, &c.method) != nil || c.method == "" {
		return invalid(c.id, "method must be a non-empty string")
	}
	switch {
	case len(m.Params) == 0 || bytes.Equal(m.Params, null):
	case m.Params[0] == '[':
		if err := json.Unmarshal(m.Params, &c.params); err != nil {
			return invalid(c.id, err.Error())
		}
	default:
		if c.id == nil {
			return c // a notification: never answered, never run
		}
		c.bad = errorf(codeInvalidParams, "invalid params: params must be an array (by position)")
	}
	return c
}

// writeAnswers answers every call that is not a notification with run's
// result or error, in order: one object for a single request, an array for
// a batch.
func (p *PublicRPC) writeAnswers(w http.ResponseWriter, status int, calls []rpcCall, batch bool, run func(rpcCall) (json.RawMessage, *rpcError)) {
	var buf bytes.Buffer
	if batch {
		buf.WriteByte('[')
	}
	n := 0
	for _, c := range calls {
		if c.notification() {
			continue
		}
		res, e := run(c)
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		writeAnswer(&buf, c.id, res, e)
	}
	if batch {
		buf.WriteByte(']')
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if _, err := w.Write(buf.Bytes()); err != nil {
		p.log.Debug("chain rpc: writing the answer", "err", err)
	}
}

// writeAnswer writes one response object; the result's bytes are the
// chain's, unchanged.
func writeAnswer(buf *bytes.Buffer, id, result json.RawMessage, e *rpcError) {
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if e != nil {
		b, err := json.Marshal(e)
		if err != nil { // Data the chain sent that does not encode again
			b, _ = json.Marshal(rpcError{Code: e.Code, Message: e.Message})
		}
		buf.WriteString(`,"error":`)
		buf.Write(b)
	} else {
		buf.WriteString(`,"result":`)
		buf.Write(result)
	}
	buf.WriteByte('}')
}

// writeRPCFailure answers the whole body with one error (id null).
func writeRPCFailure(w http.ResponseWriter, status int, e *rpcError) {
	var buf bytes.Buffer
	writeAnswer(&buf, null, nil, e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
