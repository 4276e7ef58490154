package app

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
)

// Health is the public /health document. Field names are part of the
// registration contract (SPEC §7, §8).
type Health struct {
	Status     string   `json:"status"`
	InstanceID string   `json:"instance_id"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	CrowID     string   `json:"crow_id"`
	PublicKey  string   `json:"public_key"`
	Version    string   `json:"version"`
	SyncAddrs  []string `json:"sync_addrs"`
	GatewayURL string   `json:"gateway_url,omitempty"`
	CreatedAt  string   `json:"created_at,omitempty"`
	// Certificate is this instance's membership certificate (text form):
	// the root key's signature over its id, key, role and name.
	Certificate string `json:"certificate,omitempty"`
	Challenge   string `json:"challenge,omitempty"`
	Signature   string `json:"signature,omitempty"`
	// Time is this instance's clock when it answered (RFC 3339 with
	// nanoseconds): `crow doctor` on a peer compares it with its own.
	Time string `json:"time,omitempty"`
}

// MaxChallengeBytes bounds the challenge a caller may ask this instance to sign.
const MaxChallengeBytes = 64

// HealthIn is the input of instance.health.
type HealthIn struct {
	Challenge string `json:"challenge,omitempty" in:"query" desc:"16 to 64 bytes of hex; the answer then carries an Ed25519 signature over (crow-health-v1, challenge, instance id)"`
}

// Validate checks the challenge's length and encoding.
func (in HealthIn) Validate() error {
	if in.Challenge == "" {
		return nil
	}
	raw, err := hex.DecodeString(in.Challenge)
	if err != nil || len(raw) < 16 || len(raw) > MaxChallengeBytes {
		return Invalidf("challenge must be 16 to %d bytes of hex", MaxChallengeBytes)
	}
	return nil
}

// InstanceList is the answer of instances.list.
type InstanceList struct {
	Self      string              `json:"self"`
	Instances []registry.Instance `json:"instances"`
}

// RegisterIn is the input of instances.register.
type RegisterIn struct {
	GatewayURL string `json:"gateway_url" required:"true" desc:"The peer's gateway URL, e.g. http://100.64.0.2:3001 (its crow serve --listen address)."`
}

// Registered is the answer of instances.register: the instance, plus a
// warning when the peer could not register this instance back.
type Registered struct {
	registry.Instance
	Warning string `json:"warning,omitempty"`
}

// InstanceID names one instance.
type InstanceID struct {
	ID string `json:"id" in:"path" required:"true" desc:"Id of the instance (crow_list_instances lists them)."`
}

// AnnounceIn is the body of a peer's announcement.
type AnnounceIn struct {
	registry.Announcement
}

// InviteIn is the input of instances.invite.
type InviteIn struct {
	Name string `json:"name" required:"true" minlen:"1" maxlen:"200" desc:"Name of the machine to enroll (it goes in its certificate; crow init --name must match)."`
	TTL  string `json:"ttl,omitempty" desc:"How long the invite stays valid, a Go duration between 1m and 168h (7 days); default 1h."`
}

// Validate checks the lifetime.
func (in InviteIn) Validate() error {
	_, err := in.lifetime()
	return err
}

func (in InviteIn) lifetime() (time.Duration, error) {
	if in.TTL == "" {
		return registry.DefaultInviteTTL, nil
	}
	d, err := time.ParseDuration(in.TTL)
	if err != nil || d < registry.MinInviteTTL || d > registry.MaxInviteTTL {
		return 0, Invalidf("ttl %q must be a duration between %v and %v, e.g. 15m, 1h, 24h or 168h", in.TTL, registry.MinInviteTTL, registry.MaxInviteTTL)
	}
	return d, nil
}

// Invitation is the answer of instances.invite.
type Invitation struct {
	// Invite is the one-line invite (crowinv1.…): home's gateway URL, home's
	// public key, the crow id and a one-time secret.
	Invite    string `json:"invite"`
	InviteID  string `json:"invite_id"`
	Name      string `json:"name"`
	ExpiresAt string `json:"expires_at"`
}

// JoinIn is the body of a join by invitation.
type JoinIn struct {
	Request member.JoinRequest `json:"request" required:"true" desc:"The join request (crowjoin1.…) made by crow init --join."`
}

// Joined is the answer to a join: home's signed answer (the certificate) and
// the registry as home knows it.
type Joined struct {
	Answer    member.JoinAnswer   `json:"answer"`
	Instances []registry.Instance `json:"instances"`
}

// APIKey is the answer of apikey.rotate.
type APIKey struct {
	APIKey string `json:"api_key"`
}

var (
	InstanceHealth = define(&Def[HealthIn, Health]{
		Spec: Spec{Name: "instance.health", Method: "GET", Path: "/health", Access: Public, Tag: "instance", ReadOnly: true,
			Summary: "This instance's identity; with ?challenge=HEX a signature proving it holds the instance key"},
		Impl: (*App).health,
	})
	InstancesList = define(&Def[NoInput, InstanceList]{
		Spec: Spec{Name: "instances.list", Method: "GET", Path: "/v1/instances", Tool: "crow_list_instances",
			Title: "List instances", Tag: "instances", Summary: "The registered instances (machines) of this identity",
			Description: "List the user's crow instances (machines): id, name, role (home or satellite), gateway_url, " +
				"status (online, syncing, offline, unknown, revoked, forked), last_seen. Returns {self: this instance's id, instances}.",
			Access: Peer, ReadOnly: true},
		Impl: (*App).instancesList,
	})
	InstancesRegister = define(&Def[RegisterIn, Registered]{
		Spec: Spec{Name: "instances.register", Method: "POST", Path: "/v1/instances", Status: 201, Tool: "crow_register_instance",
			Title: "Register an instance", Tag: "instances", Summary: "Register a peer by its gateway URL (it registers this instance back)",
			Description: "Register another instance of the same user by its gateway URL: its /health is checked, it must " +
				"present a membership certificate of this crow's root key and prove, by signing a challenge, that it holds the " +
				"certified key. It is then asked to register this instance back. Returns the instance, plus a warning if the " +
				"peer could not register this one back. New machines join by invite (crow_invite_instance) instead.",
			Idempotent: true, OpenWorld: true, NoRoute: true},
		Impl: (*App).instancesRegister,
	})
	InstancesRevoke = define(&Def[InstanceID, registry.Instance]{
		Spec: Spec{Name: "instances.revoke", Method: "DELETE", Path: "/v1/instances/{id}", Tool: "crow_revoke_instance",
			Title: "Revoke an instance", Tag: "instances", Summary: "Revoke an instance",
			Description: "Revoke an instance (a lost or stolen machine), on home (it signs the revocation with the root key): " +
				"every instance then refuses its key for replication, federation and registration, under any id, and applies " +
				"nothing more of its feed. This instance cannot revoke itself. Returns the revoked instance.",
			Destructive: true, Idempotent: true, NoRoute: true},
		Impl: (*App).instancesRevoke,
	})
	InstancesInvite = define(&Def[InviteIn, Invitation]{
		Spec: Spec{Name: "instances.invite", Method: "POST", Path: "/v1/instances/invite", Status: 201, Tool: "crow_invite_instance",
			Title: "Invite a machine", Tag: "instances", Summary: "Make a one-time invite that enrolls a new machine (home only)",
			Description: "Make a one-time invite for a new machine (home only: it holds the root key). Returns {invite, invite_id, " +
				"name, expires_at}; on the new machine run: crow init --name NAME --join INVITE, then crow serve. The invite is " +
				"secret and single use: anyone holding it can enroll one machine until it is used or expires.",
			NoRoute: true},
		Impl: (*App).instancesInvite,
	})
	InstancesJoin = define(&Def[JoinIn, Joined]{
		Spec: Spec{Name: "instances.join", Method: "POST", Path: "/v1/instances/join", Access: Public, Tag: "instances",
			Summary: "A new machine joins by invite: it proves it holds the invite's secret and receives its certificate"},
		Impl: (*App).instancesJoin,
	})
	InstancesAnnounce = define(&Def[AnnounceIn, registry.Instance]{
		Spec: Spec{Name: "instances.announce", Method: "POST", Path: registry.AnnouncePath, Status: 201, Access: Public, Tag: "instances",
			Summary: "A peer of this identity asks to be registered back (signed announcement)"},
		Impl: (*App).instancesAnnounce,
	})
	APIKeyRotate = define(&Def[NoInput, APIKey]{
		Spec: Spec{Name: "apikey.rotate", Method: "POST", Path: "/v1/apikey/rotate", Tag: "operations",
			Summary: "Replace the owner API key; the old one stops working at once", NoStore: true},
		Impl: (*App).apiKeyRotate,
	})
)

func (a *App) health(_ context.Context, in HealthIn) (Health, error) {
	self := a.d.Self
	h := Health{Status: "ok", InstanceID: self.InstanceID, Name: self.Name, Role: self.Role,
		CrowID: self.CrowID, PublicKey: self.PublicKey, Version: self.Version, SyncAddrs: []string{},
		GatewayURL: self.GatewayURL, CreatedAt: self.CreatedAt, Certificate: self.Certificate,
		Time: clock.Or(a.d.Clock).Now().UTC().Format(time.RFC3339Nano)}
	if self.SyncAddrs != nil {
		if addrs := self.SyncAddrs(); addrs != nil {
			h.SyncAddrs = addrs
		}
	}
	if in.Challenge != "" {
		if a.d.Sign == nil {
			return h, unavailable("instance key")
		}
		raw, _ := hex.DecodeString(in.Challenge) // checked by Validate
		h.Challenge = in.Challenge
		h.Signature = hex.EncodeToString(a.d.Sign(raw))
	}
	return h, nil
}

func (a *App) registry() (*registry.Registry, error) {
	if a.d.Instances == nil {
		return nil, unavailable("instance registry")
	}
	return a.d.Instances, nil
}

func (a *App) instancesList(context.Context, NoInput) (InstanceList, error) {
	reg, err := a.registry()
	if err != nil {
		return InstanceList{}, err
	}
	list := reg.List()
	if list == nil {
		list = []registry.Instance{}
	}
	return InstanceList{Self: a.d.Self.InstanceID, Instances: list}, nil
}

// instancesRegister registers the instance at the URL and asks it to
// register this one back; a failed join-back becomes the answer's warning.
func (a *App) instancesRegister(ctx context.Context, in RegisterIn) (Registered, error) {
	reg, err := a.registry()
	if err != nil {
		return Registered{}, err
	}
	inst, announceErr, err := reg.Join(ctx, in.GatewayURL, a.d.Self.GatewayURL)
	if err != nil {
		return Registered{}, registryError(err)
	}
	out := Registered{Instance: inst}
	if announceErr != nil {
		a.log.Warn("peer could not register us back", "peer", inst.ID, "err", announceErr)
		out.Warning = fmt.Sprintf("registered here, but %s could not register this instance back (%v); run 'crow instance add %s' there",
			inst.Name, announceErr, a.d.Self.GatewayURL)
	} else if a.d.KickSummaries != nil {
		// The peer knows us now, so it takes our tokens: fetch its summary
		// (the fetch at registration ran before the join-back and was refused).
		a.d.KickSummaries()
	}
	return out, nil
}

func (a *App) instancesRevoke(ctx context.Context, in InstanceID) (registry.Instance, error) {
	reg, err := a.registry()
	if err != nil {
		return registry.Instance{}, err
	}
	inst, err := reg.Revoke(ctx, in.ID)
	return inst, registryError(err)
}

func (a *App) instancesInvite(ctx context.Context, in InviteIn) (Invitation, error) {
	reg, err := a.registry()
	if err != nil {
		return Invitation{}, err
	}
	ttl, err := in.lifetime()
	if err != nil {
		return Invitation{}, err
	}
	made, err := reg.CreateInvite(ctx, in.Name, ttl, a.d.Self.GatewayURL)
	if err != nil {
		return Invitation{}, registryError(err)
	}
	return Invitation{Invite: made.Invite.String(), InviteID: made.Record.ID, Name: made.Record.Name,
		ExpiresAt: made.Record.ExpiresAt.UTC().Format(time.RFC3339)}, nil
}

func (a *App) instancesJoin(ctx context.Context, in JoinIn) (Joined, error) {
	reg, err := a.registry()
	if err != nil {
		return Joined{}, err
	}
	ans, err := reg.Enroll(ctx, in.Request)
	if err != nil {
		return Joined{}, registryError(err)
	}
	return Joined{Answer: ans, Instances: reg.List()}, nil
}

func (a *App) instancesAnnounce(ctx context.Context, in AnnounceIn) (registry.Instance, error) {
	reg, err := a.registry()
	if err != nil {
		return registry.Instance{}, err
	}
	inst, err := reg.AcceptAnnouncement(ctx, in.Announcement)
	return inst, registryError(err)
}

// registryError adds what to do to the registry's errors (their kinds come
// from classify).
func registryError(err error) error {
	if err == nil {
		return nil
	}
	k, ok := classify(err)
	if !ok {
		return err
	}
	msg := err.Error()
	switch {
	case k == KindNotFound:
		msg += "; crow_list_instances (GET /v1/instances) lists the registered instances and their ids"
	case errors.Is(err, registry.ErrNotHome):
		msg += "; the master seed, and with it the root key, lives only on home"
	case k == KindUpstream:
		msg += "; check that crow serve runs there and that the URL is reachable from this machine"
	}
	return Wrap(k, err, msg)
}

func (a *App) apiKeyRotate(ctx context.Context, _ NoInput) (APIKey, error) {
	if a.d.RotateAPIKey == nil {
		return APIKey{}, Errorf(KindUnavailable, "this gateway cannot rotate the API key (no data directory)")
	}
	a.rotateMu.Lock()
	key, err := a.d.RotateAPIKey()
	a.rotateMu.Unlock()
	if err != nil {
		return APIKey{}, err
	}
	a.log.Info("owner API key rotated")
	return APIKey{APIKey: key}, nil
}

// PeerMayCall is the peer allow-list of this instance (SPEC §9: deny by
// default): peers may call the operations whose access is Peer (search and
// read), and on home those marked HomePeer (satellites forward
// consolidations there).
func (a *App) PeerMayCall(sp *Spec) bool {
	return peerMayCall(sp, a.d.Self.Role == registry.RoleHome)
}

func peerMayCall(sp *Spec, onHome bool) bool {
	return sp.Access == Peer || (sp.HomePeer && onHome)
}

// PeerTools lists the tools peers may call on an instance (home or not).
func PeerTools(onHome bool) []string {
	var out []string
	for _, op := range table {
		if sp := op.Info(); sp.Tool != "" && peerMayCall(sp, onHome) {
			out = append(out, sp.Tool)
		}
	}
	return out
}

// RouteTarget checks that a call may be routed to instance id: it is
// registered and not revoked.
func (a *App) RouteTarget(id string) error {
	if a.d.Instances == nil {
		return nil
	}
	in, err := a.d.Instances.Get(id)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return Errorf(KindNotFound, "no instance %q is registered; crow_list_instances lists the instances (this one is %q)", id, a.d.Self.InstanceID)
	case err != nil:
		return err
	case in.Revoked():
		return Errorf(KindForbidden, "instance %q (%s) is revoked; calls are not routed to it", id, in.Name)
	}
	return nil
}
