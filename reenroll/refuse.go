package reenroll

import (
	"fmt"

	"github.com/crow-sync/crow/feed"
)

// Refusal is the error every local write gets while the own feed of
// instance id is forked (feed.Log.MarkForked), nil otherwise. It names the
// cause and the fix and wraps feed.ErrOwnForked (409 conflict on the
// gateway, a one-line CLI message).
func Refusal(id string, own *feed.Log) error {
	fe := own.Forked()
	if fe == nil {
		return nil
	}
	return &ForkedError{InstanceID: id, PeerLength: fe.Other.Length, Length: own.Head().Length}
}

// ForkedError is Refusal's error.
type ForkedError struct {
	InstanceID string
	PeerLength uint64 // the longest head of the own feed peers hold
	Length     uint64 // what this copy holds
}

func (e *ForkedError) Error() string {
	return fmt.Sprintf("this instance's feed forked: it runs from a restored or cloned copy of instance %s "+
		"(peers hold head %d, this copy %d), so its writes would never replicate; "+
		"run `crow instance reenroll --join INVITE` with an invite made on home by `crow instance invite`",
		e.InstanceID, e.PeerLength, e.Length)
}

// Unwrap makes errors.Is(err, feed.ErrOwnForked) true.
func (e *ForkedError) Unwrap() error { return feed.ErrOwnForked }
