package daemon

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/sync/transport"
)

// pauseSwitch is the operator's replication pause: every peer (all) or
// single instances. A paused peer is neither admitted nor dialled. The
// state lives in $CROW_HOME/sync-paused.json (written before it takes
// effect, reloaded at start) so a restart keeps it. Flipping it raises the
// peer signal.
type pauseSwitch struct {
	mu    sync.Mutex // serialises Set (file, then state)
	state atomic.Pointer[pauseState]
	paths home.Paths
	peers *signal
}

type pauseState struct {
	all   bool
	peers map[string]bool
}

func newPauseSwitch(paths home.Paths, peers *signal) (*pauseSwitch, error) {
	s, err := paths.ReadSyncPaused()
	if err != nil {
		return nil, err
	}
	p := &pauseSwitch{paths: paths, peers: peers}
	p.install(s)
	return p, nil
}

func (p *pauseSwitch) install(s home.SyncPaused) {
	st := &pauseState{all: s.All, peers: map[string]bool{}}
	for _, id := range s.Peers {
		st.peers[id] = true
	}
	p.state.Store(st)
}

// Saved is the current state as persisted.
func (p *pauseSwitch) Saved() home.SyncPaused {
	st := p.state.Load()
	out := home.SyncPaused{All: st.all, Peers: []string{}}
	for id := range st.peers {
		out.Peers = append(out.Peers, id)
	}
	slices.Sort(out.Peers)
	return out
}

// Set pauses (paused true) or resumes instance id, or every peer when id is
// "". Resuming every peer also lifts the single pauses. The file is written
// first: on an error nothing changed.
func (p *pauseSwitch) Set(id string, paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.Saved()
	switch {
	case id == "":
		next.All = paused
		if !paused {
			next.Peers = nil
		}
	case paused:
		next.Peers = append(next.Peers, id)
	default:
		next.Peers = slices.DeleteFunc(next.Peers, func(s string) bool { return s == id })
	}
	if err := p.paths.WriteSyncPaused(next); err != nil {
		return err
	}
	p.install(next)
	p.peers.Notify()
	return nil
}

// Paused reports the pause of every peer.
func (p *pauseSwitch) Paused() bool { return p.state.Load().all }

// PeerPaused reports whether instance id is refused: every peer is paused,
// or it is.
func (p *pauseSwitch) PeerPaused(id string) bool {
	st := p.state.Load()
	return st.all || st.peers[id]
}

// syncAdmitter admits registered, non-revoked instances that are not
// paused. A refusal of a paused peer, or of a key not registered here yet
// within registry.BootstrapGrace, is expected (not a security event).
type syncAdmitter struct{ d *Daemon }

func (a syncAdmitter) paused(p transport.PeerID) bool {
	if a.d.pause.Paused() {
		return true
	}
	pub, err := p.PublicKey()
	if err != nil {
		return false
	}
	_, id := a.d.reg.KeyStatus(pub)
	return id != "" && a.d.pause.PeerPaused(id)
}

func (a syncAdmitter) Admit(p transport.PeerID) bool {
	pub, err := p.PublicKey()
	return err == nil && !a.paused(p) && a.d.reg.IsAdmittedKey(pub)
}

func (a syncAdmitter) ExpectedRefusal(p transport.PeerID) bool {
	if a.paused(p) {
		return true
	}
	pub, err := p.PublicKey()
	return err == nil && a.d.reg.ExpectedKeyRefusal(pub)
}
