package member

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"time"

	"github.com/crow-sync/crow/identity"
)

// seq returns n bytes start, start+1, ...
func seq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

// The golden world: the identity package's golden seed (0x00..0x1f), a home
// whose key the seed derives, and a satellite whose key is the Ed25519 seed
// 0x40..0x5f.
var (
	goldenSeed      = identity.Seed(seq(0, 32))
	rootPriv        = goldenSeed.RootKey()
	rootPub         = goldenSeed.RootPublicKey()
	crowID          = goldenSeed.CrowID()
	homeID          = "home-3f1c"
	homePriv        = goldenSeed.InstanceKey(homeID)
	homePub         = homePriv.Public().(ed25519.PublicKey)
	satSeed         = seq(0x40, 32)
	satPriv         = ed25519.NewKeyFromSeed(satSeed)
	satPub          = satPriv.Public().(ed25519.PublicKey)
	satID           = "8d3c2e4a-1f6b-4c8e-9a2d-5b7e0f1c3a9d"
	satName         = "portátil de Ana"
	goldenIssued    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	goldenRevoked   = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	goldenExpires   = time.Date(2026, 1, 2, 4, 4, 5, 0, time.UTC)
	goldenURL       = "https://home.example:7777"
	goldenSecret    = seq(0xa0, 32)
	goldenNonce     = seq(0xc0, 32)
	otherSeed       = identity.Seed(seq(0x80, 32))
	otherRootPriv   = otherSeed.RootKey()
	otherRootPub    = otherSeed.RootPublicKey()
	otherCrowID     = otherSeed.CrowID()
	goldenNow       = goldenIssued
	mallorySeed     = seq(0xe0, 32)
	malloryPriv     = ed25519.NewKeyFromSeed(mallorySeed)
	malloryPub      = malloryPriv.Public().(ed25519.PublicKey)
	goldenFields    = Fields{CrowID: crowID, InstanceID: satID, PublicKey: satPub, Role: RoleSatellite, Name: satName, IssuedAt: goldenIssued}
	goldenRevFields = RevocationFields{CrowID: crowID, InstanceID: satID, PublicKey: satPub, RevokedAt: goldenRevoked}
)

func reader(b []byte) io.Reader { return bytes.NewReader(b) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func goldenCert() Certificate { return must(Issue(rootPriv, goldenFields)) }

func goldenRevocation() Revocation { return must(Revoke(rootPriv, goldenRevFields)) }

func goldenInvite() Invite {
	return must(NewInvite(goldenURL, homePub, crowID, goldenExpires, reader(goldenSecret)))
}

func goldenRequest() JoinRequest {
	return must(NewJoinRequest(goldenInvite(), satID, satPriv, satName, reader(goldenNonce)))
}

func goldenAnswer() JoinAnswer {
	return must(NewJoinAnswer(homePriv, rootPub, goldenRequest(), goldenCert()))
}

func edVerify(pub ed25519.PublicKey, msg, sig []byte) bool { return ed25519.Verify(pub, msg, sig) }
