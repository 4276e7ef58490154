// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title ProjectStateAnchor
/// @notice Proof of existence for crow Project State versions and memory
/// events. A state anchor stores (projectId, version, stateHash) once and for
/// all; a memory anchor is an event only. Nothing here reveals content or
/// project names: projectId is a keyed hash (HMAC-SHA256 under a key derived
/// from the owner's seed) and memory content is encrypted before it is sent.
/// @dev Compiled by build.sh (pinned solc, optimizer, evmVersion paris so the
/// bytecode runs on pre-Shanghai chains such as Clique PoA networks too).
contract ProjectStateAnchor {
    struct Anchor {
        bytes32 projectId;
        bytes32 stateHash;
        uint64 version;
        uint64 anchoredAt;
        address anchoredBy;
    }

    /// @notice The only account allowed to anchor: the deployer.
    address public immutable owner;

    /// Anchor ids start at 1; anchors[id - 1] is anchor id.
    Anchor[] private anchors;

    /// projectId => version => anchor id (0: not anchored).
    mapping(bytes32 => mapping(uint64 => uint256)) private idOf;

    /// @notice Emitted once per (projectId, version), when it is first anchored.
    event StateAnchored(uint256 indexed anchorId, bytes32 indexed projectId, uint64 version, bytes32 stateHash);

    /// @notice Emitted per memory by anchorMemories. Nothing is stored.
    event MemoryAnchored(
        bytes32 indexed eventHash, bytes encryptedContent, string category, uint8 importance, uint32 plainLength
    );

    error NotOwner(address caller);
    error LengthMismatch();
    error ZeroStateHash(bytes32 projectId, uint64 version);
    error AlreadyAnchored(bytes32 projectId, uint64 version, uint256 anchorId, bytes32 stateHash);

    constructor() {
        owner = msg.sender;
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    /// @notice Anchors one state version and returns its anchor id.
    /// @dev Idempotent for the same hash: anchoring an already anchored
    /// (projectId, version) with the same stateHash returns the existing id
    /// and changes nothing (no event). A different stateHash reverts with
    /// AlreadyAnchored: a version, once anchored, is never rewritten.
    function anchor(bytes32 projectId, uint64 version, bytes32 stateHash)
        external
        onlyOwner
        returns (uint256 anchorId)
    {
        return _anchor(projectId, version, stateHash);
    }

    /// @notice Anchors many state versions in one transaction, with the same
    /// rules as anchor for each; any conflict reverts the whole batch.
    function anchorBatch(bytes32[] calldata projectIds, uint64[] calldata versions, bytes32[] calldata stateHashes)
        external
        onlyOwner
        returns (uint256[] memory anchorIds)
    {
        uint256 n = projectIds.length;
        if (versions.length != n || stateHashes.length != n) revert LengthMismatch();
        anchorIds = new uint256[](n);
        for (uint256 i = 0; i < n; i++) {
            anchorIds[i] = _anchor(projectIds[i], versions[i], stateHashes[i]);
        }
    }

    function _anchor(bytes32 projectId, uint64 version, bytes32 stateHash) private returns (uint256 anchorId) {
        if (stateHash == bytes32(0)) revert ZeroStateHash(projectId, version);
        anchorId = idOf[projectId][version];
        if (anchorId != 0) {
            bytes32 existing = anchors[anchorId - 1].stateHash;
            if (existing != stateHash) revert AlreadyAnchored(projectId, version, anchorId, existing);
            return anchorId;
        }
        anchors.push(
            Anchor({
                projectId: projectId,
                stateHash: stateHash,
                version: version,
                anchoredAt: uint64(block.timestamp),
                anchoredBy: msg.sender
            })
        );
        anchorId = anchors.length;
        idOf[projectId][version] = anchorId;
        emit StateAnchored(anchorId, projectId, version, stateHash);
    }

    /// @notice Emits one MemoryAnchored event per memory. Nothing is stored and
    /// nothing is deduplicated: a memory sent twice is logged twice.
    function anchorMemories(
        bytes32[] calldata eventHashes,
        bytes[] calldata encryptedContents,
        string[] calldata categories,
        uint8[] calldata importances,
        uint32[] calldata plainLengths
    ) external onlyOwner {
        uint256 n = eventHashes.length;
        if (
            encryptedContents.length != n || categories.length != n || importances.length != n
                || plainLengths.length != n
        ) revert LengthMismatch();
        for (uint256 i = 0; i < n; i++) {
            emit MemoryAnchored(eventHashes[i], encryptedContents[i], categories[i], importances[i], plainLengths[i]);
        }
    }

    /// @notice The anchor with this id. An unknown id (0 or above anchorCount)
    /// returns all zeros: anchoredAt == 0 means "no such anchor".
    function getAnchorById(uint256 anchorId)
        external
        view
        returns (bytes32 projectId, uint64 version, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
    {
        if (anchorId == 0 || anchorId > anchors.length) return (0, 0, 0, 0, address(0));
        Anchor storage a = anchors[anchorId - 1];
        return (a.projectId, a.version, a.stateHash, a.anchoredAt, a.anchoredBy);
    }

    /// @notice The anchor of (projectId, version): its id and the same fields
    /// as getAnchorById. anchorId == 0 (and every other field zero) means that
    /// version was never anchored.
    function getAnchor(bytes32 projectId, uint64 version)
        external
        view
        returns (
            uint256 anchorId,
            bytes32 anchoredProjectId,
            uint64 anchoredVersion,
            bytes32 stateHash,
            uint64 anchoredAt,
            address anchoredBy
        )
    {
        anchorId = idOf[projectId][version];
        if (anchorId == 0) return (0, 0, 0, 0, 0, address(0));
        Anchor storage a = anchors[anchorId - 1];
        return (anchorId, a.projectId, a.version, a.stateHash, a.anchoredAt, a.anchoredBy);
    }

    /// @notice The anchor ids of many (projectId, version) pairs at once
    /// (0 where not anchored).
    function getAnchorIds(bytes32[] calldata projectIds, uint64[] calldata versions)
        external
        view
        returns (uint256[] memory anchorIds)
    {
        uint256 n = projectIds.length;
        if (versions.length != n) revert LengthMismatch();
        anchorIds = new uint256[](n);
        for (uint256 i = 0; i < n; i++) {
            anchorIds[i] = idOf[projectIds[i]][versions[i]];
        }
    }

    /// @notice How many state anchors exist; ids run from 1 to anchorCount().
    function anchorCount() external view returns (uint256) {
        return anchors.length;
    }
}
