package federation_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

// BenchmarkVerifyToken: one federation bearer token checked as the gateway
// does (daemon/gateway.go: federation.Verifier over Registry.PeerKey): parse,
// the issuer's certified key from a real registry of 100 certified rows,
// Ed25519 verify, audience and lifetime. The peer, in the same run: the bare
// ed25519.Verify of the same payload and signature. The gateway's Verifier
// also records the token in its replay cache, so it accepts a token once:
// "gateway" runs Verify, which is the whole check but that map insert.
func BenchmarkVerifyToken(b *testing.B) {
	var seed identity.Seed
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	cfg := registrytest.SeedConfig(seed, "home-1", registry.RoleHome, "home")
	cfg.Logger = slog.New(slog.DiscardHandler)
	for i := range 100 {
		id := fmt.Sprintf("sat-%03d", i)
		cfg.Table.(*registrytest.MemTable).Set(id, registrytest.CertifiedRow(seed, id, registry.RoleSatellite))
	}
	reg, err := registry.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Reload(ctx); err != nil {
		b.Fatal(err)
	}
	clk := clock.NewFake(t0)
	tok, err := federation.NewTokenSource("sat-050", seed.InstanceKey("sat-050"), clk).Token("home-1")
	if err != nil {
		b.Fatal(err)
	}
	verify := func(tok string) (string, error) {
		c, err := federation.Verify(tok, "home-1", clk.Now(), reg.PeerKey)
		return c.Issuer, err
	}

	b.Run("gateway", func(b *testing.B) {
		for b.Loop() {
			if issuer, err := verify(tok); err != nil || issuer != "sat-050" {
				b.Fatal(issuer, err)
			}
		}
	})

	payloadText, sigText, _ := strings.Cut(strings.TrimPrefix(tok, federation.TokenPrefix), ".")
	payload, err := base64.RawURLEncoding.DecodeString(payloadText)
	if err != nil {
		b.Fatal(err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(sigText)
	if err != nil {
		b.Fatal(err)
	}
	pub := seed.InstancePublicKey("sat-050")
	b.Run("ed25519-only", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub, payload, sig) {
				b.Fatal("bad signature")
			}
		}
	})
}
