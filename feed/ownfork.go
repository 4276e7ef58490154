package feed

import (
	"errors"
	"fmt"
)

// ErrOwnForked is matched (errors.Is) by the error Log.Append and Log.Stage
// return once the own feed is marked forked (Log.MarkForked): a peer holds a
// validly signed head of this key that this log did not write (the instance
// runs from a restored or cloned copy of its data). The log takes no more
// entries: they would never replicate.
var ErrOwnForked = errors.New("feed: this instance's own feed forked")

// MarkForked records that a validly signed head of the own feed, other,
// contradicts this log (longer than it, or not an extension of it). The
// evidence (the log's head and other) is persisted with the feed, so the
// state survives a restart; from then on Append and Stage refuse with
// ErrOwnForked. A later call keeps the first evidence unless other is longer
// (the newest head peers hold). other must be verified by the caller.
func (l *Log) MarkForked(other Head) (*ForkError, error) {
	if other.Key != l.key {
		return nil, fmt.Errorf("marking %s forked by a head of %s: %w", l.key, other.Key, ErrWrongFeed)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fork != nil && other.Length <= l.fork.Other.Length {
		return l.fork, nil
	}
	fe := &ForkError{Key: l.key, Held: l.head, Other: other}
	if l.fork != nil {
		fe.Held = l.fork.Held
	}
	ev, _ := fe.MarshalBinary()
	if err := l.st.Write(&Batch{Key: l.key, Fork: ev}); err != nil {
		return nil, fmt.Errorf("recording the fork of own feed %s: %w", l.key, err)
	}
	l.fork = fe
	return fe, nil
}

// Forked returns the recorded fork of the own feed, nil if there is none.
func (l *Log) Forked() *ForkError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fork
}

// refuseLocked is the error of an append while the own feed is forked.
func (l *Log) refuseLocked() error {
	if l.fork == nil {
		return nil
	}
	return fmt.Errorf("%w: peers hold a head of length %d this copy did not write (it holds %d)",
		ErrOwnForked, l.fork.Other.Length, l.head.Length)
}
