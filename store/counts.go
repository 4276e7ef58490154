package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Maintained row counts. Every transaction that writes rows (the Writer's batches,
// Txn.PutRow, TxnBatch.PutRow) adds up how each write moves its row between states and
// groups, and DB.update writes the sums into the same transaction just before it commits:
// the counts are exactly as durable as the rows, and never ahead or behind them.
//
//	m/counts                        countsVersion (uint64 BE): the layout below is maintained
//	m/count/seq                     the s/seq the counts cover (uint64 BE)
//	m/count/<table>/n/live          rows of table that are live
//	m/count/<table>/n/deleted       tombstones that are not forgets
//	m/count/<table>/n/forgotten     forgets' tombstones
//	m/count/<table>/g/<field>/<v>   live rows of table whose data's field is v (CountedFields)
//
// A count that drops to 0 is deleted, so the keys of a group are its non-empty values.
// At Open the counts are rebuilt with one scan of every table if m/counts is missing or of
// another version, or if m/count/seq differs from s/seq (a build without counts wrote rows
// since); LoadSnapshot rebuilds them too.

// countsVersion is the layout of the maintained counts, kept at m/counts.
const countsVersion = 1

var (
	keyCounts   = []byte("m/counts")
	keyCountSeq = []byte("m/count/seq")
	prefixCount = []byte("m/count/")
)

// countedFields names, per table, the data fields whose live rows are counted per value
// (CountBy). A field absent from a row's data, or not a string there, counts under "".
// Changing it changes what the stored counts mean: bump countsVersion with it.
var countedFields = map[string][]string{
	TableMemories: {"project", "category"},
}

// CountedFields returns the data fields of table whose live rows CountBy counts per value.
func CountedFields(table string) []string { return slices.Clone(countedFields[table]) }

// RowCounts is how many rows of a table there are in each state.
type RowCounts struct {
	// Live rows (not deleted).
	Live int
	// Deleted is the tombstones that are not forgets.
	Deleted int
	// Forgotten is the forgets' tombstones (Row.Forgotten).
	Forgotten int
}

// Total is every row, tombstones included.
func (c RowCounts) Total() int { return c.Live + c.Deleted + c.Forgotten }

// countKey names one maintained count: a state count (field "", value live, deleted or
// forgotten) or a group count (field and its value).
type countKey struct{ table, field, value string }

func (k countKey) key() []byte {
	if k.field == "" {
		return []byte(countStateKey(k.table, k.value))
	}
	return []byte(countGroupPrefix(k.table, k.field) + k.value)
}

func countStateKey(table, state string) string { return "m/count/" + table + "/n/" + state }

func countGroupPrefix(table, field string) string { return "m/count/" + table + "/g/" + field + "/" }

// maxCounted is the most fields countedFields gives a table.
const maxCounted = 2

// tally is the counts one row version is in (none for a missing row).
type tally struct {
	keys [1 + maxCounted]countKey
	n    int
}

// tallyOf returns the counts r is in (nil: a missing row).
func tallyOf(r *Row) tally {
	var t tally
	if r == nil {
		return t
	}
	switch {
	case !r.Deleted:
		t.keys[0] = countKey{r.Table, "", "live"}
		t.n = 1
		fields := countedFields[r.Table]
		if len(fields) == 0 {
			return t
		}
		var vals [maxCounted]string
		groupValues(r.Data, fields, vals[:len(fields)])
		for i, f := range fields {
			t.keys[t.n] = countKey{r.Table, f, vals[i]}
			t.n++
		}
	case r.Forgotten():
		t.keys[0], t.n = countKey{r.Table, "", "forgotten"}, 1
	default:
		t.keys[0], t.n = countKey{r.Table, "", "deleted"}, 1
	}
	return t
}

// countDeltas accumulates count changes of one transaction.
type countDeltas map[countKey]int64

// move records that a row's counts went from old to new.
func (d countDeltas) move(old, new tally) {
	for _, k := range old.keys[:old.n] {
		d[k]--
	}
	for _, k := range new.keys[:new.n] {
		d[k]++
	}
}

// groupValues sets out[i] to the top-level string value of fields[i] in the JSON object
// data: "" where it is missing or not a string, the last one where a key repeats (as
// encoding/json decodes into a map). Keys match exactly.
func groupValues(data json.RawMessage, fields []string, out []string) {
	for i := range out {
		out[i] = ""
	}
	if groupValuesFast(data, fields, out) {
		return
	}
	for i := range out {
		out[i] = ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return
	}
	for i, f := range fields {
		if raw, ok := m[f]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				out[i] = s
			}
		}
	}
}

// groupValuesFast is groupValues for an object whose keys and counted string values have
// no escapes (encoding/json's output for ordinary text); it reports false, having perhaps
// set some of out, for anything else, so the caller decodes data fully.
func groupValuesFast(data []byte, fields []string, out []string) bool {
	r := reader{b: data}
	ws := func() {
		for r.i < len(r.b) && isSpace(r.b[r.i]) {
			r.i++
		}
	}
	ws()
	if !r.lit("{") {
		return false
	}
	ws()
	if r.lit("}") {
		ws()
		return r.i == len(r.b)
	}
	for {
		ws()
		key, ok := r.str()
		if !ok {
			return false
		}
		ws()
		if !r.lit(":") {
			return false
		}
		ws()
		j := slices.Index(fields, key)
		if r.i < len(r.b) && r.b[r.i] == '"' {
			if j < 0 {
				if !r.skipString() {
					return false
				}
			} else if out[j], ok = r.str(); !ok {
				return false
			}
		} else {
			if j >= 0 {
				out[j] = ""
			}
			if !r.skipValue() {
				return false
			}
		}
		ws()
		if r.lit("}") {
			ws()
			return r.i == len(r.b)
		}
		if !r.lit(",") {
			return false
		}
	}
}

// skipString moves past a string (escapes allowed, not checked).
func (r *reader) skipString() bool {
	for r.i++; r.i < len(r.b); r.i++ {
		switch r.b[r.i] {
		case '\\':
			r.i++
		case '"':
			r.i++
			return true
		}
	}
	return false
}

// skipValue moves past one value that is not a string: an object or array (strings in it
// skipped whole), or a number or literal. It checks the nesting, not the grammar.
func (r *reader) skipValue() bool {
	start, depth := r.i, 0
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c == '"':
			if depth == 0 || !r.skipString() {
				return false
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return r.i > start
			}
			depth--
			if depth == 0 {
				r.i++
				return true
			}
		case depth == 0 && (c == ',' || isSpace(c)):
			return r.i > start
		}
		r.i++
	}
	return false
}

// flushCounts writes t's count deltas and the seq they cover into t (DB.update calls it
// before committing).
func (t *Txn) flushCounts() error {
	for k, d := range t.counts {
		if d == 0 {
			continue
		}
		key := k.key()
		v, err := getUint(t.txn, key)
		if err != nil {
			return err
		}
		n := int64(v) + d
		if n < 0 {
			// The counts were wrong: keep them usable and rebuild them at the next Open.
			t.db.log.Warn("store: a maintained row count went negative; rebuilding at the next open", "key", string(key), "count", n)
			if err := t.txn.Delete(keyCounts); err != nil {
				return fmt.Errorf("deleting %s: %w", keyCounts, txnErr(err))
			}
			n = 0
		}
		if n == 0 {
			if err := t.txn.Delete(key); err != nil {
				return fmt.Errorf("deleting %s: %w", key, txnErr(err))
			}
		} else if err := setUint(t.txn, key, uint64(n)); err != nil {
			return err
		}
	}
	t.counts = nil
	if t.seq > 0 {
		return setUint(t.txn, keyCountSeq, t.seq)
	}
	return nil
}

// countMove records in t that a row went from old to new.
func (t *Txn) countMove(old, new *Row) { t.countTallies(tallyOf(old), new) }

// countTallies records in t that a row whose counts were old became new, and remembers
// new's counts for the next write of the row in t (see Txn.GetRow).
func (t *Txn) countTallies(old tally, new *Row) {
	if t.counts == nil {
		t.counts = countDeltas{}
	}
	nt := tallyOf(new)
	t.counts.move(old, nt)
	if t.seen != nil {
		k := rowKey(new.Table, new.RowID)
		t.seen[string(k)] = nt
		t.raiseAbove(k)
	}
}

// prevTally returns the counts of row table/rowID as it is in t: remembered from a GetRow
// or a write of it in t, else read.
func (t *Txn) prevTally(table, rowID string) (tally, error) {
	if nt, ok := t.seen[string(rowKey(table, rowID))]; ok {
		return nt, nil
	}
	old, err := getRow(t.txn, table, rowID)
	if errors.Is(err, ErrNotFound) {
		return tally{}, nil
	}
	if err != nil {
		return tally{}, err
	}
	return tallyOf(old), nil
}

// CountRows returns how many rows of table there are in each state, from the maintained
// counts (no scan).
func (t *Txn) CountRows(table string) (RowCounts, error) {
	if !ValidTable(table) {
		return RowCounts{}, fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	var c RowCounts
	for _, s := range []struct {
		name string
		n    *int
	}{{"live", &c.Live}, {"deleted", &c.Deleted}, {"forgotten", &c.Forgotten}} {
		v, err := getUint(t.txn, []byte(countStateKey(table, s.name)))
		if err != nil {
			return RowCounts{}, err
		}
		*s.n = int(v)
	}
	return c, nil
}

// CountBy returns how many live rows of table there are per value of field, one of
// CountedFields(table), from the maintained counts (no scan). Values with no live row are
// absent.
func (t *Txn) CountBy(table, field string) (map[string]int, error) {
	if !ValidTable(table) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTable, table)
	}
	counted := false
	for _, f := range countedFields[table] {
		counted = counted || f == field
	}
	if !counted {
		return nil, fmt.Errorf("%w: %s.%s", ErrNotCounted, table, field)
	}
	prefix := []byte(countGroupPrefix(table, field))
	out := map[string]int{}
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		err := item.Value(func(b []byte) error {
			if len(b) != 8 {
				return fmt.Errorf("bad length %d", len(b))
			}
			out[string(item.Key()[len(prefix):])] = int(binary.BigEndian.Uint64(b))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", item.Key(), err)
		}
	}
	return out, nil
}

// CountRows is Txn.CountRows in a read transaction of its own.
func (db *DB) CountRows(table string) (c RowCounts, err error) {
	err = db.View(func(t *Txn) error {
		c, err = t.CountRows(table)
		return err
	})
	return c, err
}

// CountBy is Txn.CountBy in a read transaction of its own.
func (db *DB) CountBy(table, field string) (m map[string]int, err error) {
	err = db.View(func(t *Txn) error {
		m, err = t.CountBy(table, field)
		return err
	})
	return m, err
}

// checkCounts rebuilds the counts at Open unless they are current.
func (db *DB) checkCounts() error {
	var reason string
	err := db.bdb.View(func(txn *badger.Txn) error {
		v, err := getUint(txn, keyCounts)
		if err != nil {
			return err
		}
		seq, err := getUint(txn, keySeq)
		if err != nil {
			return err
		}
		covered, err := getUint(txn, keyCountSeq)
		if err != nil {
			return err
		}
		switch {
		case v == 0:
			reason = "no maintained counts yet"
		case v != countsVersion:
			reason = fmt.Sprintf("counts layout %d, this build keeps %d", v, countsVersion)
		case covered != seq:
			reason = fmt.Sprintf("counts cover seq %d, the store is at %d", covered, seq)
		}
		return nil
	})
	if err != nil || reason == "" {
		return err
	}
	return db.rebuildCounts(reason)
}

// rebuildCounts replaces the maintained counts with those of a scan of every table, in one
// transaction, and logs how long it took.
func (db *DB) rebuildCounts(reason string) error {
	start := time.Now() // real time: it is only logged
	var rows int
	_, err := db.update(context.Background(), func(t *Txn) error {
		rows = 0
		var stale [][]byte
		it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefixCount})
		for it.Rewind(); it.Valid(); it.Next() {
			stale = append(stale, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range stale {
			if err := t.txn.Delete(k); err != nil {
				return fmt.Errorf("deleting %s: %w", k, txnErr(err))
			}
		}
		d := countDeltas{}
		for _, table := range Tables() {
			if err := scanRows(t.txn, table, func(r *Row) error {
				rows++
				d.move(tally{}, tallyOf(r))
				return nil
			}); err != nil {
				return err
			}
		}
		for k, n := range d {
			if n != 0 {
				if err := setUint(t.txn, k.key(), uint64(n)); err != nil {
					return err
				}
			}
		}
		seq, err := getUint(t.txn, keySeq)
		if err != nil {
			return err
		}
		if err := setUint(t.txn, keyCountSeq, seq); err != nil {
			return err
		}
		return setUint(t.txn, keyCounts, countsVersion)
	})
	if err != nil {
		return fmt.Errorf("rebuilding the row counts: %w", err)
	}
	level := slog.LevelInfo
	if rows == 0 {
		level = slog.LevelDebug // a new store: nothing worth telling
	}
	db.log.Log(context.Background(), level, "store: rebuilt the maintained row counts", "reason", reason, "rows", rows,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}
