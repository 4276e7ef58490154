package apply

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// Parked is a feed entry the apply loop could not apply (an unknown change
// record schema, a malformed record): kept with the reason, never applied,
// never dropped. A later build that knows the schema can replay them.
type Parked struct {
	Feed   string `json:"feed"` // feed key, hex
	Index  uint64 `json:"index"`
	Schema int    `json:"schema,omitempty"` // the record's schema, when it could be read
	Reason string `json:"reason"`
	Entry  []byte `json:"entry"` // the entry as stored in the feed
}

var prefixParked = []byte("n/parked/")

func parkedKey(key feed.PublicKey, index uint64) []byte {
	k := append(append([]byte(nil), prefixParked...), hex.EncodeToString(key[:])...)
	k = append(k, '/')
	return binary.BigEndian.AppendUint64(k, index)
}

func parkTxn(txn *store.Txn, p *Parked, key feed.PublicKey) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding parked entry: %w", err)
	}
	if err := txn.Set(parkedKey(key, p.Index), b); err != nil {
		return fmt.Errorf("parking entry %d of %s: %w", p.Index, p.Feed, err)
	}
	return nil
}

// Parked returns every parked entry, by feed and index.
func (a *Applier) Parked() ([]Parked, error) {
	var out []Parked
	err := a.db.View(func(txn *store.Txn) error {
		return txn.Iterate(prefixParked, nil, func(k, v []byte) error {
			var p Parked
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decoding parked entry %q: %w", k, err)
			}
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing parked entries: %w", err)
	}
	return out, nil
}
