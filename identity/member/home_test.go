package member

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var goldenHomeFields = HomeFields{CrowID: crowID, InstanceID: satID, PublicKey: satPub, Epoch: 1, Base: 57,
	IssuedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}

func goldenHome() HomeRecord { return must(IssueHome(rootPriv, goldenHomeFields)) }

// TestHomeGolden pins the home record's bytes (testdata/home.json; -update
// rewrites it, only for a new version with its own domain).
func TestHomeGolden(t *testing.T) {
	in := with(commonInputs(), "instance_id", satID, "instance_public_key", hx(satPub), "epoch", "1", "base", "57",
		"issued_at", "2026-12-01T12:00:00Z")
	want := []vector{makeVector(t, "home record: the golden satellite is home from epoch 1, numbers above 57 are its (crow-home-v1)", in, goldenHome())}
	got := append(must(json.MarshalIndent(want, "", "  ")), '\n')
	path := filepath.Join("testdata", "home.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	file := must(os.ReadFile(path))
	if string(file) != string(got) {
		t.Errorf("%s changed; got\n%s", path, got)
	}
	var stored []vector
	if err := json.Unmarshal(file, &stored); err != nil {
		t.Fatal(err)
	}
	r := must(ParseHomeRecord(stored[0].Text))
	if err := VerifyHome(r, crowID, rootPub); err != nil {
		t.Fatal(err)
	}
	if r2 := must(DecodeHomeRecord(must(hex.DecodeString(stored[0].Hex)))); r2.String() != stored[0].Text || r2.Epoch != 1 || r2.Base != 57 {
		t.Errorf("hex and text disagree: %+v", r2)
	}
}

// TestHomeLayout rebuilds the golden record byte by byte from the layout
// documented on HomeRecord.
func TestHomeLayout(t *testing.T) {
	r := goldenHome()
	body := "01" + "0015" + hx([]byte(crowID)) + "0024" + hx([]byte(satID)) + hx(satPub) +
		"0000000000000001" + "0000000000000039" + "000000006b0eb6c0"
	if got := hx(must(r.Encode())); got != body+hx(r.Signature[:]) {
		t.Errorf("encoding = %s\nlayout   = %s + signature", got, body)
	}
	msg := append([]byte("crow-home-v1\x00"), must(hex.DecodeString(body))...)
	if !edVerify(rootPub, msg, r.Signature[:]) {
		t.Error("the signature does not cover domain || 0x00 || body")
	}
	if !strings.HasPrefix(r.String(), "crowhome1.") {
		t.Error("text form prefix")
	}
}

// TestHomeRefusals: a record of another root, a changed field, epoch 0 and
// the other record kinds' text are refused.
func TestHomeRefusals(t *testing.T) {
	r := goldenHome()
	if err := VerifyHome(r, otherCrowID, otherRootPub); !errors.Is(err, ErrWrongCrow) {
		t.Errorf("other crow: %v", err)
	}
	forged := must(IssueHome(otherRootPriv, HomeFields{CrowID: otherCrowID, InstanceID: satID, PublicKey: satPub, Epoch: 9, IssuedAt: goldenIssued}))
	forged.CrowID = crowID
	if err := VerifyHome(forged, crowID, rootPub); !errors.Is(err, ErrBadSignature) {
		t.Errorf("forged: %v", err)
	}
	bumped := r
	bumped.Epoch = 2
	if err := VerifyHome(bumped, crowID, rootPub); !errors.Is(err, ErrBadSignature) {
		t.Errorf("changed epoch: %v", err)
	}
	f := goldenHomeFields
	f.Epoch = 0
	if _, err := IssueHome(rootPriv, f); !errors.Is(err, ErrMalformed) {
		t.Errorf("epoch 0: %v", err)
	}
	if _, err := ParseHomeRecord(goldenCert().String()); !errors.Is(err, ErrMalformed) {
		t.Errorf("a certificate parsed as a home record: %v", err)
	}
	b := must(r.Encode())
	if _, err := DecodeHomeRecord(append(b, 0)); !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing byte: %v", err)
	}
}
