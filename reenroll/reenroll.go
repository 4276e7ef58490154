package reenroll

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/apply"
)

// Errors of Start.
var (
	// ErrNotForked: reenroll is for an instance whose own feed forked.
	ErrNotForked = errors.New("this instance's feed has not forked: reenroll is only for a restored or cloned copy (see `crow sync status`)")
	// ErrBadInvite: the invite is missing, malformed, expired or of another crow.
	ErrBadInvite = errors.New("reenroll needs a valid invite")
	// ErrRefused: home refused the join, or its answer did not verify.
	ErrRefused = errors.New("home refused the reenrollment")
	// ErrInProgress: a reenrollment was already made; the daemon restarts into it.
	ErrInProgress = errors.New("a reenrollment is already in progress")
)

// Joiner sends a join request to home's gateway at url and returns home's
// answer (the daemon wires it to the instances.join operation).
type Joiner func(ctx context.Context, url string, req member.JoinRequest) (member.JoinAnswer, error)

// Config configures a Manager.
type Config struct {
	// Self is the instance id this daemon serves (Home's, at its start).
	Self   string
	Home   *home.Home
	DB     *store.DB
	Own    *feed.Log
	Reps   *feed.Replicas
	Writer *store.Writer
	Join   Joiner
	// HomeOf returns home's instance id and gateway URL from the registry:
	// a seed holder's reenrollment needs no invite, only where home is.
	HomeOf func() (id, url string, err error)
	// Restart asks the daemon to stop and start again on Home (which Start
	// has rewritten for the new identity).
	Restart func()
	Clock   clock.Clock
	Logger  *slog.Logger
	// Reapply, if set, wakes the applier after the replay moved the old
	// feed's checkpoint back (rows edited on both branches).
	Reapply func()
	// Poll is how often the Replayer looks at the old feed (default 1s).
	Poll time.Duration
}

// Phases of a Job.
const (
	PhaseEnrolled  = "enrolled"  // new identity written; the next start archives the old feed
	PhaseReplaying = "replaying" // old feed archived and deleted; waiting for the genuine branch
	PhaseDone      = "done"      // fork-branch writes replayed
)

// Job is the persisted reenrollment (n/reenroll/job).
type Job struct {
	Phase         string `json:"phase"`
	OldInstanceID string `json:"old_instance_id"`
	OldKey        string `json:"old_key"` // hex
	NewInstanceID string `json:"new_instance_id"`
	Evidence      string `json:"evidence"` // hex feed.ForkError encoding
	// ForkLength is how many entries the copy's old feed held (archived);
	// PeerLength the head of the genuine branch the evidence names.
	ForkLength uint64 `json:"fork_length"`
	PeerLength uint64 `json:"peer_length"`
	// CommonPrefix is where the branches part (set when found); Replayed is
	// how many rows were written again, Skipped how many fork-branch rows
	// needed nothing (the new identity had written them already, or a
	// crow_instances row of the old identity).
	CommonPrefix *uint64 `json:"common_prefix,omitempty"`
	ForkEntries  uint64  `json:"fork_entries"`
	Replayed     int     `json:"replayed"`
	Skipped      int     `json:"skipped"`
	StartedAt    string  `json:"started_at"`
	DoneAt       string  `json:"done_at,omitempty"`
}

var (
	keyJob         = []byte("n/reenroll/job")
	keyEntryPrefix = []byte("n/reenroll/entry/")
)

func entryKey(i uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), keyEntryPrefix...), i)
}

// Manager runs reenrollment: Start (the operation), Archive (at a start
// under the new identity) and Serve (the replay).
type Manager struct {
	cfg  Config
	log  *slog.Logger
	mu   sync.Mutex
	busy bool
	kick chan struct{}

	jobMu sync.Mutex
	job   *cachedJob // guarded by jobMu: the persisted job, nil until read
}

// cachedJob is the persisted job as Job answers it.
type cachedJob struct {
	j  Job
	ok bool
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	return &Manager{cfg: cfg, log: cfg.Logger.With("component", "reenroll"), kick: make(chan struct{}, 1)}
}

// Forked is the refusal local writes get now (nil: not forked).
func (m *Manager) Forked() *ForkedError {
	var fe *ForkedError
	if errors.As(Refusal(m.cfg.Self, m.cfg.Own), &fe) {
		return fe
	}
	return nil
}

// Job returns the persisted reenrollment, ok false if there is none. It is
// read from the store once and then kept in memory (only the Manager writes
// it, through storeJob), so the sync status it is part of does not wait for
// the store's commits in flight.
func (m *Manager) Job() (Job, bool, error) {
	m.jobMu.Lock()
	defer m.jobMu.Unlock()
	if m.job == nil {
		j, ok, err := loadJob(m.cfg.DB)
		if err != nil {
			return Job{}, false, err
		}
		m.job = &cachedJob{j: j, ok: ok}
	}
	return m.job.j, m.job.ok, nil
}

// storeJob persists job and, once committed, makes it what Job answers.
func (m *Manager) storeJob(ctx context.Context, job Job) error {
	if err := m.cfg.DB.Update(ctx, func(txn *store.Txn) error { return saveJob(txn, job) }); err != nil {
		return err
	}
	m.jobMu.Lock()
	m.job = &cachedJob{j: job, ok: true}
	m.jobMu.Unlock()
	return nil
}

func loadJob(db *store.DB) (j Job, ok bool, err error) {
	err = db.View(func(txn *store.Txn) error {
		b, found, err := txn.Get(keyJob)
		if err != nil || !found {
			return err
		}
		ok = true
		return json.Unmarshal(b, &j)
	})
	return j, ok, err
}

func saveJob(txn *store.Txn, j Job) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return txn.Set(keyJob, b)
}

// Started is Start's answer.
type Started struct {
	OldInstanceID string `json:"old_instance_id"`
	NewInstanceID string `json:"new_instance_id"`
	ForkLength    uint64 `json:"fork_length"`
	PeerLength    uint64 `json:"peer_length"`
	Message       string `json:"message"`
}

// Start reenrolls this forked copy: a new instance id and key, certified by
// home through invite (made on home with `crow instance invite`). It
// records the job, rewrites $CROW_HOME for the new identity and asks the
// daemon to restart; the fork-branch writes are replayed after the restart.
func (m *Manager) Start(ctx context.Context, invite string) (Started, error) {
	fe := m.cfg.Own.Forked()
	if fe == nil {
		return Started{}, ErrNotForked
	}
	m.mu.Lock()
	if m.busy {
		m.mu.Unlock()
		return Started{}, ErrInProgress
	}
	m.busy = true
	m.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			m.mu.Lock()
			m.busy = false
			m.mu.Unlock()
		}
	}()
	h := m.cfg.Home
	if h.HasSeed() {
		if strings.TrimSpace(invite) != "" {
			return Started{}, fmt.Errorf("%w: this instance holds the master seed, so it certifies its new identity itself: run it without an invite", ErrBadInvite)
		}
		st, err := m.startSeed(ctx, fe)
		ok = err == nil
		return st, err
	}
	if strings.TrimSpace(invite) == "" {
		return Started{}, fmt.Errorf("%w: make one on home (crow instance invite --name %s) and pass it with --join", ErrBadInvite, h.Name)
	}
	inv, err := member.ParseInvite(strings.TrimSpace(invite), m.cfg.Clock.Now())
	switch {
	case errors.Is(err, member.ErrExpired):
		return Started{}, fmt.Errorf("%w: the invite has expired; make a new one on home (crow instance invite --name %s)", ErrBadInvite, h.Name)
	case err != nil:
		return Started{}, fmt.Errorf("%w: copy the whole crowinv1. line from `crow instance invite --name %s` on home: %v", ErrBadInvite, h.Name, err)
	case inv.CrowID != h.CrowID:
		return Started{}, fmt.Errorf("%w: the invite is of crow %s, this instance is of %s", ErrBadInvite, inv.CrowID, h.CrowID)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Started{}, err
	}
	id, err := home.NewInstanceID()
	if err != nil {
		return Started{}, err
	}
	req, err := member.NewJoinRequest(inv, id, key, h.Name, rand.Reader)
	if err != nil {
		return Started{}, fmt.Errorf("%w: %v", ErrBadInvite, err)
	}
	ans, err := m.cfg.Join(ctx, inv.GatewayURL, req)
	if err != nil {
		return Started{}, fmt.Errorf("%w: home at %s: %v", ErrRefused, inv.GatewayURL, err)
	}
	if err := member.VerifyJoinAnswer(inv, req, ans); err != nil {
		return Started{}, fmt.Errorf("%w: the answer from %s is not home's: %v", ErrRefused, inv.GatewayURL, err)
	}
	job := m.newJob(fe, id)
	// The job first: a crash before the directory is rewritten leaves a job
	// for an id this directory does not have, which Archive ignores.
	if err := m.storeJob(ctx, job); err != nil {
		return Started{}, fmt.Errorf("recording the reenrollment: %w", err)
	}
	homeID := ""
	if pe, ok := h.PendingJoin(); ok {
		homeID = pe.HomeID
	}
	if err := h.Reenroll(home.Joined{
		Name: h.Name, InstanceID: id, Key: key, Certificate: ans.Certificate,
		RootPublicKey: ans.RootPublicKey, HomeURL: inv.GatewayURL, HomeID: homeID,
	}); err != nil {
		return Started{}, fmt.Errorf("enrolled by home, but writing %s failed (the invite is used: make a new one): %w", h.Root, err)
	}
	ok = true
	return m.restarting(job), nil
}

// newJob is the reenrollment of this forked copy as instance id.
func (m *Manager) newJob(fe *feed.ForkError, id string) Job {
	ev, _ := fe.MarshalBinary()
	oldKey := m.cfg.Own.Key()
	return Job{
		Phase: PhaseEnrolled, OldInstanceID: m.cfg.Home.InstanceID, OldKey: hex.EncodeToString(oldKey[:]), NewInstanceID: id,
		Evidence: hex.EncodeToString(ev), ForkLength: m.cfg.Own.Head().Length, PeerLength: fe.Other.Length,
		StartedAt: m.cfg.Clock.Now().UTC().Format(time.RFC3339),
	}
}

// startSeed reenrolls a seed-holding satellite: the seed derives the key of
// a new instance id and its root key certifies it, so no invite is needed;
// the next start registers with home as an invited one does.
func (m *Manager) startSeed(ctx context.Context, fe *feed.ForkError) (Started, error) {
	if m.cfg.Home.Role == home.RoleHome {
		return Started{}, home.ErrReenrollHome
	}
	if m.cfg.HomeOf == nil {
		return Started{}, fmt.Errorf("%w: home is not known here", ErrRefused)
	}
	homeID, homeURL, err := m.cfg.HomeOf()
	if err != nil || homeURL == "" {
		return Started{}, fmt.Errorf("%w: home's gateway URL is not known here (register home: crow instance add URL): %v", ErrRefused, err)
	}
	id, err := home.NewInstanceID()
	if err != nil {
		return Started{}, err
	}
	job := m.newJob(fe, id)
	if err := m.storeJob(ctx, job); err != nil {
		return Started{}, fmt.Errorf("recording the reenrollment: %w", err)
	}
	if err := m.cfg.Home.ReenrollSeed(id, home.Enrollment{HomeURL: homeURL, HomeID: homeID}, m.cfg.Clock.Now()); err != nil {
		return Started{}, fmt.Errorf("writing %s for the new identity: %w", m.cfg.Home.Root, err)
	}
	return m.restarting(job), nil
}

// restarting asks the daemon to restart under the new identity (after the
// answer reached the caller) and says so.
func (m *Manager) restarting(job Job) Started {
	m.log.Warn("reenrolled: restarting under the new identity", "old_instance_id", job.OldInstanceID, "new_instance_id", job.NewInstanceID)
	go func() {
		// Let the answer reach the caller before the gateway stops.
		_ = clock.Wait(context.Background(), m.cfg.Clock, 300*time.Millisecond)
		m.cfg.Restart()
	}()
	return Started{
		OldInstanceID: job.OldInstanceID, NewInstanceID: job.NewInstanceID, ForkLength: job.ForkLength, PeerLength: job.PeerLength,
		Message: "reenrolled: the daemon restarts as instance " + job.NewInstanceID + "; the writes this copy made on the fork branch " +
			"are replayed under the new identity once the genuine branch of the old feed arrives from peers (see `crow sync status`)",
	}
}

// Archive runs at a start, before replication: if a reenrollment for this
// identity was just made (PhaseEnrolled), the old feed's entries are copied
// to n/reenroll/entry/ and the old feed is deleted, so replication fetches
// its genuine branch from peers like any peer's feed.
func (m *Manager) Archive(ctx context.Context) error {
	job, ok, err := m.Job()
	if err != nil || !ok || job.NewInstanceID != m.cfg.Self {
		return err
	}
	old, err := job.oldKey()
	if err != nil {
		return err
	}
	if job.Phase == PhaseReplaying {
		// A crash between the job moving on and the delete: the fork
		// branch (with its fork evidence) is still held; delete it again.
		if fe, err := m.cfg.Reps.Fork(old); err == nil && fe != nil {
			return m.cfg.Reps.Delete(old)
		}
		return nil
	}
	if job.Phase != PhaseEnrolled {
		return nil
	}
	st, err := m.cfg.Reps.State(old)
	if errors.Is(err, feed.ErrNotFound) {
		st = feed.State{}
	} else if err != nil {
		return fmt.Errorf("reenroll: reading the old feed: %w", err)
	}
	const chunk = 512
	for start := uint64(0); start < st.Length; start += chunk {
		end := min(st.Length, start+chunk)
		es, _, err := m.cfg.Reps.ReadSparse(old, start, end)
		if err != nil {
			return fmt.Errorf("reenroll: reading the old feed [%d,%d): %w", start, end, err)
		}
		err = m.cfg.DB.Update(ctx, func(txn *store.Txn) error {
			for i, e := range es {
				if e == nil {
					e = []byte{} // cleared (forgotten) entry: nothing to replay
				}
				if err := txn.Set(entryKey(start+uint64(i)), e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reenroll: archiving the old feed: %w", err)
		}
	}
	job.ForkLength = st.Length
	job.Phase = PhaseReplaying
	// The job moves on before the feed goes: a crash in between archives
	// again from nothing held (ForkLength 0) only if the job had not moved.
	if err := m.storeJob(ctx, job); err != nil {
		return err
	}
	if err := m.cfg.Reps.Delete(old); err != nil {
		return fmt.Errorf("reenroll: deleting the old feed's fork branch: %w", err)
	}
	m.log.Info("reenroll: archived the old feed's fork branch; waiting for its genuine branch from peers",
		"entries", st.Length, "old_instance_id", job.OldInstanceID)
	return nil
}

func (j Job) oldKey() (feed.PublicKey, error) {
	var k feed.PublicKey
	b, err := hex.DecodeString(j.OldKey)
	if err != nil || len(b) != len(k) {
		return k, fmt.Errorf("reenroll: job with a bad old key %q", j.OldKey)
	}
	copy(k[:], b)
	return k, nil
}

// Notify wakes the replayer (the old feed grew).
func (m *Manager) Notify() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Serve replays the fork-branch writes of a reenrollment in PhaseReplaying
// once the genuine branch shows where the branches part; it returns when
// there is nothing (more) to do or ctx ends.
func (m *Manager) Serve(ctx context.Context) error {
	for {
		job, ok, err := m.Job()
		if err != nil {
			return err
		}
		if !ok || job.Phase != PhaseReplaying || job.NewInstanceID != m.cfg.Self {
			<-ctx.Done()
			return nil
		}
		done, err := m.step(ctx, job)
		if err != nil && ctx.Err() == nil {
			m.log.Warn("reenroll: replaying the fork branch; retrying", "err", err)
		}
		if done {
			continue
		}
		t := m.cfg.Clock.NewTimer(m.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-m.kick:
		case <-t.C():
		}
		t.Stop()
	}
}

// step looks for the common prefix and, once found, replays; done is true
// when the job moved to PhaseDone.
func (m *Manager) step(ctx context.Context, job Job) (done bool, err error) {
	old, err := job.oldKey()
	if err != nil {
		return false, err
	}
	st, err := m.cfg.Reps.State(old)
	if errors.Is(err, feed.ErrNotFound) {
		st = feed.State{}
	} else if err != nil {
		return false, err
	}
	k, found, err := m.commonPrefix(old, st.Length, job)
	if err != nil || !found {
		return false, err
	}
	replayed, skipped, n, err := m.replay(ctx, old, job.OldInstanceID, k, job.ForkLength, st.Length)
	if err != nil {
		return false, err
	}
	job.CommonPrefix = &k
	job.ForkEntries = n
	job.Replayed, job.Skipped = replayed, skipped
	job.Phase = PhaseDone
	job.DoneAt = m.cfg.Clock.Now().UTC().Format(time.RFC3339)
	if err := m.storeJob(ctx, job); err != nil {
		return false, err
	}
	m.log.Info("reenroll: fork-branch writes replayed under the new identity", "common_prefix", k,
		"fork_entries", n, "rows_replayed", replayed, "rows_skipped", skipped)
	return true, nil
}

// commonPrefix compares the archived fork branch with the genuine branch
// held (length held): the first differing entry ends the common prefix. It
// is known once an entry differs, or the genuine branch reaches the fork
// branch's end or the head the evidence named.
func (m *Manager) commonPrefix(old feed.PublicKey, held uint64, job Job) (uint64, bool, error) {
	n := min(held, job.ForkLength)
	const chunk = 512
	for start := uint64(0); start < n; start += chunk {
		end := min(n, start+chunk)
		gen, _, err := m.cfg.Reps.ReadSparse(old, start, end)
		if err != nil {
			return 0, false, err
		}
		var diff = -1
		err = m.cfg.DB.View(func(txn *store.Txn) error {
			for i, g := range gen {
				a, ok, err := txn.Get(entryKey(start + uint64(i)))
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("reenroll: archived entry %d missing", start+uint64(i))
				}
				if !SameEntry(a, g) {
					diff = i
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return 0, false, err
		}
		if diff >= 0 {
			return start + uint64(diff), true, nil
		}
	}
	switch {
	case held >= job.ForkLength:
		return job.ForkLength, true, nil
	case held >= job.PeerLength:
		return held, true, nil
	}
	return 0, false, nil
}

// SameEntry reports whether an archived entry and an entry of the genuine
// branch are the same write. A cleared entry (nil or empty: its memory was
// forgotten) matches anything: it is never replayed.
func SameEntry(archived, genuine []byte) bool {
	if len(archived) == 0 || genuine == nil {
		return true
	}
	return string(archived) == string(genuine)
}

// Selection is what the replay writes again: the rows the fork branch
// (archived entries from the common prefix on) wrote, in first-write order,
// without the crow_instances rows (the old identity's own row).
func Selection(entries [][]byte) (rows []RowRef, skipped int) {
	seen := map[RowRef]bool{}
	for _, e := range entries {
		if len(e) == 0 {
			continue
		}
		recs, err := store.ParseChanges(e)
		if err != nil {
			continue
		}
		for _, rec := range recs {
			r := RowRef{Table: rec.Table, RowID: rec.RowID}
			if seen[r] {
				continue
			}
			seen[r] = true
			if rec.Table == store.TableCrowInstances {
				skipped++
				continue
			}
			rows = append(rows, r)
		}
	}
	return rows, skipped
}

// RowRef names a row.
type RowRef struct{ Table, RowID string }

// errWritten: the new identity already wrote the row (no replay needed).
var errWritten = errors.New("already written under the new identity")

// replay writes again, under the new identity, every row the fork branch
// [k, n) wrote: its current local state (the fork branch's write, or a
// later one), as a put, or a put and a delete for a tombstone, or a forget.
//
// A row the genuine branch (the old feed held here, [k, held)) wrote too
// was edited on both branches: the two edits are concurrent, but both carry
// the old instance's counter, so every instance would take one as the
// other's successor and lose the other silently. Such a row is replayed
// with the fork branch's own version (its data, from the archive) on the
// vector the row had at the common prefix (store.Mutation.BaseVV), so the
// replay is concurrent with the genuine edit everywhere: every instance
// applying both records the same conflict, whichever it saw first. Here,
// where the genuine edit may have been applied already, the row's apply
// state is erased and the old feed's checkpoint moved back to the first
// such genuine entry, so the applier applies it again on top of the replay
// and records the conflict as the others do.
func (m *Manager) replay(ctx context.Context, old feed.PublicKey, oldID string, k, n, held uint64) (replayed, skipped int, entries uint64, err error) {
	var es [][]byte
	err = m.cfg.DB.View(func(txn *store.Txn) error {
		for i := k; i < n; i++ {
			v, ok, err := txn.Get(entryKey(i))
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("reenroll: archived entry %d missing", i)
			}
			es = append(es, append([]byte(nil), v...))
		}
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	rows, skipped := Selection(es)
	both, err := m.genuineWrites(old, k, held, rows)
	if err != nil {
		return 0, 0, 0, err
	}
	forks := ForkVersions(es, oldID)
	self := m.cfg.Self
	notYet := func(existing *store.Row) error {
		if existing != nil && existing.VV[self] > 0 {
			return errWritten
		}
		return nil
	}
	for _, r := range rows {
		row, err := m.cfg.DB.Get(r.Table, r.RowID)
		if errors.Is(err, store.ErrNotFound) {
			skipped++
			continue
		}
		if err != nil {
			return 0, 0, 0, err
		}
		if row.VV[self] > 0 {
			skipped++
			continue
		}
		var muts []store.Mutation
		fv, forked := forks[r]
		_, genuineToo := both[r]
		// On the base vector: a row the genuine branch edited too, and a
		// row whose live version is still the fork branch's (so that a
		// genuine edit arriving later, from a clone that still runs, is
		// concurrent with the replay rather than silently below or above it).
		onBase := forked && !store.IsForget(fv.Deleted, fv.Data) &&
			(genuineToo || (row.InstanceID == oldID && row.VV.Compare(fv.VV) == store.Equal))
		switch {
		case row.Forgotten():
			muts = []store.Mutation{{Table: r.Table, RowID: r.RowID, Op: store.OpDelete, Forget: true, Data: row.Data, Check: notYet}}
		case onBase:
			muts = []store.Mutation{{Table: r.Table, RowID: r.RowID, Op: store.OpPut, Data: fv.Data, BaseVV: fv.Base, Check: notYet}}
			if fv.Deleted {
				muts = append(muts, store.Mutation{Table: r.Table, RowID: r.RowID, Op: store.OpDelete})
			}
		case row.Deleted:
			muts = []store.Mutation{
				{Table: r.Table, RowID: r.RowID, Op: store.OpPut, Data: row.Data, Check: notYet},
				{Table: r.Table, RowID: r.RowID, Op: store.OpDelete},
			}
		default:
			muts = []store.Mutation{{Table: r.Table, RowID: r.RowID, Op: store.OpPut, Data: row.Data, Check: notYet}}
		}
		if _, err := m.cfg.Writer.Write(ctx, muts...); errors.Is(err, errWritten) {
			skipped++
			continue
		} else if err != nil {
			return 0, 0, 0, fmt.Errorf("replaying %s/%s: %w", r.Table, r.RowID, err)
		}
		replayed++
	}
	// Also on a second run (a crash before the job was saved): moving the
	// checkpoint back only re-applies entries, which is idempotent.
	if err := m.reapply(ctx, old, both); err != nil {
		return 0, 0, 0, err
	}
	return replayed, skipped, n - k, nil
}

// genuineWrites returns, of rows, those the genuine branch [k, held) of the
// old feed wrote, each with the index of its first such entry.
func (m *Manager) genuineWrites(old feed.PublicKey, k, held uint64, rows []RowRef) (map[RowRef]uint64, error) {
	want := make(map[RowRef]bool, len(rows))
	for _, r := range rows {
		want[r] = true
	}
	both := map[RowRef]uint64{}
	const chunk = 512
	for start := k; start < held; start += chunk {
		end := min(held, start+chunk)
		gen, _, err := m.cfg.Reps.ReadSparse(old, start, end)
		if err != nil {
			return nil, err
		}
		for i, e := range gen {
			if len(e) == 0 {
				continue
			}
			recs, err := store.ParseChanges(e)
			if err != nil {
				continue
			}
			for _, rec := range recs {
				r := RowRef{Table: rec.Table, RowID: rec.RowID}
				if _, seen := both[r]; want[r] && !seen {
					both[r] = start + uint64(i)
				}
			}
		}
	}
	return both, nil
}

// reapply makes the applier apply again, from the first of them, the
// genuine-branch entries of the rows edited on both branches: their apply
// state is erased (the replay is the row's only version here now) and the
// old feed's checkpoint moved back, in one transaction.
func (m *Manager) reapply(ctx context.Context, old feed.PublicKey, both map[RowRef]uint64) error {
	if len(both) == 0 {
		return nil
	}
	from := ^uint64(0)
	for _, i := range both {
		from = min(from, i)
	}
	err := m.cfg.DB.Update(ctx, func(txn *store.Txn) error {
		for r := range both {
			if err := apply.EraseRowStateTxn(txn, r.Table, r.RowID); err != nil {
				return err
			}
		}
		next, err := txn.Applied(old[:])
		if err != nil || next <= from {
			return err
		}
		return txn.SetApplied(old[:], from)
	})
	if err != nil {
		return fmt.Errorf("reenroll: re-applying the genuine edits of %d rows edited on both branches: %w", len(both), err)
	}
	m.log.Info("reenroll: rows edited on both branches replayed as concurrent edits; their genuine edits are applied again", "rows", len(both), "from_entry", from)
	if m.cfg.Reapply != nil {
		m.cfg.Reapply()
	}
	return nil
}

// ForkVersion is the fork branch's last version of a row: its data, whether
// it is a delete, and Base, the row's vector at the common prefix (the last
// version's vector without the fork branch's own increments).
type ForkVersion struct {
	Data    json.RawMessage
	Deleted bool
	VV      store.VV // the version's own vector
	Base    store.VV
}

// ForkVersions returns the fork branch's last version of every row the
// archived entries [k, n) wrote, by oldID. Each write of a row by oldID
// increments the row's counter of oldID by one, and the fork branch holds
// no other version carrying that counter, so the counter at the common
// prefix is the last version's minus the branch's writes of the row.
func ForkVersions(entries [][]byte, oldID string) map[RowRef]ForkVersion {
	writes := map[RowRef]uint64{}
	last := map[RowRef]store.ChangeRecord{}
	for _, e := range entries {
		if len(e) == 0 {
			continue
		}
		recs, err := store.ParseChanges(e)
		if err != nil {
			continue
		}
		for _, rec := range recs {
			if rec.InstanceID != oldID {
				continue
			}
			r := RowRef{Table: rec.Table, RowID: rec.RowID}
			writes[r]++
			last[r] = rec
		}
	}
	out := make(map[RowRef]ForkVersion, len(last))
	for r, rec := range last {
		base := rec.VV.Copy()
		if c := base[oldID]; c > writes[r] {
			base[oldID] = c - writes[r]
		} else {
			delete(base, oldID)
		}
		data := rec.Data
		if len(data) == 0 {
			data = json.RawMessage("{}")
		}
		out[r] = ForkVersion{Data: data, Deleted: rec.Op == store.OpDelete, VV: rec.VV, Base: base}
	}
	return out
}
