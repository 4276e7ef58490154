package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
)

// enrollByInvite enrolls a new instance named name with home by the invite
// text (`crow init --join`, `crow restore --join`): it generates the
// instance's key and id, proves to home (pinned by the invite's key) that it
// holds the invite's secret while binding the new key, and checks home's
// signed answer. It writes nothing; the invite is spent once it returns.
func enrollByInvite(ctx context.Context, invite, name string) (home.Joined, error) {
	inv, err := member.ParseInvite(strings.TrimSpace(invite), time.Now())
	if errors.Is(err, member.ErrExpired) {
		return home.Joined{}, fmt.Errorf("the invite has expired; make a new one on home (crow instance invite --name %s): %w", name, err)
	} else if err != nil {
		return home.Joined{}, fmt.Errorf("the invite is not valid (copy the whole crowinv1. line from 'crow instance invite'): %w", err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return home.Joined{}, err
	}
	id, err := home.NewInstanceID()
	if err != nil {
		return home.Joined{}, err
	}
	req, err := member.NewJoinRequest(inv, id, key, name, rand.Reader)
	if err != nil {
		return home.Joined{}, err
	}
	joined, err := client.Do(ctx, client.New(inv.GatewayURL, ""), app.InstancesJoin, app.JoinIn{Request: req})
	if err != nil {
		return home.Joined{}, fmt.Errorf("home at %s refused the join: %w", inv.GatewayURL, err)
	}
	if err := member.VerifyJoinAnswer(inv, req, joined.Answer); err != nil {
		return home.Joined{}, fmt.Errorf("the answer from %s is not home's (it is not signed by the key the invite pins): %w", inv.GatewayURL, err)
	}
	homeID := ""
	for _, in := range joined.Instances {
		if in.Role == registry.RoleHome && !in.Revoked() {
			homeID = in.ID
		}
	}
	return home.Joined{
		Name: name, InstanceID: id, Key: key, Certificate: joined.Answer.Certificate,
		RootPublicKey: joined.Answer.RootPublicKey, HomeURL: inv.GatewayURL, HomeID: homeID,
	}, nil
}
