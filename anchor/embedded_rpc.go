package anchor

import "github.com/ethereum/go-ethereum/rpc"

var (
	_ RPCSource = (*Embedded)(nil)
	_ RPCSource = (*RPC)(nil)
)

// RPCClient returns the in-process JSON-RPC client of the embedded node:
// the one the chain itself reads and sends through (node.Attach, made once
// when the chain opened). It belongs to the chain, which closes it on Close.
// Over it every API the node registers is reachable (eth, net, web3, admin,
// debug, dev, txpool, …), so hand it to the public only through PublicRPC.
func (e *Embedded) RPCClient() *rpc.Client { return e.ec.Client() }

// RPCClient returns the JSON-RPC client of the endpoint r dialed. It belongs
// to r, which closes it on Close.
func (r *RPC) RPCClient() *rpc.Client { return r.ec.Client() }
