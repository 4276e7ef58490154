// Package anchor writes proofs of existence for crow's Project State versions
// and memories on an Ethereum (EVM) chain (SPEC §11), without putting on the
// chain anything that reveals a memory's content or a project's name.
//
// The home instance's anchor worker uses it as follows:
//
//  1. Open a Chain once, at start: OpenEmbedded($CROW_HOME/chain,
//     seed.AnchorKey(), log) by default, or DialRPC(ctx, url, contract,
//     seed.AnchorKey()) when an external chain is configured (Deploy makes
//     the contract there, once). Close it on shutdown.
//  2. Memories: for each numbered memory, take its data key
//     (NewDataKeys(db, seed).Ensure, which makes one the first time and
//     none for a memory whose key was shredded: that memory is not
//     anchored), SealMemory(dataKey, eventHash, content) and build a
//     MemoryAnchor; cut the pending ones with SplitMemories and call
//     AnchorMemories per batch. Record the Receipt
//     (tx hash, block) against each memory only after AnchorMemories
//     returns nil. Nothing is deduplicated on chain: a batch retried after an
//     error whose transaction was in fact mined logs its memories twice,
//     which is harmless (readers take the first event per event hash).
//  3. States: for each unanchored version, StateAnchor{seed.ProjectIDHash(
//     name), version, stateHash}; call AnchorStates with at most
//     MaxStatesPerTx of them and record Receipt.AnchorIDs[i], TxHash and
//     Block against version i. Retrying is safe: a version already anchored
//     with the same hash returns its existing id. A version anchored with
//     another hash (ErrAlreadyAnchored) fails the whole batch: anchor the
//     others without it, and report it, since the chain then contradicts
//     the local history. Each state record carries the project id it was
//     anchored under (Record.ProjectID).
//  4. Forgetting a memory (SPEC §10) calls ShredMemoryKey(db, memoryID)
//     on home, then compacts the store (see ShredMemoryKey). From then on
//     the memory's ciphertext on chain decrypts with nothing.
//  5. Proofs: Prover.MemoryProof(ctx, n) rebuilds number n's event record,
//     reads home's anchor record and the MemoryAnchored event back from
//     the chain, decrypts it and compares the content hash (verified,
//     content_forgotten, pending, mismatch naming the parts; unverified
//     where the chain or the seed is missing).
//  6. Verification endpoints read with GetAnchor(projectID, version) and
//     compare StateHash with the local one (Verifier). Only home holds the
//     seed, so only home computes project ids (SeedProjectID); every other
//     instance takes them from home's replicated state records
//     (RecordsProjectID), and until one records a project's id, reports
//     that project from the records alone, with an empty project id.
//
// Every method blocks until its transaction is mined (milliseconds on the
// embedded chain) or ctx ends; transactions are serialized, one in flight at
// a time. If ctx ends first the transaction may still be mined later; steps 2
// and 3 above make that safe.
//
// # The contract
//
// ProjectStateAnchor (contract/ProjectStateAnchor.sol) is owned by the account
// that deployed it, the seed's anchoring key; only that account may write.
//
//	anchor(bytes32 projectId, uint64 version, bytes32 stateHash) returns (uint256 anchorId)
//	anchorBatch(bytes32[] projectIds, uint64[] versions, bytes32[] stateHashes) returns (uint256[] anchorIds)
//	anchorMemories(bytes32[] eventHashes, bytes[] encryptedContents, string[] categories,
//	               uint8[] importances, uint32[] plainLengths)
//	getAnchorById(uint256 anchorId) view returns (bytes32 projectId, uint64 version,
//	               bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
//	getAnchor(bytes32 projectId, uint64 version) view returns (uint256 anchorId,
//	               bytes32 projectId, uint64 version, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
//	getAnchorIds(bytes32[] projectIds, uint64[] versions) view returns (uint256[])
//	anchorCount() view returns (uint256)
//	owner() view returns (address)
//
//	event StateAnchored(uint256 indexed anchorId, bytes32 indexed projectId, uint64 version, bytes32 stateHash)
//	event MemoryAnchored(bytes32 indexed eventHash, bytes encryptedContent, string category,
//	                     uint8 importance, uint32 plainLength)
//
// Rules: anchor ids run from 1 in anchoring order. A (projectId, version) is
// anchored at most once: anchoring it again with the same stateHash returns
// the existing id and changes nothing (no event), with another stateHash
// reverts AlreadyAnchored(projectId, version, anchorId, stateHash), and a
// batch is all or nothing. An all-zero stateHash reverts ZeroStateHash.
// anchoredAt is the block timestamp. Reads of something never anchored
// return all zeros (anchorId 0, anchoredAt 0) rather than reverting. Memory
// anchoring stores nothing: it only emits one event per memory, which keeps
// it cheap (calldata and log data, no storage).
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
//   - The project id is ProjectID = HMAC-SHA256(ProjectIDKey, "crow-project-id-v1" ‖ name),
//     a keyed hash: without the seed it cannot be reversed or even tested
//     against a guessed name. It is stable, so anchors of one project can be
//     linked to each other (how many versions, when), but not to a name.
//     Only home computes it; home's anchor records (replicated to the
//     owner's instances, never on chain) pair it with the name, so a
//     satellite can name the project on chain without the seed.
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
// A third party needs, from crow's public GET /v1/project/{name}/state/anchor
// (or from the state's owner): the chain (chain id and an RPC endpoint of
// it), the contract address, the project id (hex, 32 bytes), the version and
// the state hash. The name is not needed and not enough. Then, on any node
// of that chain:
//
//  1. Call getAnchor(projectId, version) (eth_call, selector 0x6a9fc0b2).
//     With Foundry:
//     cast call <contract> "getAnchor(bytes32,uint64)(uint256,bytes32,uint64,bytes32,uint64,address)" <projectId> <version> --rpc-url <url>
//     anchorId 0 means "never anchored".
//  2. Compare the returned stateHash with the claimed one; anchoredAt is
//     when the chain first saw it (the block timestamp).
//  3. Check that anchoredBy equals owner() (0x8da5cb5b): only the owner can
//     anchor, and the owner is the account derived from the person's seed.
//  4. Optionally, the transaction: the receipt of the tx hash crow reports
//     has a log of the contract whose topics are StateAnchored
//     (0xe4f1c210561f4a81f98d15ba49271649afe260b05099568c25c46e593b7aa013),
//     the anchor id and the project id, and whose data is (version,
//     stateHash). getAnchorById(anchorId) (0x32bf361b) returns the same.
//
// To check that the hash is the hash of a given state, recompute it from the
// state document (SHA3-256 over "CM_PROJECT_STATE_V2" ‖ RFC 8785 canonical
// JSON, SPEC §10): this package does not compute state hashes.
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
