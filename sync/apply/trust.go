package apply

import "github.com/crow-sync/crow/feed"

// Trust is what the registry knows of a feed's key (Options.FeedTrust).
type Trust int

const (
	// TrustUnknown: no valid membership certificate is known for the key
	// (yet). The feed is not applied and its checkpoint stays; it is
	// retried at the next pass (Notify, or the rescan).
	TrustUnknown Trust = iota
	// TrustCertified: the key holds a valid, unrevoked certificate for one
	// instance id; the feed's entries naming that id are applied.
	TrustCertified
	// TrustRevoked: the key is revoked; nothing more of the feed is applied.
	TrustRevoked
)

func (t Trust) String() string {
	switch t {
	case TrustUnknown:
		return "unknown"
	case TrustCertified:
		return "certified"
	case TrustRevoked:
		return "revoked"
	}
	return "invalid"
}

// parkReason is the crow_apply_feeds_parked label of a trust that stops a
// feed ("" for TrustCertified).
func (t Trust) parkReason() string {
	switch t {
	case TrustCertified:
		return ""
	case TrustRevoked:
		return "revoked"
	}
	return "uncertified"
}

// feedTrust is the last trust seen for a feed key.
type feedTrust struct {
	trust    Trust
	instance string // the certified instance id (TrustCertified)
}

// trustLocked returns the trust of feed key and records it: a change is
// logged once and moves the parked-feeds gauge and stats. Without FeedTrust
// every feed is certified for "" (no author check); with it, a certificate
// always names an instance (TrustCertified with "" is taken as TrustUnknown)
// and an out-of-range value is TrustUnknown.
func (a *Applier) trustLocked(key feed.PublicKey) feedTrust {
	if a.feedTrust == nil {
		return feedTrust{trust: TrustCertified}
	}
	t, id := a.feedTrust(key)
	switch {
	case t == TrustRevoked:
		id = ""
	case t != TrustCertified || id == "": // no instance id: not a certificate
		t, id = TrustUnknown, ""
	}
	now := feedTrust{trust: t, instance: id}
	old, seen := a.trust[key]
	if seen && old == now {
		return now
	}
	a.trust[key] = now
	if seen {
		a.parkedFeedLocked(old.trust, -1)
	}
	a.parkedFeedLocked(now.trust, +1)
	switch {
	case t == TrustRevoked:
		a.log.Warn("feed key revoked: nothing more of it is applied", "feed", key)
	case t != TrustCertified:
		a.log.Info("feed key has no valid certificate: not applied until one arrives", "feed", key)
	case seen:
		a.log.Info("feed key certified: applying", "feed", key, "instance", id, "was", old.trust)
	}
	return now
}

// parkedFeedLocked moves the parked-feeds gauge and stats for t by d.
func (a *Applier) parkedFeedLocked(t Trust, d int64) {
	switch r := t.parkReason(); r {
	case "":
	case "revoked":
		a.m.FeedsParked.WithLabelValues(r).Add(float64(d))
		a.st.revokedFeeds.Add(d)
	default:
		a.m.FeedsParked.WithLabelValues(r).Add(float64(d))
		a.st.uncertifiedFeeds.Add(d)
	}
}

// forgetTrustLocked drops the recorded trust of feeds no longer held (not in
// held), so the gauge counts only feeds that are there.
func (a *Applier) forgetTrustLocked(held map[feed.PublicKey]bool) {
	for k, t := range a.trust {
		if !held[k] {
			a.parkedFeedLocked(t.trust, -1)
			delete(a.trust, k)
		}
	}
}
