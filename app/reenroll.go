package app

import (
	"context"

	"github.com/crow-sync/crow/reenroll"
)

// ReenrollIn is the input of instance.reenroll.
type ReenrollIn struct {
	Invite string `json:"invite,omitempty" maxlen:"2048" desc:"An invite made on home for this instance's name (crow instance invite --name NAME): the crowinv1. line. Omitted on an instance that holds the master seed (crow init --import), which certifies its new identity itself."`
}

// OwnFork is sync.status's report of this instance's own feed forked.
type OwnFork struct {
	Error      string `json:"error"`       // what every local write is told
	PeerLength uint64 `json:"peer_length"` // the head of the own feed peers hold
	Length     uint64 `json:"length"`      // what this copy holds
}

var InstanceReenroll = define(&Def[ReenrollIn, reenroll.Started]{
	Spec: Spec{Name: "instance.reenroll", Method: "POST", Path: "/v1/instance/reenroll", Tool: "crow_reenroll_instance",
		Title: "Reenroll a forked copy", Tag: "instance",
		Summary: "Give this forked copy (a restored or cloned $CROW_HOME) a new identity by invite and replay its fork-branch writes",
		Description: "Recover an instance whose own feed forked (it runs from a restored or cloned copy of its data, so it " +
			"refuses local writes): with an invite made on home (crow instance invite --name NAME) it takes a new instance " +
			"id and key certified by home (an instance holding the master seed needs no invite: it certifies itself), restarts under them, and replays the writes it made on the fork branch as new " +
			"writes (nothing lost, nothing duplicated); the old feed stays a read-only replica. Returns {old_instance_id, " +
			"new_instance_id, fork_length, peer_length, message}. Refused (conflict) when the feed has not forked.",
		NoRoute: true},
	Impl: func(a *App, ctx context.Context, in ReenrollIn) (reenroll.Started, error) {
		if a.d.Reenroll == nil {
			return reenroll.Started{}, Errorf(KindUnavailable, "reenroll is not available on this instance")
		}
		return a.d.Reenroll.Start(ctx, in.Invite)
	},
})

// ownFork fills sync.status's fork and reenroll parts.
func (a *App) ownFork(resp *SyncStatus) error {
	if a.d.Reenroll == nil {
		return nil
	}
	if fe := a.d.Reenroll.Forked(); fe != nil {
		resp.Forked = &OwnFork{Error: fe.Error(), PeerLength: fe.PeerLength, Length: fe.Length}
	}
	job, ok, err := a.d.Reenroll.Job()
	if err != nil {
		return err
	}
	if ok {
		resp.Reenroll = &job
	}
	return nil
}
