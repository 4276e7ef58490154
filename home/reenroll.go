package home

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
