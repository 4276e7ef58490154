package feed

import "fmt"

const (
	forkVersion1 = 1
	// ForkEvidenceSize is the length of an encoded ForkError.
	ForkEvidenceSize = 1 + 2*HeadSize
)

// MarshalBinary encodes the fork evidence (frozen, version 1):
//
//	0x01 ‖ held head (137 bytes) ‖ other head (137 bytes)
func (e *ForkError) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, ForkEvidenceSize)
	b = append(b, forkVersion1)
	b, _ = e.Held.AppendBinary(b)
	return e.Other.AppendBinary(b)
}

// UnmarshalBinary decodes evidence encoded by MarshalBinary. It returns
// ErrMalformed for any other input, including heads of different feeds.
// It does not verify the signatures (Verify does).
func (e *ForkError) UnmarshalBinary(b []byte) error {
	if len(b) != ForkEvidenceSize || b[0] != forkVersion1 {
		return fmt.Errorf("decoding fork evidence: %w", ErrMalformed)
	}
	var out ForkError
	if err := out.Held.UnmarshalBinary(b[1 : 1+HeadSize]); err != nil {
		return fmt.Errorf("decoding fork evidence: %w", err)
	}
	if err := out.Other.UnmarshalBinary(b[1+HeadSize:]); err != nil {
		return fmt.Errorf("decoding fork evidence: %w", err)
	}
	if out.Held.Key != out.Other.Key {
		return fmt.Errorf("decoding fork evidence: heads of two feeds: %w", ErrMalformed)
	}
	out.Key = out.Held.Key
	*e = out
	return nil
}

// Verify checks both heads' signatures: valid evidence proves the author
// signed two histories.
func (e *ForkError) Verify() error {
	if err := e.Held.Verify(); err != nil {
		return err
	}
	return e.Other.Verify()
}
