package federation

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

// FuzzVerify feeds arbitrary strings to Verify. It must never panic, every
// failure must be one of the documented sentinels, and a token it accepts
// must be exactly the one Sign makes for the returned claims (a token has
// one spelling).
func FuzzVerify(f *testing.F) {
	home := testKey("home")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home})
	good, err := Sign(home, goldenClaims())
	if err != nil {
		f.Fatal(err)
	}
	other, _ := Sign(testKey("other"), goldenClaims())
	f.Add(good)
	f.Add(other)
	f.Add(good[:len(good)-1])
	f.Add(strings.Replace(good, ".", "..", 1))
	f.Add(tokenPrefix + ".")
	f.Add(tokenPrefix + "Y3Jvdy1mZWQtdG9rZW4tdjEA__8.AAAA")
	f.Add("")
	sentinels := []error{ErrMalformed, ErrUnknownIssuer, ErrBadSignature, ErrSelfIssued, ErrWrongAudience, ErrLifetime, ErrExpired, ErrNotYetValid}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := Verify(token, "laptop", t0, keys.keyOf)
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v is none of the sentinels", err)
		}
		again, err := Sign(home, c)
		if err != nil {
			t.Fatalf("accepted claims %+v that Sign refuses: %v", c, err)
		}
		if again != token {
			t.Fatalf("accepted a second spelling:\n%s\nSign makes\n%s", token, again)
		}
		if c.Expiry.Sub(c.IssuedAt) > MaxLifetime || !c.Expiry.After(t0.Add(-MaxSkew)) {
			t.Fatalf("accepted claims outside the window: %+v", c)
		}
	})
}
