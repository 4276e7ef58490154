package sync

import (
	"context"
	"errors"
)

// FollowPeers keeps n's peer set equal to list() until ctx is done: it reads
// list once at start and again after every value on changed. A peer that
// leaves the list (revoked, removed) is disconnected at once. It is the
// daemon's bridge from the registry to replication.
func FollowPeers(ctx context.Context, n *Node, list func() []Peer, changed <-chan struct{}) error {
	prev := map[PeerID]bool{}
	for {
		peers := list()
		now := make(map[PeerID]bool, len(peers))
		for _, p := range peers {
			now[p.ID] = true
		}
		if err := n.SetPeers(ctx, peers); err != nil {
			return ignoreStop(ctx, err)
		}
		for id := range prev {
			if !now[id] {
				if err := n.Revoke(ctx, id); err != nil {
					n.log.Warn("disconnecting removed peer", "peer", id, "err", err)
				}
			}
		}
		prev = now
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
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
