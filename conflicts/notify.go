package conflicts

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Notification kinds, priorities and the views they link to.
const (
	KindSyncConflict = "sync_conflict"
	// KindFeedFork: an instance's feed has two signed histories (a restored
	// backup, a cloned machine); it stopped replicating.
	KindFeedFork  = "feed_fork"
	PriorityHigh  = "high"
	RecoveryLink  = "/ui/conflicts"
	InstancesLink = "/ui/instances"
)

// Notification is an operator notification. JSON field names are stable.
type Notification struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Priority  string    `json:"priority"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Link      string    `json:"link"`
	Read      bool      `json:"read"`
	CreatedAt time.Time `json:"created_at"`
}

var (
	prefixNote = []byte("n/notifications/i/")
	keyNoteSeq = []byte("n/notifications/seq")
	prefixOpen = "n/notifications/open/"
)

func noteKey(id string) []byte { return append(append([]byte(nil), prefixNote...), id...) }

// raiseTxn creates the conflict notification for c unless an unread one exists.
func (s *Store) raiseTxn(txn *badger.Txn, c *Conflict) error {
	return s.raiseKindTxn(txn, Notification{
		Kind: KindSyncConflict, Priority: PriorityHigh,
		Title: "Sync conflicts need review",
		Body: fmt.Sprintf("Instances changed the same rows without seeing each other's edits (first: %s/%s, %s). "+
			"The overwritten versions are kept; review them in the recovery view.", c.TableName, c.RowID, c.Op),
		Link: RecoveryLink,
	})
}

// Raise records a high-priority notification of kind unless an unread one of
// that kind exists (one notification per burst, as for conflicts).
func (s *Store) Raise(kind, title, body, link string) error {
	err := s.db.Update(func(txn *badger.Txn) error {
		return s.raiseKindTxn(txn, Notification{Kind: kind, Priority: PriorityHigh, Title: title, Body: body, Link: link})
	})
	if err != nil {
		return fmt.Errorf("raising %s notification: %w", kind, err)
	}
	return nil
}

// raiseKindTxn stores n (its ID and CreatedAt assigned here) unless an unread
// notification of n.Kind exists.
func (s *Store) raiseKindTxn(txn *badger.Txn, n Notification) error {
	open := []byte(prefixOpen + n.Kind)
	_, err := txn.Get(open)
	if err == nil {
		return nil // an unread notification already covers this burst
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("reading open notification: %w", err)
	}
	var seq uint64
	item, err := txn.Get(keyNoteSeq)
	switch {
	case err == nil:
		if err := item.Value(func(b []byte) error {
			if len(b) != 8 {
				return fmt.Errorf("bad length %d", len(b))
			}
			seq = binary.BigEndian.Uint64(b)
			return nil
		}); err != nil {
			return fmt.Errorf("reading notification seq: %w", err)
		}
	case !errors.Is(err, badger.ErrKeyNotFound):
		return fmt.Errorf("reading notification seq: %w", err)
	}
	seq++
	n.ID, n.CreatedAt = fmt.Sprintf("%016x", seq), s.now().UTC()
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encoding notification: %w", err)
	}
	for _, kv := range [][2][]byte{
		{noteKey(n.ID), b},
		{keyNoteSeq, binary.BigEndian.AppendUint64(nil, seq)},
		{open, []byte(n.ID)},
	} {
		if err := txn.Set(kv[0], kv[1]); err != nil {
			return fmt.Errorf("writing notification: %w", err)
		}
	}
	return nil
}

// Notifications returns every notification, newest first.
func (s *Store) Notifications() ([]Notification, error) {
	var out []Notification
	err := s.db.View(func(txn *badger.Txn) error {
		io := badger.DefaultIteratorOptions
		io.Prefix = prefixNote
		it := txn.NewIterator(io)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var n Notification
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &n) }); err != nil {
				return fmt.Errorf("decoding notification %s: %w", it.Item().Key(), err)
			}
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing notifications: %w", err)
	}
	sortNewest(out, func(n Notification) (time.Time, string) { return n.CreatedAt, n.ID })
	return out, nil
}

// MarkRead marks notification id read (idempotent). Once the unread conflict
// notification is read, the next new conflict raises a new one. It returns
// ErrNotFound for an unknown id.
func (s *Store) MarkRead(id string) error {
	err := s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(noteKey(id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("notification %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		var n Notification
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &n) }); err != nil {
			return fmt.Errorf("decoding notification %s: %w", id, err)
		}
		open := []byte(prefixOpen + n.Kind)
		if item, err := txn.Get(open); err == nil {
			var cur []byte
			if cur, err = item.ValueCopy(nil); err != nil {
				return err
			}
			if string(cur) == id {
				if err := txn.Delete(open); err != nil {
					return err
				}
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if n.Read {
			return nil
		}
		n.Read = true
		b, err := json.Marshal(n)
		if err != nil {
			return err
		}
		return txn.Set(noteKey(id), b)
	})
	if err != nil {
		return fmt.Errorf("marking notification read: %w", err)
	}
	return nil
}

// sortNewest sorts xs by (time, id) descending.
func sortNewest[T any](xs []T, key func(T) (time.Time, string)) {
	slices.SortFunc(xs, func(a, b T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		return -cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
	})
}
