// Package anchor writes proofs of existence for crow's Project State versions
// and memories on an Ethereum (EVM) chain (SPEC §11), without putting on the
// chain anything that reveals a memory's content or a project's name.
//
// The home instance's anchor worker (Worker, worker.go) uses it as follows:
//
//  1. Open a Chain once, at start: OpenEmbedded($CROW_HOME/chain,
//     seed.AnchorKey(), log) by default, or DialRPC(ctx, url, contract,
//     seed.AnchorKey()) when an external chain is configured (Deploy makes
//     the contract there, once; the daemon persists its address). Close it
//     on shutdown.
//  2. Each round, write the chain record (ChainRecord: chain id, contract,
//     public RPC URL, and the root key's signature binding the anchoring
//     address to the crow id) if it is missing.
//  3. States: every state version without a record is a leaf
//     merkle.StateLeaf(seed.ProjectIDHash(name), version, stateHash); all of
//     a round's leaves (at most MaxLeavesPerRoot) make one merkle.Tree, and
//     one transaction commits its root (AnchorRoot). Then one anchors row,
//     the root's RootRecord (transaction, block, status, and in Batch the
//     leaf inputs; batch.go): each version's Record, root and proof, is
//     derived from it (StateRecord, MemoryRecord). Nothing is recorded before the
//     transaction is mined; a round that dies in between builds the same
//     tree again from the same pending versions, and the contract's
//     anchorRoot is idempotent (a root anchored again returns its id, logs
//     nothing), so a retry costs a no-op transaction and records the
//     original one.
//  4. Memories: for each numbered memory version, take its data key
//     (NewDataKeys(db, seed).Ensure, which makes one the first time and
//     none for a memory whose key was shredded: that memory is not
//     anchored), SealMemory(dataKey, eventHash, content); cut the batch with
//     SplitMemories; each batch is a tree over merkle.HashLeaf(eventHash)
//     and one AnchorMemories(root, batch), which stores the root and logs
//     one MemoryAnchored event per memory (with its ciphertext). Records as
//     for states.
//     Before each transaction (states and memories) the worker waits for a
//     pause in the instance's foreground work, WorkerConfig.Quiet: building,
//     executing and sealing a batch of ~200 memories is a burst of CPU and
//     I/O that would otherwise land in front of API writes and satellites'
//     catch-up. The wait is bounded (the daemon: 250 ms of pause, at most
//     10 s per transaction), so under constant load anchoring slows down but
//     never stops, and a backlog is anchored as soon as the instance is idle.
//  5. Confirmations: each round follows the roots not final (TxStatus):
//     included → final once WorkerConfig.Confirmations blocks (the
//     including one counts) are on the canonical chain; a transaction a
//     reorg moved to another block is followed; one a reorg dropped is sent
//     again — the same root, so every version's proof stays valid.
//  6. Forgetting a memory (SPEC §10) calls ShredMemoryKey(db, memoryID)
//     on home, then compacts the store (see ShredMemoryKey). From then on
//     the memory's ciphertext on chain decrypts with nothing.
//  7. Proofs and verification: Prover.MemoryProof(ctx, n) rebuilds number
//     n's event record, checks its Merkle proof, reads the MemoryAnchored
//     event back, decrypts it and compares the content hash. The Verifier
//     checks each state version's record and proof against the state held
//     here and getRoot on chain; PacketOf makes the verification packet
//     (SPEC §11), and VerifyPacket reaches a verdict from a packet and any
//     JSON-RPC endpoint alone (crow verify). Records replicate, so every
//     instance serves packets; only home (the seed) computes project ids
//     (SeedProjectID); others take them from home's records
//     (RecordsProjectID).
//
// Every writing method blocks until its transaction is mined (milliseconds
// on the embedded chain) or ctx ends; transactions are serialized, one in
// flight at a time. If ctx ends first the transaction may still be mined
// later; the idempotent contract makes that safe.
//
// # The contract
//
// ProjectStateAnchor v2 (contract/ProjectStateAnchor.sol) is owned by the
// account that deployed it, the seed's anchoring key; only that account may
// write.
//
//	anchorRoot(bytes32 root, uint32 count) returns (uint256 rootId)
//	anchorMemories(bytes32 root, bytes32[] eventHashes, bytes[] encryptedContents,
//	               string[] categories, uint8[] importances, uint32[] plainLengths) returns (uint256 rootId)
//	getRoot(bytes32 root) view returns (uint256 rootId, uint64 anchoredAt, uint32 count)
//	rootCount() view returns (uint64)
//	owner() view returns (address)
//
//	event RootAnchored(uint256 indexed rootId, bytes32 indexed root, uint32 count)
//	event MemoryAnchored(bytes32 indexed eventHash, bytes encryptedContent, string category,
//	                     uint8 importance, uint32 plainLength)
//
// Rules: root ids run from 1 in anchoring order; a root is stored once (one
// storage slot: id, block timestamp, leaf count); anchoring it again returns
// its id and changes nothing; a zero root or count reverts. Reads of a root
// never anchored return all zeros. The Merkle trees are OpenZeppelin's
// StandardMerkleTree (package merkle): state leaves are
// ["bytes32","uint64","bytes32"] (projectId, version, stateHash), memory and
// checkpoint leaves ["bytes32"]. The chain holds no per-version entry: a
// version's existence is its proof plus getRoot. Unlike v1, the chain
// itself no longer refuses a second, different hash for a version; home's
// records are the one history, and a verifier checks the version it is
// given.
//
// v1 (one storage entry per version: anchor, anchorBatch, getAnchor) was
// replaced: an embedded chain holding v1 gets v2 deployed beside it (the
// state file lists the old one under legacy_contracts) and its versions
// are anchored again under roots; DialRPC refuses a v1 address
// (ErrOldContract).
//
// The contract is compiled by contract/build.sh with solc 0.8.37 from npm
// (tarball integrity and compiler build pinned), optimizer on with 200 runs,
// evmVersion paris (no PUSH0, so the bytecode also runs on pre-Shanghai
// chains such as older Clique PoA networks), then bound with abigen
// v1.17.10. `contract/build.sh --check` rebuilds into a temporary directory
// and fails if any committed artifact differs; go test checks that
// bindings.go embeds exactly the committed .abi and .bin.
//
// # Privacy model
//
// What the chain holds, per state anchor: a project id, a version number, a
// state hash, a timestamp and the owner's address. Per memory: its event
// hash, its content encrypted, its category, its importance and its
// plaintext length. Nothing else.
//
//   - The project id is identity.Seed.ProjectIDHash(name) =
//     HMAC-SHA256(key, UTF-8 name) with key = HKDF-SHA256(seed, salt empty,
//     info "crow-project-id-v1") (identity/derive.go), a keyed hash:
//     without the seed it cannot be reversed or even tested against a
//     guessed name. It is stable, so anchors of one project can be linked
//     to each other (how many versions, when), but not to a name. Only home
//     computes it; home's anchor records (replicated to the owner's
//     instances, never on chain) pair it with the name, so a satellite can
//     name the project on chain without the seed.
//   - The state hash is SHA3-256 over a domain separator and the canonical
//     state; it reveals nothing of the state without the state itself.
//   - Memory content is XChaCha20-Poly1305 under the memory's own random
//     data key, with a random nonce and the event hash as associated data
//     (format 2, privacy.go; memories anchored before data keys are format
//     1, under the seed's MemoryEncryptionKey, and stay readable with the
//     seed). Category, importance and plaintext length are in the clear, as
//     the spec's privacy model states; the event hash is a hash.
//
// # Crypto-shredding
//
// "Its on-chain ciphertext becomes unreadable even with the seed" (SPEC
// §10) cannot hold for a key derived from the seed, so each memory id has a
// random 32-byte data key (all its versions share it: forgetting the
// memory destroys one key). It is made on home when the memory is first
// anchored and kept only there, under n/anchor/dek/ in the store: a raw,
// local-only keyspace that is never in a feed, never replicated, never on
// chain (datakey.go). ShredMemoryKey deletes it and leaves a shredded
// marker, so a proof tells "forgotten" (content_forgotten) from "never had
// one" (a format-1 memory).
//
// Should the data key be wrapped at rest by a seed-derived key? Yes, and it
// is: the stored value is the key sealed with XChaCha20-Poly1305 under
// identity.Seed.DataKeyWrapKey (HKDF info "crow-memory-dek-wrap-v1"), bound
// to the memory id. It costs 41 bytes and one AEAD per key, and it means a
// copy of home's database taken without the seed (a backup, a stolen disk
// on a machine whose seed is locked) reads no memory off the chain, where
// unwrapped keys would decrypt every anchored memory for anyone holding
// that copy. It does not weaken shredding: "unreadable even with the seed"
// holds once the wrapped key is deleted, since the seed derives the wrap
// key, never the data key. What it cannot do is protect against a thief
// holding both the database and the seed (such a thief reads the live
// memories anyway); and a deleted value lingers in badger's files until
// compaction, wrapped, which is why the forget orchestration compacts.
//
// Not shreddable: memories anchored in format 1, before data keys (their
// ciphertext is under the seed key, on an append-only chain). Their proof
// says so when they are forgotten.
//
// # Verifying a state hash, as a third party
//
// docs/VERIFY.md is the recipe (a short script using ethers and
// @openzeppelin/merkle-tree, and the cast lines). In short, with the packet
// from crow's public GET /v1/project/{name}/state/anchor?version=N and any
// JSON-RPC endpoint of the chain (the packet's rpc_url: for the embedded
// chain, home's public, read-only POST /v1/chain/rpc):
//
//  1. StandardMerkleTree.verify(root, ["bytes32","uint64","bytes32"],
//     [project_id, version, state_hash], proof) is true.
//  2. getRoot(root) on the contract has rootId ≠ 0; anchoredAt is when the
//     chain first saw it.
//  3. owner() is anchoring_address, and root_public_key — whose hash is
//     the crow id — signed BindingMessage(crow_id, anchoring_address) in
//     address_signature: the account anchors for that crow id.
//  4. Optionally, tx_hash's receipt is in block_number and logs
//     RootAnchored(rootId, root, count) from the contract; and, with
//     checkpoints on, the same on the external chain for the checkpoint
//     root, after verifying the checkpoint proof with leaf [root].
//
// Which values need the seed: project_id (the keyed hash above), the
// anchoring key (it signs the transactions) and the root key (the binding
// signature) are made by home from the seed; every check above needs none
// of them, and the name of the project is never needed. To check that
// state_hash is the hash of a given state, recompute it from the state
// document (SHA3-256 over "CM_PROJECT_STATE_V2" ‖ RFC 8785 canonical JSON,
// SPEC §10): this package does not compute state hashes.
//
// # The embedded chain and how it persists
//
// OpenEmbedded assembles what go-ethereum's ethclient/simulated does — a
// node.Node, the eth service, the filter API and a catalyst.SimulatedBeacon
// standing in for the consensus client — but over a persistent data
// directory and without simulated's reset of the chain to genesis:
//
//   - Networking is off: no P2P listener, no discovery, no dialing, no IPC
//     socket, no HTTP unless WithLoopbackRPC asks for it (loopback only;
//     eth, net and web3 only). The client talks to the node in-process.
//   - The beacon runs with period 0 and its "dev" API loop: a block is sealed
//     as soon as a transaction enters the pool (as geth --dev does), so a
//     block is made per anchoring transaction and none while idle.
//   - Genesis, on first start: geth --dev's (chain id 1337, precompiles and
//     system contracts, the anchoring account funded with 2^256-9 wei),
//     with the forks up to Osaka. (geth's dev config also enables the
//     unreleased Amsterdam/Bogota rules; their state-gas repricing makes a
//     stored anchor cost ~5x more and they may still change, so the embedded
//     chain stays on final rules.) Then the contract is deployed (block 1)
//     and crow-chain.json records the account, chain id, genesis hash and
//     contract address (written temp → fsync → rename).
//   - On a later start the existing database is detected and opened with
//     its stored genesis and chain config (like geth --dev over an existing
//     datadir), so head, state, receipts and logs are all as they were. The
//     stored genesis must fund the key (else ErrWrongKey), and the contract
//     must still be where crow-chain.json says. If a first start died
//     between deploying and writing crow-chain.json, the contract is found at
//     the account's nonce-0 address and adopted.
//   - Durability: state is hash-based and archive (every block's state is
//     written with the block; path-based or pruned state would keep recent
//     state in memory and a crash would rewind the chain), and after each
//     of our transactions is mined the database's write-ahead log is synced
//     before the Receipt is returned. TestEmbeddedSurvivesCrash kills a
//     process without Close and checks every reported receipt survives.
//   - Layout: dir/crow-chain.json and dir/geth/ (chaindata with its
//     ancient store, nodekey, LOCK), geth's own layout, so while crow is
//     stopped `geth --dev --datadir dir` can open the same chain for
//     inspection. The LOCK makes a second OpenEmbedded on an open dir fail.
//   - The node's own warnings and errors go to the logger given to
//     OpenEmbedded. The rest of go-ethereum logs to its process-wide root
//     logger, which discards by default and which this package leaves
//     alone (the daemon may set it with go-ethereum's log.SetDefault).
package anchor
