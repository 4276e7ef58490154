package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/federation"
)

// Clock skew thresholds against federation.MaxSkew, the difference a
// token tolerates: beyond it every federated call between the two is
// refused.
const (
	// WarnSkew: clocks this far apart drift towards the limit.
	WarnSkew = 5 * time.Second
	// ProblemSkew: this close to MaxSkew (two thirds of it) a little more
	// drift breaks federation.
	ProblemSkew = federation.MaxSkew * 2 / 3
)

// checkCertificate: this instance's own membership is not revoked.
func checkCertificate(env Env) []Finding {
	if env.Self.Revoked {
		return []Finding{{Check: CheckCertificate, Status: Problem,
			Message: fmt.Sprintf("this instance was revoked (%s): peers refuse its sync and its federated calls", env.Self.RevokedAt),
			Fix:     "enroll this machine again under a new id: crow instance invite --name NAME on home, then crow init --name NAME --join INVITE in a new CROW_HOME"}}
	}
	if env.Self.InstanceID == "" {
		return nil
	}
	return []Finding{{Check: CheckCertificate, Status: OK, Message: "this instance's membership certificate is valid and not revoked"}}
}

// checkPeer: peer p answers a challenged /health proving it is the
// certified instance (peer), accepts this instance's federation token and
// has its token accepted here (tokens), and its clock is close to ours
// (clock).
func checkPeer(ctx context.Context, env Env, p Peer) []Finding {
	subj := p.Name
	if p.Revoked {
		return []Finding{{Check: CheckPeer, Subject: subj, Status: OK,
			Message: fmt.Sprintf("%s (%s) is revoked (%s): no longer a peer", p.Name, p.ID, p.RevokedAt)}}
	}
	if env.Probe == nil {
		return nil
	}
	h, err := env.Probe.Health(ctx, p.ID)
	switch {
	case errors.Is(err, ErrUnreachable):
		return []Finding{{Check: CheckPeer, Subject: subj, Status: Problem,
			Message: fmt.Sprintf("%s is unreachable at %s: %v", p.Name, p.GatewayURL, err),
			Fix: fmt.Sprintf("start crow on %s (crow serve), check its firewall and gateway_url; if the machine is gone for good: crow instance revoke %s",
				p.Name, p.ID)}}
	case err != nil:
		return []Finding{{Check: CheckPeer, Subject: subj, Status: Problem,
			Message: fmt.Sprintf("%s at %s does not prove it is the certified instance: %v", p.Name, p.GatewayURL, err),
			Fix: fmt.Sprintf("check that %s serves %s's own $CROW_HOME; if its key or certificate was revoked or lost, enroll it again (crow instance invite --name %s)",
				p.GatewayURL, p.Name, p.Name)}}
	}
	out := []Finding{{Check: CheckPeer, Subject: subj, Status: OK,
		Message: fmt.Sprintf("%s answers at %s with a valid certificate (%s round trip)", p.Name, p.GatewayURL, h.Received.Sub(h.Sent).Round(time.Millisecond))}}
	if !h.PeerTime.IsZero() {
		out = append(out, skewFinding(p, h))
	}
	cb, err := env.Probe.Callback(ctx, p.ID)
	switch {
	case errors.Is(err, ErrRefused):
		out = append(out, Finding{Check: CheckTokens, Subject: subj, Status: Problem,
			Message: fmt.Sprintf("%s refuses this instance's federation token: %v", p.Name, err),
			Fix: fmt.Sprintf("check the clocks (timedatectl) and that %s knows this instance (crow instance list on it; crow instance add %s there)",
				p.Name, env.Net.Advertised)})
	case err != nil:
		out = append(out, Finding{Check: CheckTokens, Subject: subj, Status: Problem,
			Message: fmt.Sprintf("a federated call to %s failed: %v", p.Name, err),
			Fix:     fmt.Sprintf("upgrade crow on %s if it is older (it must serve %s), then run crow doctor there", p.Name, federation.CheckTool)})
	case !cb.CallbackOK:
		out = append(out, Finding{Check: CheckTokens, Subject: subj, Status: Problem,
			Message: fmt.Sprintf("%s accepts this instance's token, but its call back here failed: %s", p.Name, cb.CallbackError),
			Fix: fmt.Sprintf("check that %s can reach this gateway (%s; gateway_url, --listen), that both clocks are right, and run crow doctor on %s",
				p.Name, env.Net.Advertised, p.Name)})
	default:
		out = append(out, Finding{Check: CheckTokens, Subject: subj, Status: OK,
			Message: fmt.Sprintf("federation tokens accepted both ways with %s", p.Name)})
	}
	return out
}

// skewFinding compares the peer's clock in its /health answer with the
// midpoint of our request.
func skewFinding(p Peer, h Health) Finding {
	rtt := h.Received.Sub(h.Sent)
	skew := h.PeerTime.Sub(h.Sent.Add(rtt / 2))
	abs := skew.Abs()
	dir := "ahead of"
	if skew < 0 {
		dir = "behind"
	}
	msg := fmt.Sprintf("%s's clock is %s %s this one's (federation tokens tolerate %s)", p.Name, abs.Round(100*time.Millisecond), dir, federation.MaxSkew)
	if abs < 100*time.Millisecond {
		msg = fmt.Sprintf("%s's clock is in step with this one's (within 0.1s; federation tokens tolerate %s)", p.Name, federation.MaxSkew)
	}
	fix := fmt.Sprintf("synchronise both clocks with NTP (timedatectl set-ntp true; timedatectl status on this machine and on %s)", p.Name)
	switch {
	case abs >= ProblemSkew:
		return Finding{Check: CheckClock, Subject: p.Name, Status: Problem, Message: msg + ": federated calls fail beyond it", Fix: fix}
	case abs >= WarnSkew:
		return Finding{Check: CheckClock, Subject: p.Name, Status: Warn, Message: msg, Fix: fix}
	}
	return Finding{Check: CheckClock, Subject: p.Name, Status: OK, Message: msg}
}
