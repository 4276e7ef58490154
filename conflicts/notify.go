package conflicts

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/crow-sync/crow/store"
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
func (s *Store) raiseTxn(txn *store.Txn, c *Conflict) error {
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
	err := s.db.Update(context.Background(), func(txn *store.Txn) error {
		return s.raiseKindTxn(txn, Notification{Kind: kind, Priority: PriorityHigh, Title: title, Body: body, Link: link})
	})
	if err != nil {
		return fmt.Errorf("raising %s notification: %w", kind, err)
	}
	return nil
}

// raiseKindTxn stores n (its ID and CreatedAt assigned here) unless an unread
// notification of n.Kind exists.
func (s *Store) raiseKindTxn(txn *store.Txn, n Notification) error {
	open := []byte(prefixOpen + n.Kind)
	_, covered, err := txn.Get(open)
	if err != nil {
		return fmt.Errorf("reading open notification: %w", err)
	}
	if covered {
		return nil // an unread notification already covers this burst
	}
	var seq uint64
	switch b, ok, err := txn.Get(keyNoteSeq); {
	case err != nil:
		return fmt.Errorf("reading notification seq: %w", err)
	case ok && len(b) != 8:
		return fmt.Errorf("reading notification seq: bad length %d", len(b))
	case ok:
		seq = binary.BigEndian.Uint64(b)
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
	err := s.db.View(func(txn *store.Txn) error {
		return txn.Iterate(prefixNote, nil, func(k, v []byte) error {
			var n Notification
			if err := json.Unmarshal(v, &n); err != nil {
				return fmt.Errorf("decoding notification %s: %w", k, err)
			}
			out = append(out, n)
			return nil
		})
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
	err := s.db.Update(context.Background(), func(txn *store.Txn) error {
		b, ok, err := txn.Get(noteKey(id))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("notification %s: %w", id, ErrNotFound)
		}
		var n Notification
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("decoding notification %s: %w", id, err)
		}
		open := []byte(prefixOpen + n.Kind)
		cur, ok, err := txn.Get(open)
		if err != nil {
			return err
		}
		if ok && string(cur) == id {
			if err := txn.Delete(open); err != nil {
				return err
			}
		}
		if n.Read {
			return nil
		}
		n.Read = true
		b, err = json.Marshal(n)
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
