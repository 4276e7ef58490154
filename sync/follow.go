package sync

import (
	"context"
	"errors"
	"time"
)

// FollowPeers keeps n's peer set equal to list() until ctx is done: it reads
// list once at start and again after every value on changed. It is the
// daemon's bridge from the registry to replication.
//
// A peer that leaves the list is disconnected. farewell (may be nil) says how
// long a leaving peer keeps the session it has: a revoked instance is told of
// its revocation by the very feed entry that revokes it, so its session stays
// open long enough for that head to be announced and fetched. The Admitter
// already refuses it, so it cannot open a new session; a peer with no
// farewell (paused, removed) is cut at once.
func FollowPeers(ctx context.Context, n *Node, list func() []Peer, changed <-chan struct{}, farewell func(PeerID) time.Duration) error {
	prev := map[PeerID]Peer{}
	leaving := map[PeerID]time.Time{} // peer → when its session is cut
	clk := n.cfg.Clock
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := clk.Now()
		peers := list()
		cur := make(map[PeerID]Peer, len(peers))
		for _, p := range peers {
			cur[p.ID] = p
			delete(leaving, p.ID) // back in the list (e.g. a revocation undone by a restore)
		}
		for id := range prev {
			if _, ok := cur[id]; ok {
				continue
			}
			if _, ok := leaving[id]; ok {
				continue
			}
			var d time.Duration
			if farewell != nil {
				d = farewell(id)
			}
			leaving[id] = now.Add(d)
		}
		var cut []PeerID
		var next time.Time
		kept := peers
		for id, at := range leaving {
			if !now.Before(at) {
				cut = append(cut, id)
				delete(leaving, id)
				continue
			}
			kept = append(kept, prev[id])
			cur[id] = prev[id]
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if err := n.SetPeers(ctx, kept); err != nil {
			return ignoreStop(ctx, err)
		}
		for _, id := range cut {
			delete(cur, id)
			if err := n.Revoke(ctx, id); err != nil {
				n.log.Warn("disconnecting removed peer", "peer", id, "err", err)
			}
		}
		prev = cur
		var wake <-chan time.Time
		if !next.IsZero() {
			if timer == nil {
				timer = clk.NewTimer(next.Sub(now))
			} else {
				timer.Reset(next.Sub(now))
			}
			wake = timer.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-wake:
		}
	}
}

// ignoreStop turns the errors of a stopping Node into a clean return.
func ignoreStop(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, ErrStopped) {
		return nil
	}
	return err
}
