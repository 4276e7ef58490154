package registry_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

// The cost of the trust checks (issue 10). Certificates are verified when
// rows are indexed (Reload), so the hot paths — the connection gater
// (IsAdmittedKey), the apply loop (KeyStatus) and the federation token
// verifier (PeerKey) — are map lookups in the current snapshot.

// benchRegistry is home-1 of ourSeed with n certified satellite rows
// (sat-000 …), the last of which is revoked by a root-signed
// crow_revocations row. It returns the registry, its config and the public
// keys of the rows in order.
func benchRegistry(b *testing.B, n int) (*registry.Registry, registry.Config, []ed25519.PublicKey) {
	b.Helper()
	ctx := context.Background()
	cfg := registrytest.SeedConfig(ourSeed, "home-1", registry.RoleHome, "home")
	cfg.Logger = slog.New(slog.DiscardHandler)
	keys := make([]ed25519.PublicKey, n)
	for i := range n {
		id := fmt.Sprintf("sat-%03d", i)
		pub := ourSeed.InstancePublicKey(id)
		keys[i] = pub
		cfg.Table.(*registrytest.MemTable).Set(id, registrytest.CertifiedRow(ourSeed, id, registry.RoleSatellite))
	}
	last := fmt.Sprintf("sat-%03d", n-1)
	rv, err := member.Revoke(ourSeed.RootKey(), member.RevocationFields{CrowID: ourSeed.CrowID(), InstanceID: last, PublicKey: keys[n-1], RevokedAt: t0})
	if err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(registry.RevocationRow{InstanceID: last, PublicKey: hex.EncodeToString(keys[n-1]), RevokedAt: t0.Format("2006-01-02T15:04:05Z"), Revocation: rv.String()})
	cfg.Revocations.(*registrytest.MemTable).Set(hex.EncodeToString(keys[n-1]), data)
	reg, err := registry.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Reload(ctx); err != nil {
		b.Fatal(err)
	}
	if !reg.IsAdmittedKey(keys[0]) || reg.IsAdmittedKey(keys[n-1]) {
		b.Fatal("benchmark registry: the first key must be admitted and the last revoked")
	}
	return reg, cfg, keys
}

// BenchmarkIsAdmittedKey: the libp2p connection gater's check, once per
// connection, for an admitted, an unknown and a revoked key.
func BenchmarkIsAdmittedKey(b *testing.B) {
	for _, n := range []int{3, 100} {
		reg, _, keys := benchRegistry(b, n)
		cases := []struct {
			name string
			key  ed25519.PublicKey
			want bool
		}{
			{"admitted", keys[n/2], true},
			{"unknown", joinerKey(9).Public().(ed25519.PublicKey), false},
			{"revoked", keys[n-1], false},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("rows=%d/%s", n, c.name), func(b *testing.B) {
				for b.Loop() {
					if reg.IsAdmittedKey(c.key) != c.want {
						b.Fatal("wrong answer")
					}
				}
			})
		}
	}
}

// BenchmarkKeyStatus: the apply loop's check of a feed author, once per
// batch.
func BenchmarkKeyStatus(b *testing.B) {
	for _, n := range []int{3, 100} {
		reg, _, keys := benchRegistry(b, n)
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			for b.Loop() {
				if st, _ := reg.KeyStatus(keys[n/2]); st != registry.KeyCertified {
					b.Fatal(st)
				}
			}
		})
	}
}

// BenchmarkPeerKey: the federation token verifier's key lookup, once per
// bearer token.
func BenchmarkPeerKey(b *testing.B) {
	reg, _, _ := benchRegistry(b, 100)
	for b.Loop() {
		if _, err := reg.PeerKey("sat-050"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReloadVerify: a Reload of 100 certified rows and one revocation,
// which parses and verifies 101 signatures: what every registry change
// costs. The peer, in the same run: verifying the 100 certificates alone.
func BenchmarkReloadVerify(b *testing.B) {
	const n = 100
	ctx := context.Background()
	reg, cfg, _ := benchRegistry(b, n)
	b.Run(fmt.Sprintf("reload/rows=%d", n), func(b *testing.B) {
		for b.Loop() {
			if err := reg.Reload(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n/1000, "µs/row")
	})
	raws, _ := cfg.Table.List(ctx)
	certs := make([]member.Certificate, 0, len(raws))
	for _, raw := range raws {
		var row registry.Row
		if err := json.Unmarshal(raw, &row); err != nil {
			b.Fatal(err)
		}
		c, err := member.ParseCertificate(row.Certificate)
		if err != nil {
			b.Fatal(err)
		}
		certs = append(certs, c)
	}
	root := ourSeed.RootPublicKey()
	b.Run(fmt.Sprintf("verify-only/certs=%d", n), func(b *testing.B) {
		for b.Loop() {
			for _, c := range certs {
				if err := member.Verify(c, ourSeed.CrowID(), root); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n/1000, "µs/row")
	})
}
