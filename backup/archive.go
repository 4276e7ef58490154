package backup

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
)

// Format is the archive format this build writes and reads.
const Format = 1

// Entry names of the archive (frozen).
const (
	manifestName = "crow-backup.json"
	seedName     = "identity"
	chunkPrefix  = "db/"
	endName      = "end.json"
)

// chunkSize bounds one db/ entry (tar needs each entry's size up front, so
// the snapshot is cut as it streams).
const chunkSize = 1 << 20

// Manifest is the first entry of an archive. Fields are only ever added.
type Manifest struct {
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	// The instance the backup was taken of.
	InstanceID string `json:"instance_id"`
	Name       string `json:"name"`
	Role       string `json:"role"`
	CrowID     string `json:"crow_id"`
	// FeedKey is the hex Ed25519 key of its own feed (its instance key).
	FeedKey string `json:"feed_key"`
	// Seed: the archive holds the master seed.
	Seed bool `json:"seed"`
	// Version of the crow that wrote it.
	Version string `json:"crow_version,omitempty"`
}

// end is the last entry: what the db/ chunks held.
type end struct {
	Chunks int    `json:"db_chunks"`
	Bytes  int64  `json:"db_bytes"`
	SHA256 string `json:"db_sha256"`
}

// Contents is what Write puts in an archive.
type Contents struct {
	Manifest Manifest
	Seed     *identity.Seed    // nil unless Manifest.Seed
	Files    map[string][]byte // names from home.RestoredNames
}

// Collect reads what an archive of h carries besides the database: the
// manifest, the seed (h must be unlocked if it holds one) and the files of
// home.RestoredNames that exist.
func Collect(h *home.Home, version string, now time.Time) (Contents, error) {
	c := Contents{
		Manifest: Manifest{Format: Format, CreatedAt: now.UTC(), InstanceID: h.InstanceID, Name: h.Name, Role: h.Role,
			CrowID: h.CrowID, FeedKey: hex.EncodeToString(h.PublicKey), Seed: h.HasSeed(), Version: version},
		Files: map[string][]byte{},
	}
	if h.HasSeed() {
		if h.Locked() {
			return Contents{}, home.ErrLocked
		}
		seed := h.Seed()
		c.Seed = &seed
	}
	for _, name := range home.RestoredNames {
		b, err := os.ReadFile(filepath.Join(h.Root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return Contents{}, fmt.Errorf("reading %s: %w", name, err)
		}
		c.Files[name] = b
	}
	return c, nil
}

// Stats counts what an archive's database part held.
type Stats struct {
	Chunks int
	Bytes  int64 // bytes of the store snapshot
}

// Write writes the plaintext archive (a tar stream) of c and the store
// snapshot read from db to w. Seal w first: the plaintext holds the seed.
func Write(w io.Writer, c Contents, db io.Reader) (Stats, error) {
	if c.Manifest.Seed != (c.Seed != nil) {
		return Stats{}, errors.New("backup: the manifest and the seed disagree")
	}
	tw := tar.NewWriter(w)
	mod := c.Manifest.CreatedAt
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: mod, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("writing the archive: %w", err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("writing the archive: %w", err)
		}
		return nil
	}
	m, err := json.Marshal(c.Manifest)
	if err != nil {
		return Stats{}, err
	}
	if err := put(manifestName, m); err != nil {
		return Stats{}, err
	}
	if c.Seed != nil {
		if err := put(seedName, []byte(hex.EncodeToString(c.Seed[:])+"\n")); err != nil {
			return Stats{}, err
		}
	}
	for _, name := range home.RestoredNames {
		if b, ok := c.Files[name]; ok {
			if err := put(name, b); err != nil {
				return Stats{}, err
			}
		}
	}
	var st Stats
	sum := sha256.New()
	buf := make([]byte, chunkSize)
	for {
		n, err := fill(db, buf)
		if n > 0 {
			sum.Write(buf[:n])
			if err := put(fmt.Sprintf("%s%06d", chunkPrefix, st.Chunks), buf[:n]); err != nil {
				return st, err
			}
			st.Chunks++
			st.Bytes += int64(n)
		}
		if err == io.EOF {
			break
		} else if err != nil {
			return st, fmt.Errorf("reading the store snapshot: %w", err)
		}
	}
	e, _ := json.Marshal(end{Chunks: st.Chunks, Bytes: st.Bytes, SHA256: hex.EncodeToString(sum.Sum(nil))})
	if err := put(endName, e); err != nil {
		return st, err
	}
	if err := tw.Close(); err != nil {
		return st, fmt.Errorf("writing the archive: %w", err)
	}
	return st, nil
}

// fill reads r into buf until buf is full (nil error) or r ends (io.EOF, with
// the bytes read before it). Unlike io.ReadFull it passes r's own errors
// through, so a cut stream (io.ErrUnexpectedEOF from HTTP) is an error, not
// an end.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// reader reads an archive's entries in their order.
type reader struct {
	tr   *tar.Reader
	next *tar.Header // read ahead by the chunk reader, not consumed yet

	chunks int
	bytes  int64
	sum    hash.Hash
}

func newReader(r io.Reader) *reader { return &reader{tr: tar.NewReader(r), sum: sha256.New()} }

// header returns the next entry's header.
func (r *reader) header() (*tar.Header, error) {
	if h := r.next; h != nil {
		r.next = nil
		return h, nil
	}
	h, err := r.tr.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: it ends before its end record", ErrDamaged)
	} else if err != nil {
		return nil, archiveErr(err)
	}
	return h, nil
}

// small reads the current entry (at most 1 MiB).
func (r *reader) small(h *tar.Header) ([]byte, error) {
	if h.Size > 1<<20 {
		return nil, fmt.Errorf("%w: entry %s is %d bytes", ErrNotArchive, h.Name, h.Size)
	}
	b, err := io.ReadAll(r.tr)
	if err != nil {
		return nil, archiveErr(err)
	}
	return b, nil
}

// manifest reads the first entry.
func (r *reader) manifest() (Manifest, error) {
	h, err := r.header()
	if err != nil {
		return Manifest{}, err
	}
	if h.Name != manifestName {
		return Manifest{}, fmt.Errorf("%w: its first entry is %q, not %s", ErrNotArchive, h.Name, manifestName)
	}
	b, err := r.small(h)
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: its manifest: %w", ErrNotArchive, err)
	}
	if m.Format != Format {
		return Manifest{}, fmt.Errorf("%w: format %d, this crow reads format %d", ErrNotArchive, m.Format, Format)
	}
	if m.InstanceID == "" || m.CrowID == "" || len(m.FeedKey) != 64 {
		return Manifest{}, fmt.Errorf("%w: its manifest lacks the instance id, crow id or feed key", ErrNotArchive)
	}
	return m, nil
}

// files reads the seed and configuration entries up to the first chunk.
func (r *reader) files() (seed *identity.Seed, files map[string][]byte, err error) {
	files = map[string][]byte{}
	for {
		h, err := r.header()
		if err != nil {
			return nil, nil, err
		}
		if strings.HasPrefix(h.Name, chunkPrefix) || h.Name == endName {
			r.next = h
			return seed, files, nil
		}
		b, err := r.small(h)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case h.Name == seedName:
			raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
			if err != nil || len(raw) != len(identity.Seed{}) {
				return nil, nil, fmt.Errorf("%w: its seed is not %d bytes of hex", ErrNotArchive, len(identity.Seed{}))
			}
			seed = new(identity.Seed)
			copy(seed[:], raw)
		case slices.Contains(home.RestoredNames, h.Name):
			files[h.Name] = b
		default:
			return nil, nil, fmt.Errorf("%w: unknown entry %q", ErrNotArchive, h.Name)
		}
	}
}

// Read implements io.Reader over the db/ chunks, in order; it ends (io.EOF)
// at the entry that follows them.
func (r *reader) Read(p []byte) (int, error) {
	for {
		if r.next == nil {
			n, err := r.tr.Read(p)
			if n > 0 {
				r.sum.Write(p[:n])
				r.bytes += int64(n)
				return n, nil
			}
			if err != io.EOF {
				return 0, archiveErr(err)
			}
			h, err := r.tr.Next()
			if err == io.EOF {
				return 0, fmt.Errorf("%w: it ends before its end record", ErrDamaged)
			} else if err != nil {
				return 0, archiveErr(err)
			}
			r.next = h
		}
		want := fmt.Sprintf("%s%06d", chunkPrefix, r.chunks)
		switch r.next.Name {
		case want:
			r.next = nil
			r.chunks++
		case endName:
			return 0, io.EOF
		default:
			return 0, fmt.Errorf("%w: entry %q where %s was expected", ErrDamaged, r.next.Name, want)
		}
	}
}

// end reads the end record, checks it against the chunks read, and checks
// that nothing follows.
func (r *reader) end() error {
	h, err := r.header()
	if err != nil {
		return err
	}
	if h.Name != endName {
		return fmt.Errorf("%w: entry %q after the database", ErrDamaged, h.Name)
	}
	b, err := r.small(h)
	if err != nil {
		return err
	}
	var e end
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("%w: its end record: %w", ErrDamaged, err)
	}
	if e.Chunks != r.chunks || e.Bytes != r.bytes || e.SHA256 != hex.EncodeToString(r.sum.Sum(nil)) {
		return fmt.Errorf("%w: the database part does not match its end record (%d chunks, %d bytes read; %d, %d recorded)",
			ErrDamaged, r.chunks, r.bytes, e.Chunks, e.Bytes)
	}
	if _, err := r.tr.Next(); err != io.EOF {
		return fmt.Errorf("%w: entries after its end record", ErrDamaged)
	}
	return nil
}

// archiveErr names a tar error: age's ErrDamaged passes through, anything
// else means the plaintext is not our tar stream.
func archiveErr(err error) error {
	if errors.Is(err, ErrDamaged) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return fmt.Errorf("%w: %w", ErrNotArchive, err)
}
