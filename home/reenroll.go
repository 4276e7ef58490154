package home

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrReenrollSeed is returned by Reenroll for a directory that holds the
// master seed: its instance key is derived from the seed, so it cannot take
// a new key this way.
var ErrReenrollSeed = errors.New("this instance holds the master seed; its key is derived from it and cannot be replaced by reenroll")

// Reenroll rewrites a joined satellite's directory (layout 3) for a new
// identity certified by home (`crow instance reenroll`: the directory is a
// restored or cloned copy whose feed forked). j is checked as InitJoined
// checks it, its root key must be this directory's, and its name this
// instance's. Then, each atomically: instance.key, certificate,
// identity.pub, join.json (the enrollment the next start completes) and,
// last, instance-id. api-key, instance.json and config.toml are kept. The
// daemon serving the directory must restart (Load it again) to take the new
// identity.
func (h *Home) Reenroll(j Joined) error {
	if h.HasSeed() {
		return ErrReenrollSeed
	}
	pub, err := checkJoined(j)
	if err != nil {
		return err
	}
	if !h.RootPublicKey().Equal(j.RootPublicKey) {
		return errors.New("reenroll: the certificate is of another crow's root key")
	}
	if j.Name != h.Name {
		return fmt.Errorf("reenroll: the certificate names %q, this instance is %q", j.Name, h.Name)
	}
	if j.InstanceID == h.InstanceID {
		return errors.New("reenroll: the new instance id is the current one")
	}
	pubText, err := encodePublic(pub)
	if err != nil {
		return err
	}
	join, err := json.MarshalIndent(Enrollment{HomeURL: j.HomeURL, HomeID: j.HomeID}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", JoinName, err)
	}
	files := []layoutFile{
		{h.InstanceKeyFile(), []byte(hex.EncodeToString(j.Key.Seed()) + "\n")},
		{h.CertificateFile(), certificateText(j.Certificate)},
		{h.PublicFile(), pubText},
		{h.JoinFile(), append(join, '\n')},
		{h.InstanceIDFile(), []byte(j.InstanceID + "\n")},
	}
	for _, f := range files {
		if err := AtomicWrite(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("reenroll: writing %s: %w", f.path, err)
		}
	}
	return nil
}

// ErrReenrollHome is returned by ReenrollSeed for the home instance: its id
// is the one the registry's home record names, so a forked home is
// recovered by promoting another seed holder, not by a new id.
var ErrReenrollHome = errors.New("this instance is home: a forked home is not reenrolled; " +
	"restore home with `crow init --name NAME --import FILE` in an empty directory, start it, and run `crow instance promote --force` there")

// ReenrollSeed rewrites a seed-holding satellite's directory (one made by
// `crow init --import`) for the new instance id newID: its key is the one
// the seed derives for newID and its certificate is issued by the seed's
// root key, so no invite is needed. e is the enrollment the next start
// completes (home's URL: it registers home and is registered back). Each
// file atomically: certificate, identity.pub (when the identity is locked),
// join.json and, last, instance-id; the seed, api-key, instance.json and
// config.toml are kept. The seed must be at hand (Decrypt on a locked
// identity). The daemon serving the directory must restart.
func (h *Home) ReenrollSeed(newID string, e Enrollment, now time.Time) error {
	if !h.HasSeed() {
		return ErrNoSeed
	}
	if h.Role == RoleHome {
		return ErrReenrollHome
	}
	if newID == h.InstanceID {
		return errors.New("reenroll: the new instance id is the current one")
	}
	if e.HomeURL == "" {
		return errors.New("reenroll: home's gateway URL is not known here (register home first: crow instance add URL)")
	}
	seed := h.Seed()
	cert, err := issueCertificate(seed, newID, h.Name, h.Role, now)
	if err != nil {
		return err
	}
	join, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", JoinName, err)
	}
	files := []layoutFile{{h.CertificateFile(), certificateText(cert)}}
	if _, err := os.Stat(h.PublicFile()); err == nil {
		pubText, err := encodePublic(publicOf(seed, newID))
		if err != nil {
			return err
		}
		files = append(files, layoutFile{h.PublicFile(), pubText})
	}
	files = append(files, layoutFile{h.JoinFile(), append(join, '\n')}, layoutFile{h.InstanceIDFile(), []byte(newID + "\n")})
	for _, f := range files {
		if err := AtomicWrite(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("reenroll: writing %s: %w", f.path, err)
		}
	}
	return nil
}
