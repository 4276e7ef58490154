#!/usr/bin/env node
// Golden vectors of OpenZeppelin's StandardMerkleTree for crow's Go implementation
// (anchor/merkle/testdata/standard-merkle-tree.json):  node vectors.mjs > FILE
// Values are deterministic (keccak256 of labels), so the output is reproducible byte for byte.
import { readFileSync } from 'node:fs';
import { keccak256, toUtf8Bytes } from 'ethers';
import { StandardMerkleTree } from '@openzeppelin/merkle-tree';

const h = (s) => keccak256(toUtf8Bytes(s));
const lib = JSON.parse(readFileSync(new URL('node_modules/@openzeppelin/merkle-tree/package.json', import.meta.url)));
const U64_MAX = (2n ** 64n - 1n).toString();

// version: edge cases first (0, 2^64-1, 2^32), then ordinary numbers
const version = (n, i) => (i === 0 ? '0' : i === 1 ? U64_MAX : i === 2 ? (2n ** 32n).toString() : String(i * 1000 + n));

function vector(name, types, values) {
  const tree = StandardMerkleTree.of(values, types); // default options: leaves sorted
  const dump = tree.dump();
  return {
    name, types, root: tree.root, values,
    tree: dump.tree,
    leaves: values.map((v, i) => ({ index: i, value: v, hash: tree.leafHash(v), tree_index: dump.values[i].treeIndex, proof: tree.getProof(i) })),
  };
}

const trees = [];
for (const n of [1, 2, 3, 5, 16, 100])
  trees.push(vector(`state-${n}`, ['bytes32', 'uint64', 'bytes32'],
    Array.from({ length: n }, (_, i) => [h(`crow-vector project ${n} ${i}`), version(n, i), h(`crow-vector state ${n} ${i}`)])));
for (const n of [1, 2, 7])
  trees.push(vector(`root-${n}`, ['bytes32'], Array.from({ length: n }, (_, i) => [h(`crow-vector root ${n} ${i}`)])));

console.log(JSON.stringify({
  generator: 'tools/verify-js/vectors.mjs',
  library: `@openzeppelin/merkle-tree ${lib.version} StandardMerkleTree.of(values, types) with default options (sortLeaves)`,
  leaf_hash: 'keccak256(bytes.concat(keccak256(abi.encode(values))))',
  node_hash: 'keccak256(a < b ? a ++ b : b ++ a)',
  notes: 'uint64 values are decimal strings; per leaf: index in values, value, hash = tree.leafHash(value), tree_index in tree (root at 0), proof = tree.getProof(index)',
  trees,
}, null, 1));
