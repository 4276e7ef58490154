package gateway

import "net/http"

// ChainRPCPath serves the embedded chain's JSON-RPC, read-only and public
// (SPEC §11), so that anyone verifies anchors with ethers, viem or cast.
// The handler is Config.ChainRPC (package anchor's PublicRPC): it is a
// protocol endpoint like /mcp, not an operation of app's table. Browsers
// may call it from any origin (the browser guard lets its cross-origin
// requests through; the Host check still applies).
const ChainRPCPath = "/v1/chain/rpc"

// chainRPCRoutes returns the routes of ChainRPCPath: POST (JSON-RPC) and
// OPTIONS (the CORS preflight), public. Without Config.ChainRPC both answer
// 404.
func (s *Server) chainRPCRoutes() []route {
	h := s.cfg.ChainRPC
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, "this instance serves no chain RPC at %s: only an instance running the embedded chain (home, by default) does", ChainRPCPath)
		})
	}
	doc := routeDoc{tag: "chain", jsonrpc: true}
	post, options := doc, doc
	post.summary = "The embedded chain's JSON-RPC 2.0, read-only (eth_chainId, eth_blockNumber, eth_call, eth_getCode, eth_getLogs, eth_getTransactionReceipt, eth_getBlockByNumber, …)"
	options.summary = "CORS preflight of the chain's JSON-RPC"
	return []route{
		{method: http.MethodPost, path: ChainRPCPath, access: public, h: h, doc: post},
		{method: http.MethodOptions, path: ChainRPCPath, access: public, h: h, doc: options},
	}
}

// chainRPCOperation describes one method of ChainRPCPath.
func chainRPCOperation(op, responses map[string]any, method string) {
	answer := map[string]any{
		"type":     "object",
		"required": []string{"jsonrpc", "id"},
		"properties": map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"id":      map[string]any{"type": []string{"string", "number", "null"}},
			"result":  map[string]any{},
			"error": map[string]any{"type": "object", "required": []string{"code", "message"}, "properties": map[string]any{
				"code": map[string]any{"type": "integer"}, "message": map[string]any{"type": "string"}, "data": map[string]any{}}},
		},
	}
	request := map[string]any{
		"type":     "object",
		"required": []string{"jsonrpc", "method"},
		"properties": map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"id":      map[string]any{"type": []string{"string", "number", "null"}, "description": "absent for a notification, which is not answered"},
			"method":  map[string]any{"type": "string"},
			"params":  map[string]any{"type": "array"},
		},
	}
	one := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": answer}}}
	}
	switch method {
	case http.MethodPost:
		op["description"] = "Standard Ethereum JSON-RPC over HTTP, so ethers, viem or `cast --rpc-url` verify anchors with no crow code. " +
			"Only reads are served: web3_clientVersion, net_version, net_listening, eth_chainId, eth_syncing, eth_blockNumber, eth_gasPrice, " +
			"eth_maxPriorityFeePerGas, eth_feeHistory, eth_call, eth_estimateGas, eth_getBalance, eth_getCode, eth_getStorageAt, " +
			"eth_getTransactionCount, eth_getProof, eth_getLogs, eth_getBlockByNumber, eth_getBlockByHash, eth_getBlockTransactionCountBy*, " +
			"eth_getTransactionByHash, eth_getTransactionByBlock*AndIndex, eth_getTransactionReceipt; every other method (all writes: " +
			"eth_sendRawTransaction, eth_sendTransaction, eth_sign*, personal_*, admin_*, debug_*, miner_*, dev_*, txpool_*, engine_*, " +
			"eth_subscribe, eth_newFilter, …) is answered with error -32601. Bounds: a body of at most 128 KiB (413), batches of at " +
			"most 20 calls, eth_getLogs over at most 10,000 blocks (-32005), 4 MiB of results per request (-32003), 5 s per call " +
			"(-32002), 8 requests in flight (429 with error -32005 and Retry-After). Any origin may call it (Access-Control-Allow-Origin: *). " +
			"An instance without the embedded chain answers 404."
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"oneOf": []any{request, map[string]any{"type": "array", "items": request, "minItems": 1, "maxItems": 20}}}}}}
		responses["200"] = map[string]any{"description": "The JSON-RPC answer, or for a batch the array of answers (a call's failure is its error object)",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"oneOf": []any{answer, map[string]any{"type": "array", "items": answer}}}}}}
		responses["204"] = map[string]any{"description": "The request held only notifications"}
		responses["413"] = one("The body is over 128 KiB")
		responses["415"] = one("The body is not JSON (Content-Type)")
		responses["429"] = one("Too many requests in flight: retry after Retry-After seconds")
	case http.MethodOptions:
		op["description"] = "Answers a browser's CORS preflight: any origin, POST."
		responses["204"] = map[string]any{"description": "Access-Control-Allow-* headers"}
	}
}
