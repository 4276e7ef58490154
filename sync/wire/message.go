package wire

import (
	"encoding/hex"
	"fmt"
)

// Version is the payload version byte written by this package.
const Version byte = 1

// Message type bytes (version 1). Frozen.
const (
	TypeHeads   byte = 0x01
	TypeRequest byte = 0x02
	TypeData    byte = 0x03
	TypeError   byte = 0x04
	// TypeDataCleared is Data whose range has cleared entries (added in
	// version 1 as a new type byte, see doc.go). Encode writes it only for
	// such a range, so a peer that does not know it gets the type it knows
	// for every range without a cleared entry.
	TypeDataCleared byte = 0x05
)

// Limits enforced by the decoders.
const (
	// MaxFrameSize is the largest payload a frame may carry (8 MiB).
	MaxFrameSize = 8 << 20
	// MaxErrorMessage is the longest Error.Message in bytes.
	MaxErrorMessage = 256
)

// FeedKey identifies a feed: the Ed25519 public key of the instance that
// authors it.
type FeedKey [32]byte

// String returns the key in hex.
func (k FeedKey) String() string { return hex.EncodeToString(k[:]) }

// Short returns the first 8 hex digits, for logs.
func (k FeedKey) Short() string { return hex.EncodeToString(k[:4]) }

// Head is what a holder of a feed announces: Length is the number of
// contiguous entries it holds (and can serve) from index 0, Signed is the feed
// package's encoding of the latest verified signed head of the feed, which
// covers at least Length entries (a replica may hold fewer entries than the
// newest signed head it verified, when it fetched a prefix). A Head received
// from the network is untrusted until package feed verified Signed and that
// Length does not exceed the signed length.
type Head struct {
	Feed   FeedKey
	Length uint64
	Signed []byte
}

// Range is a contiguous run of entries [Start, Start+len(Entries)) of one feed
// together with the proof that ties them to Head (format owned by package feed).
//
// Cleared lists the entries of the range whose data the sender cleared
// (forgotten), in index order: for each, Entries holds nil and Cleared its
// leaf, which the receiver uses in the data's place to verify the proof. A
// claimed leaf that is not the entry's fails verification like wrong data.
type Range struct {
	Head    Head
	Start   uint64
	Entries [][]byte
	Proof   []byte
	Cleared []Cleared
}

// Cleared is an entry of a Range sent without its data: its index in the
// feed and its Merkle leaf (Size, the data's length, never 0; Leaf =
// H(0x00 ‖ uint64BE(Size) ‖ data)).
type Cleared struct {
	Index uint64
	Size  uint64
	Leaf  [32]byte
}

// End is the index after the last entry of r.
func (r Range) End() uint64 { return r.Start + uint64(len(r.Entries)) }

// Message is one of *Heads, *Request, *Data, *Error.
type Message interface {
	msgType() byte
}

// Heads announces the signed heads of feeds the sender holds. Sent for every
// held feed when a session starts, then for each feed whose head advances.
type Heads struct {
	Heads []Head
}

// Request asks for entries [Start, End) of Feed. ReqID is chosen by the
// requester and echoed in the answer.
type Request struct {
	ReqID uint64
	Feed  FeedKey
	Start uint64
	End   uint64
}

// Data answers a Request with a prefix of the asked range (at least one entry)
// proven against the server's current signed head Range.Head.
type Data struct {
	ReqID uint64
	Range
}

// Error answers a Request that cannot be served.
type Error struct {
	ReqID   uint64
	Code    ErrorCode
	Message string
}

// ErrorCode says why a request was not served. Frozen values.
type ErrorCode uint16

// Error codes.
const (
	// CodeNotFound: the server does not hold the feed or the range start is at
	// or beyond its length.
	CodeNotFound ErrorCode = 1
	// CodeInternal: the server failed to read the range.
	CodeInternal ErrorCode = 2
	// CodeBadRequest: the request is malformed (End <= Start, ...).
	CodeBadRequest ErrorCode = 3
)

func (c ErrorCode) String() string {
	switch c {
	case CodeNotFound:
		return "not_found"
	case CodeInternal:
		return "internal"
	case CodeBadRequest:
		return "bad_request"
	}
	return fmt.Sprintf("code_%d", uint16(c))
}

func (*Heads) msgType() byte   { return TypeHeads }
func (*Request) msgType() byte { return TypeRequest }
func (d *Data) msgType() byte {
	if len(d.Cleared) > 0 {
		return TypeDataCleared
	}
	return TypeData
}
func (*Error) msgType() byte { return TypeError }
