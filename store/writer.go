package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	sjson "github.com/segmentio/encoding/json"

	"github.com/crow-sync/crow/internal/parallel"
)

// Journal is the local feed as the write path sees it (the daemon adapts the feed package's
// Log to it).
type Journal interface {
	// Stage writes entries (in order) into txn and returns a function that must be
	// called after txn commits successfully to advance the in-memory head. Stage may be
	// called again for the same batch in a new transaction (Update re-runs a conflicting
	// one); only the commit func of the committed attempt is called.
	Stage(txn *Txn, entries [][]byte) (commit func(), err error)
}

// OpPut is a Mutation op that writes the row whether or not it exists: it becomes an insert
// if the row is missing or a tombstone and an update otherwise, decided inside the
// transaction. It never appears in change records.
const OpPut Op = "put"

// Mutation is one row change requested of the Writer.
type Mutation struct {
	Table string
	RowID string
	// Op is OpInsert, OpUpdate, OpDelete or OpPut. Defaults, checked inside the transaction:
	// insert of a live row → ErrExists; update or delete of a missing or deleted row →
	// ErrNotFound. An insert over a tombstone is allowed (it revives the row with a newer
	// version vector).
	Op Op
	// Data is the whole new row, a JSON object. For a delete it may be empty, keeping the
	// row's last data in the tombstone.
	Data json.RawMessage
	// Check, if set, runs inside the transaction after the default checks with the row as it
	// is at that point of the batch (nil if missing; a tombstone has Deleted set). A non-nil
	// error fails this Write call without affecting others. It may run more than once (the
	// batch is retried on a transaction conflict) and must not modify existing.
	Check func(existing *Row) error
	// Transform, if set, computes the new data inside the transaction from the row as it is
	// at that point of the batch (after Check passed), replacing Data: a read-modify-write
	// (such as a patch) that cannot lose a concurrent edit. It must return a JSON object, may
	// run more than once, and must not modify existing. An error fails this Write call.
	Transform func(existing *Row) (json.RawMessage, error)
	// Forget, with OpDelete, writes a forget (see ForgetData): Data must be a forget's, and
	// the row may be live or a tombstone (forgotten or not); a missing row is ErrNotFound.
	// It is the one way to rewrite a tombstone. Without Forget, an insert over a forgotten
	// row is ErrForgotten.
	Forget bool
	// BaseVV, if set, is the version vector this write is made on top of, instead of the
	// existing row's: the new row's vector is BaseVV with this instance's counter
	// incremented. A write on an older base is concurrent with what happened since, so
	// every instance that applies it records the conflict (package reenroll replays a
	// fork branch's edit this way). It must not be used to hide a version: the caller
	// answers for what the base omits.
	BaseVV VV
}

// WriterOptions configures NewWriter.
type WriterOptions struct {
	// InstanceID is this instance's id, stamped as origin and counted in version vectors.
	InstanceID string
	// Journal receives each batch's change records inside the batch transaction.
	Journal Journal
	// MaxBatch caps the mutations per transaction (default 256).
	MaxBatch int
	// MaxBatchBytes caps the data bytes per transaction (default 512 KiB). A single Write
	// larger than that still goes alone in one transaction.
	MaxBatchBytes int
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Gate, if set, is asked before each Write is taken (as DB.CheckSpace): a
	// non-nil error refuses the write, returned as is, and nothing is written.
	// The daemon refuses local writes this way while its own feed is forked.
	Gate func() error
}

// WriterStats counts the writer's work since it was created.
type WriterStats struct {
	// Commits is the number of committed transactions (each one fsync with SyncWrites).
	Commits uint64
	// Mutations is the number of committed mutations.
	Mutations uint64
}

// Writer is the local write path: one goroutine (Serve) turns concurrent Write calls into
// batched transactions (group commit). See the package doc for the steps.
type Writer struct {
	db       *DB
	self     string
	journal  Journal
	maxBatch int
	maxBytes int
	log      *slog.Logger
	gate     func() error

	reqs    chan *request
	done    chan struct{} // closed when Serve returns
	serving atomic.Bool

	commits   atomic.Uint64
	mutations atomic.Uint64
}

// request states.
const (
	reqPending int32 = iota
	reqClaimed
	reqCancelled
)

type request struct {
	fn    func() error // a Do call: run alone, between batches
	muts  []Mutation
	one   bool // WriteEntry: the call's change records go in batch records
	size  int
	state atomic.Int32
	resp  chan outcome // buffered 1
}

type outcome struct {
	rows []Row
	err  error
}

// NewWriter returns a Writer over db. Run Serve to start it.
func NewWriter(db *DB, opts WriterOptions) (*Writer, error) {
	if opts.InstanceID == "" {
		return nil, errors.New("new writer: empty instance id")
	}
	if opts.Journal == nil {
		return nil, errors.New("new writer: nil journal")
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = 512 << 10
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Writer{
		db: db, self: opts.InstanceID, journal: opts.Journal,
		maxBatch: opts.MaxBatch, maxBytes: opts.MaxBatchBytes, gate: opts.Gate,
		log:  opts.Logger.With("component", "store.writer"),
		reqs: make(chan *request), done: make(chan struct{}),
	}, nil
}

// Stats returns counters of committed work.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Commits: w.commits.Load(), Mutations: w.mutations.Load()}
}

// Serve runs the write loop until ctx ends. It may be called once. Writes not yet taken into
// a batch when it returns fail with ErrClosed; a batch in progress completes first.
func (w *Writer) Serve(ctx context.Context) error {
	if !w.serving.CompareAndSwap(false, true) {
		return errors.New("writer: Serve called twice")
	}
	defer close(w.done)
	for {
		var first *request
		select {
		case <-ctx.Done():
			return nil
		case first = <-w.reqs:
		}
		if first.fn != nil {
			w.runDo(first)
			continue
		}
		batch := []*request{first}
		var do *request // a Do call met while collecting: it runs after the batch
		n, size := len(first.muts), first.size
	collect:
		for n < w.maxBatch && size < w.maxBytes {
			select {
			case r := <-w.reqs:
				if r.fn != nil {
					do = r
					break collect
				}
				batch = append(batch, r)
				n += len(r.muts)
				size += r.size
			default:
				break collect
			}
		}
		claimed := batch[:0]
		for _, r := range batch {
			if r.state.CompareAndSwap(reqPending, reqClaimed) {
				claimed = append(claimed, r)
			}
		}
		if len(claimed) > 0 {
			w.commitBatch(claimed)
		}
		if do != nil {
			w.runDo(do)
		}
	}
}

// runDo runs a Do call's fn, unless its caller gave up first.
func (w *Writer) runDo(r *request) {
	if !r.state.CompareAndSwap(reqPending, reqClaimed) {
		return
	}
	r.resp <- outcome{err: r.fn()}
}

// Do runs fn on the writer's goroutine between two batches: no batch is being staged or
// committed while it runs, so fn may write what the Journal's Stage writes too (package
// forget clears entries of the own feed with feed.Log.Clear, which must not run between a
// Stage and its commit). Writes wait while fn runs, so keep it short. If ctx ends before
// the writer has taken the call, fn does not run and ctx.Err() is returned; ErrClosed if
// the writer is not serving.
func (w *Writer) Do(ctx context.Context, fn func() error) error {
	r := &request{fn: fn, resp: make(chan outcome, 1)}
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return ErrClosed
	}
	select {
	case o := <-r.resp:
		return o.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqPending, reqCancelled) {
			return ctx.Err()
		}
		return (<-r.resp).err
	}
}

// Write applies muts atomically (all or none) and returns the rows as written, each with its
// queue Seq, once they are durable and in the journal. Mutations of one call are applied in
// order, so a later one sees an earlier one. If ctx ends before the writer has taken the call
// into a batch, nothing is written and ctx.Err() is returned; once taken, Write waits for the
// outcome. On a full disk (DB.CheckSpace) nothing is taken and a wrapped ErrDiskFull is
// returned.
func (w *Writer) Write(ctx context.Context, muts ...Mutation) ([]Row, error) {
	return w.write(ctx, false, muts)
}

// WriteEntry is Write with the call's change records in as few feed entries as fit, batch
// records (ParseChanges) of up to maxBatchEntry bytes of records each (a lone record stays
// a plain one): for the writes of a background job (home's numbering), whose rows
// replicate together. Forgetting clears whole entries, so the writer of a batch entry
// that carries memory content re-publishes its other rows before clearing it (package
// forget).
func (w *Writer) WriteEntry(ctx context.Context, muts ...Mutation) ([]Row, error) {
	return w.write(ctx, true, muts)
}

func (w *Writer) write(ctx context.Context, one bool, muts []Mutation) ([]Row, error) {
	if len(muts) == 0 {
		return nil, nil
	}
	// Each mutation's check (its data parsed as a JSON object) is its own: on every
	// core for a large call; the first refusal in order is returned.
	errs := make([]error, len(muts))
	parallel.Range(len(muts), minParallelEncode, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			errs[i] = validateMutation(&muts[i])
		}
	})
	size := 0
	for i := range muts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		size += len(muts[i].Data) + len(muts[i].RowID)
	}
	if err := w.db.CheckSpace(); err != nil {
		return nil, err
	}
	if w.gate != nil {
		if err := w.gate(); err != nil {
			return nil, err
		}
	}
	r := &request{muts: muts, one: one, size: size, resp: make(chan outcome, 1)}
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-w.done:
		return nil, ErrClosed
	}
	select {
	case o := <-r.resp:
		return o.rows, o.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqPending, reqCancelled) {
			return nil, ctx.Err()
		}
		o := <-r.resp // claimed: the batch completes and answers
		return o.rows, o.err
	}
}

func validateMutation(m *Mutation) error {
	if !ValidTable(m.Table) {
		return fmt.Errorf("%w: %q", ErrInvalidTable, m.Table)
	}
	if !validRowID(m.RowID) {
		return fmt.Errorf("%w: bad row id %q", ErrInvalidMutation, m.RowID)
	}
	switch m.Op {
	case OpInsert, OpUpdate, OpPut:
		if m.Transform == nil && !isJSONObject(m.Data) {
			return fmt.Errorf("%w: %s %s/%s: data must be a JSON object", ErrInvalidMutation, m.Op, m.Table, m.RowID)
		}
	case OpDelete:
		if len(m.Data) > 0 && !isJSONObject(m.Data) {
			return fmt.Errorf("%w: delete %s/%s: data must be a JSON object", ErrInvalidMutation, m.Table, m.RowID)
		}
		if m.Forget && (m.Transform != nil || !IsForget(true, m.Data)) {
			return fmt.Errorf("%w: forget %s/%s: data must be a forget's (ForgetData), without Transform", ErrInvalidMutation, m.Table, m.RowID)
		}
	default:
		return fmt.Errorf("%w: unknown op %q", ErrInvalidMutation, m.Op)
	}
	if m.Forget && m.Op != OpDelete {
		return fmt.Errorf("%w: %s %s/%s: Forget goes with OpDelete", ErrInvalidMutation, m.Op, m.Table, m.RowID)
	}
	return nil
}

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && sjson.Valid(b)
}

// commitBatch commits reqs, retrying on conflicts and splitting batches that are too big for
// one transaction, and answers every request.
func (w *Writer) commitBatch(reqs []*request) {
	var (
		outs   []outcome
		commit func()
		n      int
	)
	// The one retry loop (DB.update) re-runs a batch that conflicted with another row
	// writer (the apply loop). A claimed batch completes whatever happens to Serve's ctx.
	seq, err := w.db.update(context.Background(), func(txn *Txn) error {
		var err error
		outs, commit, n, err = w.stageBatch(txn, reqs)
		return err
	})
	if errors.Is(err, ErrTooLarge) && len(reqs) > 1 {
		half := len(reqs) / 2
		w.commitBatch(reqs[:half])
		w.commitBatch(reqs[half:])
		return
	}
	if err != nil {
		err = fmt.Errorf("write batch: %w", err)
	} else if n > 0 {
		if commit != nil {
			commit()
		}
		w.commits.Add(1)
		w.mutations.Add(uint64(n))
		w.db.publishQueue(seq)
	}
	for i, r := range reqs {
		if err != nil {
			r.resp <- outcome{err: err}
		} else {
			r.resp <- outs[i]
		}
	}
}

// expectNewRowsFrom is the number of mutations from which a write batch turns on
// known-absent reads: below it the reverse seek per table they cost is more than the
// misses save.
const expectNewRowsFrom = 32

func countMutations(reqs []*request) int {
	n := 0
	for _, r := range reqs {
		n += len(r.muts)
	}
	return n
}

type pendingWrite struct {
	row *Row
	op  Op
	old *Row // the row before this write (nil: missing), for the row counts
}

// stageBatch stages reqs into t, ready to commit: steps 2 to 5 of the package doc. A non-nil
// error applies to every request; otherwise outs holds each request's own outcome, n is the
// number of rows written (0: nothing to commit) and commit is the journal's commit func.
func (w *Writer) stageBatch(t *Txn, reqs []*request) (outs []outcome, commit func(), n int, err error) {
	txn := t.txn
	lamport, err := getUint(txn, keyLamport)
	if err != nil {
		return nil, nil, 0, err
	}
	seq, err := getUint(txn, keySeq)
	if err != nil {
		return nil, nil, 0, err
	}
	if nmuts := countMutations(reqs); nmuts >= expectNewRowsFrom {
		// A bulk write or a large group mostly creates rows (new ULIDs, above every id
		// held): their reads miss, and are answered without a lookup (above.go).
		t.ExpectNewKeys()
	}
	now := w.db.now().UTC().Truncate(1e9) // whole seconds: replicas rebuild it from the record
	batch := map[string]*Row{}            // rows written so far in this batch
	var writes []pendingWrite
	var entries []int // per run of writes journalled together, its length (1: a plain record)
	outs = make([]outcome, len(reqs))
	for i, r := range reqs {
		local := map[string]*Row{}
		var ws []pendingWrite
		l, s := lamport, seq
		for _, m := range r.muts {
			key := m.Table + "/" + m.RowID
			existing := local[key]
			if existing == nil {
				existing = batch[key]
			}
			if existing == nil {
				existing, err = t.readRow(m.Table, m.RowID)
				if err != nil {
					return nil, nil, 0, err
				}
			}
			op, err := resolveOp(m, existing)
			if err == nil && m.Check != nil {
				err = m.Check(cloneRow(existing))
			}
			data := m.Data
			if err == nil && m.Transform != nil {
				data, err = m.Transform(cloneRow(existing))
				if err == nil && !isJSONObject(data) {
					err = fmt.Errorf("%w: transform returned data that is not a JSON object", ErrInvalidMutation)
				}
			}
			if err != nil {
				outs[i].err = fmt.Errorf("%s %s/%s: %w", m.Op, m.Table, m.RowID, err)
				break
			}
			l++
			s++
			row := &Row{
				RowID: m.RowID, Table: m.Table, Data: data, LamportTS: l,
				InstanceID: w.self, Deleted: op == OpDelete, UpdatedAt: now, Seq: s,
			}
			if m.BaseVV != nil {
				row.VV = m.BaseVV.Inc(w.self)
				if existing != nil && op == OpDelete && len(data) == 0 {
					row.Data = existing.Data
				}
			} else if existing != nil {
				row.VV = existing.VV.Inc(w.self)
				if op == OpDelete && len(data) == 0 {
					row.Data = existing.Data
				}
			} else {
				row.VV = VV{w.self: 1}
			}
			if len(row.Data) == 0 {
				row.Data = json.RawMessage("{}")
			}
			local[key] = row
			ws = append(ws, pendingWrite{row, op, existing})
		}
		if outs[i].err != nil {
			continue
		}
		for k, v := range local {
			batch[k] = v
		}
		lamport, seq = l, s
		writes = append(writes, ws...)
		if r.one && len(ws) > 1 {
			entries = append(entries, len(ws))
		} else {
			for range ws {
				entries = append(entries, 1)
			}
		}
		outs[i].rows = make([]Row, len(ws))
		for j, pw := range ws {
			outs[i].rows[j] = *pw.row
		}
	}
	if len(writes) == 0 {
		return outs, nil, 0, nil
	}
	// Each row's stored form and change record are pure functions of the row: a large
	// batch (a bulk write) encodes them on every core, then writes them in order.
	encoded := make([][]byte, len(writes))
	records := make([][]byte, len(writes))
	errs := make([]error, len(writes))
	parallel.Range(len(writes), minParallelEncode, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			pw := writes[j]
			if encoded[j], errs[j] = encodeRowFor(pw.row); errs[j] != nil {
				continue
			}
			records[j], errs[j] = changeFor(pw.row, pw.op).Marshal()
		}
	})
	for j, pw := range writes {
		if errs[j] != nil {
			return nil, nil, 0, errs[j]
		}
		if err := putEncodedRow(txn, pw.row, encoded[j], pw.row.Seq); err != nil {
			return nil, nil, 0, err
		}
		t.countMove(pw.old, pw.row)
	}
	if len(entries) < len(records) {
		grouped := make([][]byte, 0, len(entries))
		j := 0
		for _, n := range entries {
			grouped = appendBatches(grouped, records[j:j+n])
			j += n
		}
		records = grouped
	}
	if err := setUint(txn, keyLamport, lamport); err != nil {
		return nil, nil, 0, err
	}
	if err := setUint(txn, keySeq, seq); err != nil {
		return nil, nil, 0, err
	}
	if err := w.db.touch(txn); err != nil {
		return nil, nil, 0, err
	}
	t.seq = seq
	commit, err = w.journal.Stage(t, records)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("staging %d change records: %w", len(records), err)
	}
	return outs, commit, len(writes), nil
}

// minParallelEncode is the fewest writes per core worth encoding beside the writer's
// goroutine (a bulk write's 1,000 are; a group of single writes mostly is not).
const minParallelEncode = 128

// maxBatchEntry bounds the records one batch entry holds, in bytes (about two memories'
// numbering). The feed stores up to 16 entries under one key (a bulk write's chunk): a
// chunk of 16 batch entries must stay below the store's value threshold (64 KiB), so that
// it lives in the LSM tree, compressed. Batch entries of 32 KiB made both databases larger,
// not smaller (when appends still rewrote the partial chunk).
const maxBatchEntry = 3 << 10

// appendBatches appends recs (one WriteEntry call's records, in order) to entries as batch
// records of at most maxBatchEntry bytes of records each; a record left alone, too large
// to share, is appended as is.
func appendBatches(entries, recs [][]byte) [][]byte {
	for len(recs) > 0 {
		n, size := 1, len(recs[0])
		for n < len(recs) && size+len(recs[n]) <= maxBatchEntry {
			size += len(recs[n])
			n++
		}
		if n == 1 {
			entries = append(entries, recs[0])
		} else {
			entries = append(entries, marshalBatch(recs[:n]))
		}
		recs = recs[n:]
	}
	return entries
}

// resolveOp applies the default checks and turns OpPut into insert or update.
func resolveOp(m Mutation, existing *Row) (Op, error) {
	live := existing != nil && !existing.Deleted
	switch {
	case m.Forget:
		if existing == nil {
			return "", ErrNotFound
		}
		return OpDelete, nil
	case !live && existing.Forgotten() && (m.Op == OpInsert || m.Op == OpPut):
		return "", ErrForgotten
	}
	switch m.Op {
	case OpInsert:
		if live {
			return "", ErrExists
		}
	case OpUpdate, OpDelete:
		if !live {
			return "", ErrNotFound
		}
	case OpPut:
		if live {
			return OpUpdate, nil
		}
		return OpInsert, nil
	}
	return m.Op, nil
}

func cloneRow(r *Row) *Row {
	if r == nil {
		return nil
	}
	c := *r
	c.VV = r.VV.Copy()
	c.Data = bytes.Clone(r.Data)
	return &c
}

// InstanceID returns the instance id the writer stamps on rows.
func (w *Writer) InstanceID() string { return w.self }
