// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title ProjectStateAnchor (v2: Merkle-batched)
/// @notice Proof of existence for crow Project State versions and memory
/// events. One transaction commits the root of an OpenZeppelin
/// StandardMerkleTree over a batch of leaves: (bytes32 projectId, uint64
/// version, bytes32 stateHash) for state versions, (bytes32 eventHash) for
/// memories. A leaf is proved to be in an anchored root off chain (the
/// OpenZeppelin merkle-tree library, or MerkleProof.verify); getRoot tells
/// whether and when a root was anchored. Nothing here reveals content or
/// project names: projectId is a keyed hash (HMAC-SHA256 under a key derived
/// from the owner's seed) and memory content is encrypted before it is sent.
/// @dev Compiled by build.sh (pinned solc, optimizer, evmVersion paris so the
/// bytecode runs on pre-Shanghai chains such as Clique PoA networks too).
contract ProjectStateAnchor {
    /// One storage slot per root.
    struct Root {
        uint64 rootId;
        uint64 anchoredAt;
        uint32 count;
    }

    /// @notice The only account allowed to anchor: the deployer.
    address public immutable owner;

    /// @notice How many roots were anchored; root ids run from 1 to rootCount.
    uint64 public rootCount;

    mapping(bytes32 => Root) private roots;

    /// @notice Emitted once per root, when it is first anchored.
    event RootAnchored(uint256 indexed rootId, bytes32 indexed root, uint32 count);

    /// @notice Emitted per memory by anchorMemories, with the memory's
    /// encrypted content (only the root is stored).
    event MemoryAnchored(
        bytes32 indexed eventHash, bytes encryptedContent, string category, uint8 importance, uint32 plainLength
    );

    error NotOwner(address caller);
    error LengthMismatch();
    error ZeroRoot();
    error ZeroCount();

    constructor() {
        owner = msg.sender;
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    /// @notice Anchors a Merkle root committing count leaves and returns its
    /// root id. Idempotent: a root already anchored returns its existing id
    /// and changes nothing (no event), so a retried transaction is harmless.
    function anchorRoot(bytes32 root, uint32 count) external onlyOwner returns (uint256 rootId) {
        return _anchorRoot(root, count);
    }

    /// @notice Anchors the root of a batch of memories (leaves: their event
    /// hashes) and emits one MemoryAnchored event per memory with its
    /// encrypted content. A root already anchored returns its id and emits
    /// nothing: a retried batch is not logged twice.
    function anchorMemories(
        bytes32 root,
        bytes32[] calldata eventHashes,
        bytes[] calldata encryptedContents,
        string[] calldata categories,
        uint8[] calldata importances,
        uint32[] calldata plainLengths
    ) external onlyOwner returns (uint256 rootId) {
        uint256 n = eventHashes.length;
        if (
            encryptedContents.length != n || categories.length != n || importances.length != n
                || plainLengths.length != n || n > type(uint32).max
        ) revert LengthMismatch();
        if (roots[root].rootId != 0) return roots[root].rootId;
        rootId = _anchorRoot(root, uint32(n));
        for (uint256 i = 0; i < n; i++) {
            emit MemoryAnchored(eventHashes[i], encryptedContents[i], categories[i], importances[i], plainLengths[i]);
        }
    }

    function _anchorRoot(bytes32 root, uint32 count) private returns (uint256) {
        if (root == bytes32(0)) revert ZeroRoot();
        if (count == 0) revert ZeroCount();
        Root storage r = roots[root];
        if (r.rootId != 0) return r.rootId;
        uint64 id = rootCount + 1;
        rootCount = id;
        r.rootId = id;
        r.anchoredAt = uint64(block.timestamp);
        r.count = count;
        emit RootAnchored(id, root, count);
        return id;
    }

    /// @notice The anchoring of root: its id, the block timestamp it was
    /// anchored at and how many leaves it commits. rootId == 0 (and every
    /// other field zero) means it was never anchored.
    function getRoot(bytes32 root) external view returns (uint256 rootId, uint64 anchoredAt, uint32 count) {
        Root storage r = roots[root];
        return (r.rootId, r.anchoredAt, r.count);
    }
}
