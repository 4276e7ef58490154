package registry

import (
	"encoding/hex"
	"sync"
	"time"
)

// BootstrapGrace is how long refusing an instance this registry does not
// know yet counts as the normal start-up race rather than a security event.
// A freshly enrolled satellite dials and calls its peers before their
// registries hold its row (home writes it when the satellite's first start
// completes the join; other satellites learn it by replication, seconds
// later), so its first connections and tokens are refused. Those refusals
// are expected; an instance still unknown after the grace is not, and is
// reported as any other refusal.
const BootstrapGrace = 2 * time.Minute

// maxStrangers bounds the first-refusal times kept; past it every unknown
// subject is reported at once (a flood of unknown keys is not a race).
const maxStrangers = 1024

// strangers remembers when each unknown subject was first refused.
type strangers struct {
	mu    sync.Mutex
	first map[string]time.Time
}

// expected records a refusal of subject at now and reports whether it falls
// within BootstrapGrace of the first one.
func (s *strangers) expected(subject string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == nil {
		s.first = map[string]time.Time{}
	}
	t, ok := s.first[subject]
	if !ok {
		if len(s.first) >= maxStrangers {
			for k, v := range s.first { // drop the ones long past their grace
				if now.Sub(v) > 10*BootstrapGrace {
					delete(s.first, k)
				}
			}
			if len(s.first) >= maxStrangers {
				return false
			}
		}
		s.first[subject], t = now, now
	}
	return now.Sub(t) < BootstrapGrace
}

// ExpectedKeyRefusal reports whether refusing a connection from key is the
// normal start-up race: the key is neither certified here nor revoked
// (KeyUnknown) and was first refused less than BootstrapGrace ago. A revoked
// key, or one still unknown after the grace, is a real refusal.
func (r *Registry) ExpectedKeyRefusal(key []byte) bool {
	if st, _ := r.KeyStatus(key); st != KeyUnknown {
		return false
	}
	return r.strangers.expected("key "+hex.EncodeToString(key), r.clock.Now())
}

// ExpectedIDRefusal is ExpectedKeyRefusal for a federation token's issuer:
// id is not registered here (PeerKey fails with ErrNotFound, not
// ErrRevoked) and was first refused less than BootstrapGrace ago.
func (r *Registry) ExpectedIDRefusal(id string) bool {
	if _, ok := r.snap.Load().rows[id]; ok {
		return false
	}
	return r.strangers.expected("id "+id, r.clock.Now())
}
