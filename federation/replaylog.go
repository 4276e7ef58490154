package federation

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ReplayLog keeps a ReplayCache's entries in a file, so that a token
// accepted before a restart (a crash, kill -9, an upgrade) is still refused
// after it while it lives. Each accepted token is appended as one record
// before the request it authenticates runs; the write is not fsynced (it
// survives the process, and a power loss restarts a machine slower than
// the few seconds a token has left of the ones written just before). At
// open the file is rewritten with only the entries still alive.
//
// Record: issuer length (1 byte), issuer, nonce (16 bytes), end (Unix
// seconds, uint64 big-endian). A record cut short at the end (a crash
// mid-write) is dropped.
type ReplayLog struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	count int // records in the file
}

// replayLogCompact is how many records the file holds before Append
// rewrites it with the live entries only (about 4 MiB).
var replayLogCompact = 64 << 10

// OpenReplayLog opens (creating) the log at path, keeps the entries alive at
// now and returns them for ReplayCache.Restore.
func OpenReplayLog(path string, now time.Time) (*ReplayLog, []ReplayEntry, error) {
	live, err := readReplayLog(path, now)
	if err != nil {
		return nil, nil, err
	}
	l := &ReplayLog{path: path}
	if err := l.rewrite(live); err != nil {
		return nil, nil, err
	}
	return l, live, nil
}

// rewrite replaces the file with entries (temp, fsync, rename) and opens it
// for appending.
func (l *ReplayLog) rewrite(entries []ReplayEntry) error {
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, e := range entries {
		if _, err := w.Write(e.record()); err != nil {
			f.Close()
			return err
		}
	}
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("rewriting %s: %w", l.path, err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(l.path)); err == nil {
		d.Sync()
		d.Close()
	}
	nf, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.count = nf, len(entries)
	return nil
}

// ReplayEntry is one remembered token.
type ReplayEntry struct {
	Issuer string
	Nonce  [nonceLen]byte
	End    time.Time // when it may be forgotten (its expiry plus MaxSkew)
}

func (e ReplayEntry) record() []byte {
	b := make([]byte, 0, 1+len(e.Issuer)+nonceLen+8)
	b = append(b, byte(len(e.Issuer)))
	b = append(b, e.Issuer...)
	b = append(b, e.Nonce[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(e.End.Unix()))
}

func readReplayLog(path string, now time.Time) ([]ReplayEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var live []ReplayEntry
	for {
		n, err := r.ReadByte()
		if err == io.EOF {
			return live, nil
		} else if err != nil {
			return nil, err
		}
		rest := make([]byte, int(n)+nonceLen+8)
		if _, err := io.ReadFull(r, rest); err != nil {
			return live, nil // cut short by a crash mid-write
		}
		e := ReplayEntry{Issuer: string(rest[:n]), End: time.Unix(int64(binary.BigEndian.Uint64(rest[int(n)+nonceLen:])), 0)}
		copy(e.Nonce[:], rest[n:int(n)+nonceLen])
		if e.End.After(now) {
			live = append(live, e)
		}
	}
}

// Append records e; once the file holds replayLogCompact records, it is
// rewritten with live() (the entries remembered, e included).
func (l *ReplayLog) Append(e ReplayEntry, live func() []ReplayEntry) error {
	if len(e.Issuer) > 255 {
		return fmt.Errorf("issuer id of %d bytes", len(e.Issuer))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(e.record()); err != nil {
		return err
	}
	l.count++
	if l.count >= replayLogCompact && live != nil {
		entries := append(live(), e)
		return l.rewrite(entries)
	}
	return nil
}

// Close closes the file.
func (l *ReplayLog) Close() error { return l.f.Close() }
