#!/usr/bin/env node
// Verifies a crow verification packet (GET /v1/project/{name}/state/anchor?version=N)
// against the chain alone, with standard tools: ethers v6, OpenZeppelin's
// merkle-tree library and Node's own Ed25519. No crow code, no trust in the
// gateway that served the packet.
//
//   node verify.mjs PACKET.json [--rpc URL] [--checkpoint-rpc URL]
//
// PACKET.json is the packet itself or an object with it under "packet" ("-" reads stdin).
// Exit codes: 0 verified, 1 a check failed, 2 usage or unreadable packet,
// 3 the packet's status is "pending" (not anchored yet).
import { readFileSync } from 'node:fs';
import { createHash, createPublicKey, verify as edVerify } from 'node:crypto';
import { Contract, FetchRequest, Interface, JsonRpcProvider, Network, getAddress } from 'ethers';
import { StandardMerkleTree } from '@openzeppelin/merkle-tree';

const STATE_TYPES = ['bytes32', 'uint64', 'bytes32']; // leaf: [project_id, version, state_hash]
const ROOT_TYPES = ['bytes32']; // checkpoint leaf: [root]
const ABI = [
  'function getRoot(bytes32 root) view returns (uint256 rootId, uint64 anchoredAt, uint32 count)',
  'function owner() view returns (address)',
  'event RootAnchored(uint256 indexed rootId, bytes32 indexed root, uint32 count)',
];
const iface = new Interface(ABI);

let failed = false;
function line(ok, what) {
  if (!ok) failed = true;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  return ok;
}
const note = (what) => console.log(`note ${what}`);
const usage = (msg) => {
  console.error(`${msg}\nusage: node verify.mjs PACKET.json [--rpc URL] [--checkpoint-rpc URL]`);
  process.exit(2);
};

// --- arguments and packet ---------------------------------------------------
const opts = {};
let file;
for (let args = process.argv.slice(2); args.length; ) {
  const a = args.shift();
  const m = a.match(/^--(rpc|checkpoint-rpc)(?:=(.*))?$/);
  if (m) {
    opts[m[1]] = m[2] ?? args.shift();
    if (!opts[m[1]]) usage(`${a} needs a URL`);
  } else if (a === '-h' || a === '--help') usage('verifies a crow verification packet against the chain');
  else if (file === undefined && (a === '-' || !a.startsWith('-'))) file = a;
  else usage(`unexpected argument ${a}`);
}
if (file === undefined) usage('missing PACKET.json');
let p;
try {
  p = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8'));
  if (p && typeof p.packet === 'object' && p.packet !== null) p = p.packet;
} catch (e) {
  usage(`cannot read packet ${file}: ${e.message}`);
}

const isHex = (v, bytes) => typeof v === 'string' && new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`).test(v);
const isUint = (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^\d+$/.test(v));
function wellFormed(o, where, fields) {
  const bad = Object.entries(fields)
    .filter(([k, t]) => !(t instanceof RegExp ? typeof o[k] === 'string' && t.test(o[k]) : t === 'uint' ? isUint(o[k]) :
      t === 'proof' ? Array.isArray(o[k]) && o[k].every((h) => isHex(h, 32)) : isHex(o[k], t)))
    .map(([k]) => k);
  if (o.tx_hash && !isHex(o.tx_hash, 32)) bad.push('tx_hash'); // optional ("" or absent: no transaction yet)
  return line(bad.length === 0, `${where} is well-formed${bad.length ? `: bad or missing ${bad.join(', ')}` : ''}`);
}
const STATUSES = ['pending', 'included', 'final'];

// --- offline checks: the Merkle proof and the crow id binding ----------------
const formed = wellFormed(p, 'packet', {
  chain_id: 'uint', contract: 20, project_id: 32, version: 'uint', state_hash: 32, root: 32, proof: 'proof',
  anchoring_address: 20, crow_id: /^crow1[a-z2-7]{16}$/, root_public_key: 32, address_signature: 64,
}) & line(STATUSES.includes(p.status), `packet status is "${p.status}"`);
if (!formed) process.exit(1);
if (p.leaf_types !== undefined)
  line(JSON.stringify(p.leaf_types) === JSON.stringify(STATE_TYPES), `leaf_types ${JSON.stringify(p.leaf_types)} are ${JSON.stringify(STATE_TYPES)}`);

const leaf = [p.project_id, BigInt(p.version).toString(), p.state_hash];
line(merkleOK(p.root, STATE_TYPES, leaf, p.proof),
  `(a) merkle: [project_id, version ${leaf[1]}, state_hash] is a leaf of root ${p.root} (proof of ${p.proof.length})`);
checkBinding(p);

if (p.status === 'pending') {
  if (failed) process.exit(1);
  console.log(`not anchored yet: project ${p.project_id} version ${leaf[1]} is pending (root ${p.root})`);
  process.exit(3);
}

// --- the anchoring chain -----------------------------------------------------
const anchored = await checkChain('', {
  rpc: opts.rpc ?? p.rpc_url, chainId: p.chain_id, contract: p.contract, root: p.root,
  txHash: p.tx_hash, block: p.block_number, owner: p.anchoring_address,
});

// --- the optional public-chain checkpoint ------------------------------------
const cp = p.checkpoint;
let cpRes = {};
if (cp !== undefined && cp !== null) {
  if (wellFormed(cp, 'checkpoint', { chain_id: 'uint', contract: 20, root: 32, proof: 'proof' }) &&
      line(STATUSES.includes(cp.status), `checkpoint status is "${cp.status}"`)) {
    line(merkleOK(cp.root, ROOT_TYPES, [p.root], cp.proof),
      `(h) checkpoint merkle: root ${p.root} is a leaf of checkpoint root ${cp.root} (proof of ${cp.proof.length})`);
    if (cp.status === 'pending') note(`checkpoint is pending: not yet committed on chain ${cp.chain_id}`);
    else cpRes = await checkChain('checkpoint ', {
      rpc: opts['checkpoint-rpc'] ?? cp.rpc_url, chainId: cp.chain_id, contract: cp.contract, root: cp.root,
      txHash: cp.tx_hash, block: cp.block_number, owner: cp.anchoring_address, // usually absent: a separate key
    });
  }
}

if (failed) {
  console.log('NOT verified');
  process.exit(1);
}
console.log(`verified: project ${p.project_id} version ${leaf[1]} is anchored in root ${p.root} (rootId ${anchored.rootId}) on chain ${p.chain_id}` +
  (cp && cp.status !== 'pending' ? `, checkpointed in root ${cp.root} (rootId ${cpRes.rootId}) on chain ${cp.chain_id}` : ''));
process.exit(0);

// --- helpers -------------------------------------------------------------------
function merkleOK(root, types, values, proof) {
  try {
    return StandardMerkleTree.verify(root.toLowerCase(), types, values, proof);
  } catch {
    return false;
  }
}

// (f) crow id = "crow1" + base32(SHA-256("crow-id-v1" || root public key)[:10]), and the root key's
// Ed25519 signature over "crow-anchoring-address-v1\n" + crow_id + "\n" + lowercase 0x-address.
function checkBinding(p) {
  const pub = Buffer.from(p.root_public_key.slice(2), 'hex');
  const id = 'crow1' + base32(createHash('sha256').update('crow-id-v1').update(pub).digest().subarray(0, 10));
  line(id === p.crow_id, `(f) root_public_key derives crow id ${id}${id === p.crow_id ? '' : `, not the packet's ${p.crow_id}`}`);
  const msg = Buffer.from(`crow-anchoring-address-v1\n${p.crow_id}\n${p.anchoring_address.toLowerCase()}`, 'utf8');
  let ok = false;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: pub.toString('base64url') }, format: 'jwk' });
    ok = edVerify(null, msg, key, Buffer.from(p.address_signature.slice(2), 'hex'));
  } catch {}
  line(ok, `(f) the root key signed the binding of anchoring address ${p.anchoring_address} to ${p.crow_id}`);
}

function base32(buf) { // RFC 4648, lowercase, no padding
  const A = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = '', bits = 0, acc = 0;
  for (const b of buf) {
    acc = (acc << 8) | b; bits += 8;
    for (; bits >= 5; bits -= 5) out += A[(acc >>> (bits - 5)) & 31];
  }
  return bits > 0 ? out + A[(acc << (5 - bits)) & 31] : out;
}

// (b)..(e), (g) against one chain. Returns { rootId } (undefined when unknown).
async function checkChain(pre, c) {
  const res = {};
  if (!line(!!c.rpc, `${pre}rpc: ${c.rpc || `none (the packet has no ${pre}rpc_url; pass --${pre ? 'checkpoint-' : ''}rpc URL)`}`)) return res;
  const req = new FetchRequest(c.rpc);
  req.timeout = 20_000;
  const net = Network.from(BigInt(c.chainId));
  const provider = new JsonRpcProvider(req, net, { staticNetwork: net, batchMaxCount: 1 });
  const why = (e) => e?.shortMessage ?? e?.message ?? String(e);
  try {
    let got;
    try {
      got = BigInt(await provider.send('eth_chainId', []));
    } catch (e) {
      line(false, `${pre}(b) rpc ${c.rpc} answers eth_chainId: ${why(e)}`);
      return res;
    }
    if (!line(got === BigInt(c.chainId), `${pre}(b) rpc chain id is ${got}${got === BigInt(c.chainId) ? '' : `, not the packet's ${c.chainId}`}`)) return res;

    const code = await provider.getCode(c.contract);
    if (!line(code !== '0x', `${pre}(c) ${code === '0x' ? 'no code at contract' : 'code at contract'} ${c.contract}`)) return res;

    const anchor = new Contract(c.contract, iface, provider);
    try {
      const [rootId, anchoredAt, count] = await anchor.getRoot(c.root);
      if (line(rootId !== 0n, `${pre}(d) getRoot(${c.root}): ${rootId === 0n ? 'not anchored' :
        `rootId ${rootId}, anchored at ${new Date(Number(anchoredAt) * 1000).toISOString()}, ${count} leaves`}`)) res.rootId = rootId;
    } catch (e) {
      line(false, `${pre}(d) getRoot(${c.root}) reverted or is not the anchor contract: ${why(e)}`);
    }

    try {
      const owner = await anchor.owner();
      if (c.owner) line(owner.toLowerCase() === c.owner.toLowerCase(), `${pre}(e) owner() is ${owner}${owner.toLowerCase() === c.owner.toLowerCase() ? ', the anchoring address' : `, not the anchoring address ${c.owner}`}`);
      else note(`${pre}(e) owner() is ${owner} (the packet binds no address to this contract)`);
    } catch (e) {
      line(false, `${pre}(e) owner(): ${why(e)}`);
    }

    if (c.txHash) await checkReceipt(pre, provider, c, res.rootId);
    else note(`${pre}(g) no tx_hash in the packet: receipt not checked`);
  } catch (e) {
    line(false, `${pre}rpc ${c.rpc}: ${why(e)}`);
  } finally {
    provider.destroy();
  }
  return res;
}

// (g) the anchoring transaction's receipt: in block_number, successful, with a RootAnchored log
// from the contract for the root (and the rootId getRoot returned).
async function checkReceipt(pre, provider, c, rootId) {
  const r = await provider.getTransactionReceipt(c.txHash);
  if (!line(r !== null, `${pre}(g) receipt of ${c.txHash}${r === null ? ': none (unknown or not mined on this chain)' : ''}`)) return;
  line(r.status === 1, `${pre}(g) transaction ${r.status === 1 ? 'succeeded' : 'reverted'}`);
  const inBlock = isUint(c.block) && BigInt(r.blockNumber) === BigInt(c.block);
  const head = await provider.getBlockNumber();
  line(inBlock, `${pre}(g) mined in block ${r.blockNumber}${inBlock ? '' : `, not the packet's ${c.block}`} (${head - r.blockNumber + 1} confirmations)`);
  const ev = r.logs
    .filter((l) => l.address.toLowerCase() === c.contract.toLowerCase())
    .map((l) => { try { return iface.parseLog(l); } catch { return null; } })
    .find((e) => e?.name === 'RootAnchored' && e.args.root.toLowerCase() === c.root.toLowerCase());
  line(!!ev && (rootId === undefined || ev.args.rootId === rootId),
    `${pre}(g) ${ev ? `RootAnchored(rootId ${ev.args.rootId}, root, count ${ev.args.count}) logged by ${getAddress(c.contract)}` +
      (rootId !== undefined && ev.args.rootId !== rootId ? `, but getRoot says rootId ${rootId}` : '')
      : `no RootAnchored log for ${c.root} from ${c.contract}`}`);
}
