package backup

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
)

// ErrNeedsInvite is returned by Restore for an archive without the seed
// when no Enroll function was given: the new instance's key can only be
// certified by home (`crow restore FILE --join INVITE`).
var ErrNeedsInvite = errors.New("this backup holds no master seed (the instance joined by invitation): " +
	"make an invite on home with 'crow instance invite --name NAME' and pass it with --join")

// Options of Restore.
type Options struct {
	// Name of the restored instance ("": the backed-up instance's name).
	Name string
	// Enroll, for an archive without the seed, enrolls the new instance with
	// home by invitation (it spends the invite) and returns what
	// home.InitJoined needs. It is called once the whole archive has been
	// read and checked.
	Enroll func(ctx context.Context, name string) (home.Joined, error)
	// Store options for the restored database (the zero value is the
	// daemon's defaults).
	Store store.Options
}

// Result describes a restored instance.
type Result struct {
	Old        Manifest // the instance the backup was taken of
	InstanceID string   // the new instance id
	Name, Role string
	Seed       bool   // the restored instance holds the seed
	HomeURL    string // the home the first start registers with ("" if none is known)
	Keys       uint64 // database keys restored
}

// Restore restores the archive whose plaintext is plain (see Open) into the
// data directory dir, which must be empty or missing (home.CheckRestorable).
// See the package doc for the steps. On any error dir is left as it was.
func Restore(ctx context.Context, plain io.Reader, dir string, opts Options) (res Result, err error) {
	if err := home.CheckRestorable(dir); err != nil {
		return Result{}, err
	}
	staging, err := home.NewStaging(dir)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(staging)
		}
	}()

	r := newReader(plain)
	m, err := r.manifest()
	if err != nil {
		return Result{}, err
	}
	res.Old = m
	if !m.Seed && opts.Enroll == nil {
		return res, ErrNeedsInvite
	}
	seed, files, err := r.files()
	if err != nil {
		return res, err
	}
	if m.Seed != (seed != nil) {
		return res, fmt.Errorf("%w: the manifest and the seed entry disagree", ErrNotArchive)
	}
	if seed != nil && seed.CrowID() != m.CrowID {
		return res, fmt.Errorf("%w: its seed is not crow %s's", ErrNotArchive, m.CrowID)
	}
	oldKey, err := hex.DecodeString(m.FeedKey)
	if err != nil || len(oldKey) != ed25519.PublicKeySize {
		return res, fmt.Errorf("%w: its feed key is not an Ed25519 key", ErrNotArchive)
	}

	db, err := store.Open(filepath.Join(staging, home.DBName), opts.Store)
	if err != nil {
		return res, err
	}
	closeDB := sync.OnceValue(db.Close)
	defer func() {
		if cerr := closeDB(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	st, err := db.LoadSnapshot(r)
	if err != nil {
		return res, err
	}
	res.Keys = st.Keys
	if err := r.end(); err != nil {
		return res, err
	}
	// The age stream's last chunk is checked when it is read to its end.
	if _, err := io.Copy(io.Discard, plain); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}

	// The archive is whole: make the new identity.
	name := opts.Name
	if name == "" {
		name = m.Name
	}
	var info home.Info
	if seed != nil {
		info, err = home.Init(staging, name, *seed, home.RoleSatellite)
	} else {
		var j home.Joined
		if j, err = opts.Enroll(ctx, name); err != nil {
			return res, err
		}
		info, err = home.InitJoined(staging, j)
		res.HomeURL = j.HomeURL
	}
	if err != nil {
		return res, fmt.Errorf("writing the new identity: %w", err)
	}
	res.InstanceID, res.Name, res.Role, res.Seed = info.InstanceID, info.Name, info.Role, seed != nil

	if err := markOldFeedApplied(ctx, db, info.PublicKey, oldKey); err != nil {
		return res, err
	}
	// A restored instance is a satellite and runs no Numberer: a home's
	// numberer position would hold back the pruning of the queue for ever.
	if err := db.DropConsumer(memory.NumbererConsumer); err != nil {
		return res, fmt.Errorf("dropping home's numberer position: %w", err)
	}
	if seed != nil {
		e, ok, err := homeOf(db, m.InstanceID)
		if err != nil {
			return res, err
		}
		if ok {
			if err := home.WritePendingJoin(staging, e); err != nil {
				return res, err
			}
			res.HomeURL = e.HomeURL
		}
	}
	for name, b := range files {
		if err := home.WriteRestored(staging, name, b); err != nil {
			return res, err
		}
	}
	if err := closeDB(); err != nil {
		return res, err
	}
	if err := home.CommitStaging(staging, dir); err != nil {
		return res, err
	}
	return res, nil
}

// markOldFeedApplied records the old instance's own feed as applied up to
// the length the snapshot holds: its entries are the instance's own writes,
// already in the rows. Entries of it that arrive later (written after the
// backup and replicated to peers) are applied as any replica's.
func markOldFeedApplied(ctx context.Context, db *store.DB, self ed25519.PublicKey, old []byte) error {
	var selfKey, oldKey feed.PublicKey
	copy(selfKey[:], self)
	copy(oldKey[:], old)
	st, err := feed.OpenReplicas(feed.NewKVStorage(db), selfKey).State(oldKey)
	if errors.Is(err, feed.ErrNotFound) {
		return nil // it never wrote
	} else if err != nil {
		return fmt.Errorf("reading the old instance's feed: %w", err)
	}
	return db.Update(ctx, func(txn *store.Txn) error { return txn.SetApplied(oldKey[:], st.Length) })
}

// homeOf finds home in the restored registry: the enrollment a restored
// seed holder completes on its first start.
func homeOf(db *store.DB, oldID string) (home.Enrollment, bool, error) {
	var (
		e  home.Enrollment
		ok bool
	)
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableCrowInstances, func(row *store.Row) error {
			var in registry.Row
			if row.Deleted || json.Unmarshal(row.Data, &in) != nil {
				return nil
			}
			if in.Role == registry.RoleHome && !in.Revoked && in.GatewayURL != "" {
				e, ok = home.Enrollment{HomeURL: in.GatewayURL, HomeID: in.ID}, true
			}
			return nil
		})
	})
	if err != nil {
		return e, false, fmt.Errorf("reading the restored registry: %w", err)
	}
	return e, ok, nil
}
