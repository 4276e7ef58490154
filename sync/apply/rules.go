package apply

import (
	"encoding/json"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/store"
)

// version is one version of a row as the rules see it: a change record's row,
// or the live row when it was written locally.
type version struct {
	Origin  string          `json:"o"`
	Lamport uint64          `json:"l"`
	VV      store.VV        `json:"vv"` // the version's own vector
	Deleted bool            `json:"d,omitempty"`
	TS      int64           `json:"ts"` // Unix seconds (the envelope's updated_at)
	Data    json.RawMessage `json:"data"`
}

// counter is the version's own counter: with its origin, it identifies the
// version (an instance counts its changes of a row).
func (v *version) counter() uint64 { return v.VV[v.Origin] }

// forgets reports whether v is a forget (SPEC §10: a tombstone with forgotten_at).
func (v *version) forgets() bool { return store.IsForget(v.Deleted, v.Data) }

func (v *version) same(o *version) bool { return v.Origin == o.Origin && v.counter() == o.counter() }

// beats orders versions by (lamport, instance id). A version that dominates
// another always has a higher lamport (Lamport clocks follow causality), so
// the highest version by this order is always a maximal one.
func (v *version) beats(o *version) bool {
	if v.Lamport != o.Lamport {
		return v.Lamport > o.Lamport
	}
	return v.Origin > o.Origin
}

func (v *version) ref() conflicts.Version {
	return conflicts.Version{InstanceID: v.Origin, Lamport: v.Lamport, VV: v.VV, Deleted: v.Deleted, Data: v.Data}
}

func versionOfChange(c *store.ChangeRecord) *version {
	return &version{Origin: c.InstanceID, Lamport: c.Lamport, VV: c.VV.Copy(), Deleted: c.Op == store.OpDelete,
		TS: c.Timestamp, Data: c.Data}
}

func versionOfRow(r *store.Row) *version {
	return &version{Origin: r.InstanceID, Lamport: r.LamportTS, VV: r.VV.Copy(), Deleted: r.Deleted,
		TS: r.UpdatedAt.Unix(), Data: r.Data}
}

// rowState is what the rules keep for a row beyond its envelope while that
// is needed (stored under n/apply/r/): the versions that may still form a
// conflict pair with a version not yet applied, and Seen, the highest
// counter applied per origin. A row without a stored state is "implicit":
// its only needed version is the live envelope, whose vector is its own, and
// every version below it has been applied (Seen = the live vector).
type rowState struct {
	Seen     store.VV   `json:"seen"`
	Versions []*version `json:"versions"`
}

// outcome of applying one change.
type outcome int

const (
	outFastForward outcome = iota // incoming dominated the live row: it replaced it
	outConcurrent                 // concurrent: winner by (lamport, id), vectors merged
	outStale                      // already applied or dominated: live row unchanged
)

func (o outcome) String() string {
	return [...]string{"fast_forward", "concurrent", "stale"}[o]
}

// decision is what applying one change does to a row.
type decision struct {
	outcome outcome
	row     *store.Row // the new live envelope; nil: unchanged
	// state to store if stateChanged (nil: delete it, the row is implicit).
	state        *rowState
	stateChanged bool
	create       []*conflicts.Conflict // records to create (idempotent)
	retract      []string              // ids of records superseded by a newer pair
}

func leq(a, b store.VV) bool {
	o := a.Compare(b)
	return o == store.Lesser || o == store.Equal
}

func concurrent(a, b store.VV) bool { return a.Compare(b) == store.Concurrent }

// rules are the conflict rules of SPEC §5 as a pure function (no I/O).
type rules struct {
	self string // this instance's id: its own versions are all "seen"
}

// decide applies change in to the row whose live envelope is live (nil if
// absent) and stored state st (nil: implicit). records returns the row's
// conflict record index (ids and vectors); it is called only when a record
// may change. lww selects
// last-write-wins without conflict records (crow_context).
func (r rules) decide(table, rowID string, live *store.Row, st *rowState, in *version, lww bool,
	records func() ([]conflicts.RowRecord, error)) (decision, error) {
	var liveV *version
	var merged store.VV
	ord := store.Greater
	if live != nil {
		liveV = versionOfRow(live)
		merged = live.VV
		ord = in.VV.Compare(merged)
	}
	if lww {
		if live != nil && (ord == store.Lesser || ord == store.Equal || in.same(liveV)) {
			return decision{outcome: outStale}, nil
		}
		return r.write(table, rowID, liveV, merged, in, ord), nil
	}
	if in.forgets() || (liveV != nil && liveV.forgets()) {
		return r.forget(table, rowID, live, liveV, st, in, records)
	}

	// H: the versions that matter; seen: per origin, the highest counter applied.
	var h []*version
	var seen store.VV
	switch {
	case st != nil:
		h = append(h, st.Versions...)
		seen = st.Seen.Copy()
		if liveV != nil && !contains(h, liveV) {
			h = append(h, liveV) // a local write since the state was stored
		}
	case liveV != nil:
		h = []*version{liveV}
		seen = merged.Copy()
	default:
		seen = store.VV{}
	}
	if seen[in.Origin] >= in.counter() {
		return decision{outcome: outStale}, nil // applied before (or dominated under an implicit row)
	}
	prev := h
	h = append(h[:len(h):len(h)], in)
	seen[in.Origin] = in.counter()

	d := decision{outcome: outStale}
	if ord == store.Greater || ord == store.Concurrent {
		d = r.write(table, rowID, liveV, merged, in, ord)
	}
	newMerged := merged.Merge(in.VV)
	winner := liveV
	if liveV == nil || in.beats(liveV) {
		winner = in
	}

	// A version that dominates everything seen forms no pair and supersedes
	// none (pairs are concurrent); otherwise maintain the maximal pairs.
	if ord != store.Greater {
		recs, err := records()
		if err != nil {
			return decision{}, err
		}
		for _, c := range recs {
			if supersedes(c.WinningVV, c.LosingVV, in.VV) || supersedes(c.LosingVV, c.WinningVV, in.VV) {
				d.retract = append(d.retract, c.ID)
			}
		}
		for _, w := range prev {
			if !concurrent(w.VV, in.VV) || coveredBy(w, in, h) || coveredBy(in, w, h) {
				continue
			}
			c, err := pairRecord(table, rowID, w, in)
			if err != nil {
				return decision{}, err
			}
			if c != nil {
				d.create = append(d.create, c)
			}
		}
	}

	// Prune versions that can no longer be part of a maximal pair: x is
	// dropped when a version y it holds is a single step on top of x (y's
	// vector minus y's own increment is at or below x's): for every z ‖ x,
	// present or future, (y, z) dominates (x, z), and domination is
	// transitive, so x's pairs are always represented by y's.
	kept := make([]*version, 0, len(h))
	for _, x := range h {
		drop := false
		for _, y := range h {
			if y != x && stepAbove(x, y) {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, x)
		}
	}
	implicit := len(kept) == 1 && kept[0].same(winner) && kept[0].VV.Compare(newMerged) == store.Equal &&
		r.closed(kept[0], seen)
	if !implicit {
		d.state = &rowState{Seen: seen, Versions: kept}
	}
	d.stateChanged = st != nil || !implicit
	return d, nil
}

// forget decides a change to a row that is forgotten here or that in forgets (SPEC §10:
// a forget erases every version's content, for good). The live row is the highest forget by
// (lamport, instance id), with the merge of every version's vector: an incoming forget
// applies over any version that is not a forget (it wins whatever its lamport); an
// incoming version that is not a forget, over a forgotten row, only merges its vector in
// (its data is dropped); a version already applied or dominated is stale. Both depend only
// on the set of versions applied, so every instance converges. A forgotten row has no
// conflict records (they would hold the content): every record of the row is retracted and
// none is created, and it keeps no apply state (the versions there hold data): its row is
// implicit from then on.
func (r rules) forget(table, rowID string, live *store.Row, liveV *version, st *rowState, in *version,
	records func() ([]conflicts.RowRecord, error)) (decision, error) {
	d := decision{outcome: outStale, stateChanged: st != nil}
	recs, err := records()
	if err != nil {
		return decision{}, err
	}
	for _, c := range recs {
		d.retract = append(d.retract, c.ID)
	}
	if live != nil && live.VV[in.Origin] >= in.counter() {
		return d, nil // applied before, or seen by a version applied
	}
	winner := in
	vv := in.VV.Copy()
	if live != nil {
		vv = live.VV.Merge(in.VV)
		if liveV.forgets() && (!in.forgets() || liveV.beats(in)) {
			winner = liveV
		}
		switch ord := in.VV.Compare(live.VV); {
		case winner == liveV:
			d.outcome = outStale // dropped: only its vector is kept
		case ord == store.Greater:
			d.outcome = outFastForward
		default:
			d.outcome = outConcurrent
		}
	} else {
		d.outcome = outFastForward
	}
	d.row = &store.Row{RowID: rowID, Table: table, Data: winner.Data, LamportTS: winner.Lamport,
		InstanceID: winner.Origin, VV: vv, Deleted: true, UpdatedAt: time.Unix(winner.TS, 0).UTC()}
	return d, nil
}

// write is the live-row result of a Greater or Concurrent change (or a first
// version): the winner by (lamport, id), with the merged vector.
func (r rules) write(table, rowID string, liveV *version, merged store.VV, in *version, ord store.Ordering) decision {
	winner := in
	if liveV != nil && !in.beats(liveV) {
		winner = liveV
	}
	out := outFastForward
	if liveV != nil && ord != store.Greater {
		out = outConcurrent
	}
	return decision{outcome: out, row: &store.Row{
		RowID: rowID, Table: table, Data: winner.Data, LamportTS: winner.Lamport, InstanceID: winner.Origin,
		VV: merged.Merge(in.VV), Deleted: winner.Deleted, UpdatedAt: time.Unix(winner.TS, 0).UTC(),
	}}
}

// closed reports whether every version at or below y has been applied.
func (r rules) closed(y *version, seen store.VV) bool {
	for o, n := range y.VV {
		if o != r.self && seen[o] < n {
			return false
		}
	}
	return true
}

// continues reports whether v continues side x of a pair (x, y) in the
// sense of the dominance rule: v is at or above x, and everything v has seen
// of y's history x had seen too (min(v, y) ≤ x componentwise): x's line
// going on without news from y's side. A merge that saw anything of y's
// side that x had not does not continue x. (Such a v is never at or above y:
// that would give y = min(v, y) ≤ x.)
func continues(x, y, v store.VV) bool { return leq(x, v) && meetLeq(v, y, x) }

// supersedes reports whether v, replacing x in the pair (x, y), gives a
// concurrent pair (v, y) that dominates it: v continues x against y (see
// continues) and v ≠ x. A version that saw both sides (a merge) supersedes
// nothing: the pair stays recorded.
func supersedes(x, y, v store.VV) bool {
	return concurrent(v, y) && continues(x, y, v) && !equalVV(x, v)
}

// coveredBy reports whether some other version in h continues a against b
// while concurrent with b: then (a, b) is dominated and not recorded.
func coveredBy(a, b *version, h []*version) bool {
	for _, x := range h {
		if !x.same(a) && concurrent(x.VV, b.VV) && continues(a.VV, b.VV, x.VV) {
			return true
		}
	}
	return false
}

// meetLeq reports whether min(a, b) ≤ c componentwise.
func meetLeq(a, b, c store.VV) bool {
	for id, x := range a {
		if m := min(x, b[id]); m > c[id] {
			return false
		}
	}
	return true
}

func equalVV(a, b store.VV) bool { return a.Compare(b) == store.Equal }

// stepAbove reports whether y is a single step on top of x: x < y and y's
// vector without y's own increment is at or below x's.
func stepAbove(x, y *version) bool {
	if x.VV.Compare(y.VV) != store.Lesser {
		return false
	}
	for id, n := range y.VV {
		if id == y.Origin {
			n--
		}
		if n > x.VV[id] {
			return false
		}
	}
	return true
}

// pairRecord returns the conflict record of two concurrent versions, or nil
// if they are equivalent (noise).
func pairRecord(table, rowID string, a, b *version) (*conflicts.Conflict, error) {
	win, lose := a, b
	if b.beats(a) {
		win, lose = b, a
	}
	return conflicts.NewUnlessEquivalent(table, rowID, win.ref(), lose.ref())
}

func contains(h []*version, v *version) bool {
	for _, x := range h {
		if x.same(v) {
			return true
		}
	}
	return false
}
