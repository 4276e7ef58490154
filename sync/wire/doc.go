// Package wire is the frozen, versioned binary format of the crow sync protocol
// (stream protocol [ProtocolID]).
//
// # Framing
//
// A stream carries frames. A frame is a 4-byte big-endian payload length followed
// by that many payload bytes. A payload longer than the reader's limit (at most
// [MaxFrameSize]) is an error and the stream must be reset.
//
// # Payload
//
// Every payload starts with a version byte ([Version], currently 1) and a type
// byte, followed by the body of that type. Integers are big-endian and fixed
// width; byte strings are a 4-byte big-endian length followed by the bytes.
//
//	Heads   (0x01): count u32, count × head
//	Request (0x02): req_id u64, feed [32], start u64, end u64
//	Data    (0x03): req_id u64, head, start u64, n u32, n × bytes, proof bytes
//	Error   (0x04): req_id u64, code u16, message bytes (UTF-8, ≤ 256)
//	DataCleared (0x05): req_id u64, head, start u64, n u32, n × entry, proof bytes
//
//	head  = feed [32], length u64, signed bytes
//	entry = 0x00 bytes                 (the entry's data)
//	      | 0x01 size u64, leaf [32]   (cleared: the entry's Merkle leaf)
//
// # Cleared entries
//
// A feed entry whose data was cleared (a forgotten memory; package feed's
// Clear) keeps its Merkle leaf, leaf = H(0x00 ‖ uint64BE(size) ‖ data), so
// its holder still serves the ranges around it: the Data answer is then of
// type DataCleared, where each entry is its data or, cleared, its size and
// leaf hash; the receiver verifies the range against the signed head with
// the leaf in the data's place and stores the entry cleared. A cleared
// claim whose leaf is not the entry's fails the proof: the range is
// rejected like any tampered range. The data is never sent again by a
// holder that cleared it; a holder that has not cleared it yet (or a
// backup) may still have it.
//
// DataCleared was added to version 1 as a new type byte (the rule below):
// Encode writes Data as type 0x03 when no entry is cleared and as 0x05 only
// when one is, so 0x03 stays exactly as it was and a range without cleared
// entries still reaches a peer that predates 0x05. A 0x05 payload with no
// cleared entry, an unknown entry tag or a cleared size of 0 is malformed
// (it would not re-encode to the same bytes).
//
// # Compatibility rules (frozen)
//
//   - The encoding of version 1 never changes; golden tests pin its bytes.
//   - A new field or message type means a new version byte or a new type byte;
//     decoders reject versions and types they do not know ([ErrVersion], [ErrType])
//     instead of guessing.
//   - Decoders are strict: trailing bytes, short bodies and counts that cannot fit
//     in the remaining bytes are errors, so every accepted payload re-encodes to
//     exactly the same bytes.
//   - `signed` (a feed's signed head) and `proof` are opaque here: their format
//     belongs to package feed, which verifies them.
package wire

// ProtocolID is the libp2p stream protocol of crow sync, version 1.
const ProtocolID = "/crow/sync/1.0.0"
