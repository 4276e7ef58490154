// Package changes answers "while you were away": what the OTHER instances
// added, changed, forgot or deleted since a cursor, per project, read from
// the replicated feeds held here (each instance's own signed log of change
// records), plus the new Project State versions. It is compact for a model's
// context: complete counts, and a bounded list of items.
//
// The contract:
//
//  1. A Cursor names the length of every feed held here; Since reads each
//     feed from the cursor's length (0 for a feed it does not name) to the
//     length held now, and returns the new cursor (those lengths).
//  2. A change record counts when its instance_id is not this instance's
//     (this instance's own writes are not news to its clients), for the
//     synced tables of people's data: memories (per project) and notes,
//     sources, contacts, settings, blog posts, crow_context and projects
//     (per table). Registry, numbering, anchoring and resolution records are
//     not listed. State versions count from every feed (home writes them,
//     and home may be this instance: the version is news either way).
//  3. Per row, the changes in the window fold into one item: forgotten (the
//     last record is a forget), deleted (the last is a delete), added (the
//     first is an insert) or changed; a row added and deleted in the window
//     is deleted. Counts are over rows; the item list keeps the newest limit
//     items (more: some were left out).
//  4. An entry a forget cleared (its content erased) is skipped: what was
//     forgotten shows as the forget.
//  5. The last cursor of each client is remembered (Remember, Remembered:
//     local keys n/changes/client/<sha256 of the client name>, never
//     replicated), so a client that keeps no cursor gets what is new since
//     its last call.
package changes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// Feeds is what Since reads of the feeds held here (*feed.Replicas, which
// holds the own feed too).
type Feeds interface {
	List() ([]feed.FeedInfo, error)
	ReadSparse(key feed.PublicKey, start, end uint64) ([][]byte, []feed.Cleared, error)
}

// Options configure a Service.
type Options struct {
	DB    *store.DB
	Feeds Feeds
	// Self is this instance's id: its own records are not listed.
	Self string
	// Name names an instance id ("" when unknown).
	Name func(id string) string
}

// Service answers changes since a cursor. Safe for concurrent use.
type Service struct{ o Options }

// New returns a Service over o.
func New(o Options) *Service {
	if o.Name == nil {
		o.Name = func(string) string { return "" }
	}
	return &Service{o: o}
}

// Change kinds of an item.
const (
	Added     = "added"
	Changed   = "changed"
	Deleted   = "deleted"
	Forgotten = "forgotten"
)

// ContentRunes bounds an item's content excerpt.
const ContentRunes = 160

// Counts counts rows by change kind.
type Counts struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Deleted   int `json:"deleted"`
	Forgotten int `json:"forgotten"`
}

func (c *Counts) add(kind string) {
	switch kind {
	case Added:
		c.Added++
	case Changed:
		c.Changed++
	case Deleted:
		c.Deleted++
	case Forgotten:
		c.Forgotten++
	}
}

// Item is one changed row.
type Item struct {
	Change string `json:"change"`
	Table  string `json:"table"`
	// ID is the row id (a memory's id).
	ID string `json:"id"`
	// Number is a memory's number (its latest version's, once home numbered it).
	Number *uint64 `json:"number,omitempty"`
	// Project of a memory (or of a row whose data names one).
	Project string `json:"project,omitempty"`
	// InstanceID and Instance (its name) wrote the last change.
	InstanceID string `json:"instance_id"`
	Instance   string `json:"instance"`
	// At is when the last change was written (RFC 3339).
	At string `json:"at"`
	// Content is a short excerpt (memories: the content; other rows: a
	// title, name or key when the data has one); none for a forget.
	Content string `json:"content,omitempty"`
}

// ProjectChanges are one project's memory changes.
type ProjectChanges struct {
	Project string `json:"project"`
	Counts
	Items []Item `json:"items"`
}

// TableChanges are one table's changes (tables other than memories).
type TableChanges struct {
	Table string `json:"table"`
	Counts
	Items []Item `json:"items"`
}

// StateVersion is a new Project State version.
type StateVersion struct {
	Project    string `json:"project"`
	Version    uint64 `json:"version"`
	StateHash  string `json:"state_hash"`
	InstanceID string `json:"instance_id"`
	Instance   string `json:"instance"`
	At         string `json:"at"`
}

// Report is what changed since a cursor.
type Report struct {
	// Total counts changed rows (memories and the other tables).
	Total         int              `json:"total"`
	Projects      []ProjectChanges `json:"projects"`
	Tables        []TableChanges   `json:"tables"`
	StateVersions []StateVersion   `json:"state_versions"`
	// More is true when items were left out of the lists (the counts are
	// complete).
	More bool `json:"more"`
}

// listedTables are the tables whose rows are listed (memories per project).
var listedTables = map[string]bool{
	store.TableMemories: true, store.TableNotes: true, store.TableSources: true, store.TableContacts: true,
	store.TableSettings: true, store.TableBlogPosts: true, store.TableCrowContext: true, store.TableProjects: true,
}

// row folds the records of one row in the window.
type row struct {
	table, id string
	firstOp   store.Op
	lastOp    store.Op
	forget    bool
	instance  string
	at        int64
	seq       int // order of the last record, for ties
	project   string
	data      json.RawMessage // the last data that was not a forget's
}

func (r *row) kind() string {
	switch {
	case r.forget:
		return Forgotten
	case r.lastOp == store.OpDelete:
		return Deleted
	case r.firstOp == store.OpInsert:
		return Added
	}
	return Changed
}

// readBatch is how many entries Since reads at a time.
const readBatch = 256

// Since reports the changes between cur and the feeds held now, at most
// limit items in the lists (newest first), and returns the cursor of now.
func (s *Service) Since(ctx context.Context, cur Cursor, limit int) (Report, Cursor, error) {
	infos, err := s.o.Feeds.List()
	if err != nil {
		return Report{}, Cursor{}, fmt.Errorf("listing feeds: %w", err)
	}
	next := Cursor{Lengths: map[feed.PublicKey]uint64{}}
	rows := map[string]*row{}
	var states []StateVersion
	seq := 0
	for _, fi := range infos {
		end := fi.State.Length
		start := min(cur.Lengths[fi.Key], end)
		next.Lengths[fi.Key] = end
		for i := start; i < end; i += readBatch {
			if err := ctx.Err(); err != nil {
				return Report{}, Cursor{}, err
			}
			data, _, err := s.o.Feeds.ReadSparse(fi.Key, i, min(i+readBatch, end))
			if err != nil {
				return Report{}, Cursor{}, fmt.Errorf("reading feed %x [%d,%d): %w", fi.Key[:4], i, min(i+readBatch, end), err)
			}
			for _, e := range data {
				if e == nil {
					continue // cleared by a forget
				}
				recs, err := store.ParseChanges(e)
				if err != nil {
					continue // unknown schema or not a record: not ours to list
				}
				for _, rec := range recs {
					seq++
					s.note(rec, seq, rows, &states)
				}
			}
		}
	}
	rep := s.report(rows, limit)
	sort.Slice(states, func(i, j int) bool {
		if states[i].Project != states[j].Project {
			return states[i].Project < states[j].Project
		}
		return states[i].Version < states[j].Version
	})
	rep.StateVersions = states
	if rep.StateVersions == nil {
		rep.StateVersions = []StateVersion{}
	}
	return rep, next, nil
}

// report folds rows into the answer.
func (s *Service) report(rows map[string]*row, limit int) Report {
	all := make([]*row, 0, len(rows))
	for _, r := range rows {
		all = append(all, r)
	}
	// Newest first: the list keeps the newest limit items.
	sort.Slice(all, func(i, j int) bool {
		if all[i].at != all[j].at {
			return all[i].at > all[j].at
		}
		return all[i].seq > all[j].seq
	})
	projects := map[string]*ProjectChanges{}
	tables := map[string]*TableChanges{}
	rep := Report{Total: len(all), Projects: []ProjectChanges{}, Tables: []TableChanges{}}
	listed := 0
	for _, r := range all {
		kind := r.kind()
		var counts *Counts
		var items *[]Item
		if r.table == store.TableMemories {
			if r.forget {
				r.project = s.forgottenProject(r.id)
			}
			pc := projects[r.project]
			if pc == nil {
				pc = &ProjectChanges{Project: r.project, Items: []Item{}}
				projects[r.project] = pc
			}
			counts, items = &pc.Counts, &pc.Items
		} else {
			tc := tables[r.table]
			if tc == nil {
				tc = &TableChanges{Table: r.table, Items: []Item{}}
				tables[r.table] = tc
			}
			counts, items = &tc.Counts, &tc.Items
		}
		counts.add(kind)
		if listed >= limit {
			rep.More = true
			continue
		}
		listed++
		it := Item{Change: kind, Table: r.table, ID: r.id, Project: r.project, InstanceID: r.instance,
			Instance: s.o.Name(r.instance), At: time.Unix(r.at, 0).UTC().Format(time.RFC3339)}
		if !r.forget {
			it.Content = excerpt(r.table, r.data)
		}
		if r.table == store.TableMemories {
			it.Number = s.number(r.id)
		}
		*items = append(*items, it)
	}
	for _, pc := range projects {
		rep.Projects = append(rep.Projects, *pc)
	}
	sort.Slice(rep.Projects, func(i, j int) bool { return rep.Projects[i].Project < rep.Projects[j].Project })
	for _, tc := range tables {
		rep.Tables = append(rep.Tables, *tc)
	}
	sort.Slice(rep.Tables, func(i, j int) bool { return rep.Tables[i].Table < rep.Tables[j].Table })
	return rep
}

// note records change record rec, the seq-th read: a state version, or the last change
// of a listed row another instance wrote.
func (s *Service) note(rec store.ChangeRecord, seq int, rows map[string]*row, states *[]StateVersion) {
	if rec.Table == store.TableStateVersions && rec.Op != store.OpDelete {
		*states = append(*states, s.stateVersion(rec))
		return
	}
	if !listedTables[rec.Table] || rec.InstanceID == s.o.Self {
		return
	}
	key := rec.Table + "/" + rec.RowID
	r := rows[key]
	if r == nil {
		r = &row{table: rec.Table, id: rec.RowID, firstOp: rec.Op}
		rows[key] = r
	}
	r.lastOp, r.instance, r.at, r.seq = rec.Op, rec.InstanceID, rec.Timestamp, seq
	r.forget = store.IsForget(rec.Op == store.OpDelete, rec.Data)
	if !r.forget {
		// The project now (counts need it); the excerpt only for the items listed.
		r.data = rec.Data
		var d struct {
			Project string `json:"project"`
		}
		if json.Unmarshal(rec.Data, &d) == nil && d.Project != "" {
			r.project = d.Project
		}
	}
}

// stateVersion reads a state_versions record.
func (s *Service) stateVersion(rec store.ChangeRecord) StateVersion {
	var v struct {
		Project   string `json:"project"`
		Version   uint64 `json:"version"`
		StateHash string `json:"state_hash"`
	}
	_ = json.Unmarshal(rec.Data, &v)
	return StateVersion{Project: v.Project, Version: v.Version, StateHash: v.StateHash, InstanceID: rec.InstanceID,
		Instance: s.o.Name(rec.InstanceID), At: time.Unix(rec.Timestamp, 0).UTC().Format(time.RFC3339)}
}

// excerpt is a short text of a row's data: a memory's content, else the
// first of title, name, key, content, body or url.
func excerpt(table string, data json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	fields := []string{"title", "name", "key", "content", "body", "url"}
	if table == store.TableMemories {
		fields = []string{"content"}
	}
	for _, f := range fields {
		if v, ok := m[f].(string); ok && v != "" {
			return short(v, ContentRunes)
		}
	}
	return ""
}

// number is a memory's latest number (memory_numbers), nil before home
// numbered it.
func (s *Service) number(id string) *uint64 {
	r, err := s.o.DB.Get(store.TableMemoryNumbers, id)
	if err != nil {
		return nil
	}
	var d struct {
		Number uint64 `json:"number"`
	}
	if json.Unmarshal(r.Data, &d) != nil || d.Number == 0 {
		return nil
	}
	return &d.Number
}

// forgottenProject is the project of a forgotten memory: its tombstone keeps
// only id and forgotten_at, its numbered versions keep the project.
func (s *Service) forgottenProject(id string) string {
	n := s.number(id)
	if n == nil {
		return ""
	}
	r, err := s.o.DB.Get(store.TableMemoryVersions, fmt.Sprintf("%020d", *n))
	if err != nil {
		return ""
	}
	var d struct {
		Project string `json:"project"`
	}
	_ = json.Unmarshal(r.Data, &d)
	return d.Project
}

// clientKey is the local key of a client's remembered cursor.
func clientKey(client string) []byte {
	h := sha256.Sum256([]byte(client))
	return []byte("n/changes/client/" + hex.EncodeToString(h[:]))
}

// Remembered returns the last cursor remembered for client (ok false: none).
func (s *Service) Remembered(client string) (Cursor, bool, error) {
	var text string
	var ok bool
	err := s.o.DB.View(func(txn *store.Txn) error {
		v, found, err := txn.Get(clientKey(client))
		text, ok = string(v), found
		return err
	})
	if err != nil || !ok {
		return Cursor{}, false, err
	}
	c, err := ParseCursor(text)
	if err != nil {
		return Cursor{}, false, nil // an unreadable old value: start over
	}
	return c, true, nil
}

// Remember stores c as client's last cursor.
func (s *Service) Remember(ctx context.Context, client string, c Cursor) error {
	return s.o.DB.Update(ctx, func(txn *store.Txn) error {
		return txn.Set(clientKey(client), []byte(c.String()))
	})
}

// short cuts s to n runes on one line.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
