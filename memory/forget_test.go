package memory

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

// TestForget: forgetting by id or by number writes the forget tombstone (id and
// forgotten_at only), answers every version number, is idempotent, works on a deleted
// memory; a forgotten memory reads as forgotten by id, unknown ones are ErrNotFound.
func TestForget(t *testing.T) {
	ctx := context.Background()
	s, env := newService(t)
	startNumberer(t, env, nil)
	m := add(t, s, "the first secret")
	waitNumbered(t, env.DB, 1)
	edit(t, s, m.ID, PatchInput{Content: ptr("the second secret")})
	other := add(t, s, "kept")
	var nums []uint64
	for deadline := time.Now().Add(10 * time.Second); len(nums) != 2; time.Sleep(5 * time.Millisecond) {
		var err error
		if nums, err = VersionNumbers(env.DB, m.ID); err != nil || time.Now().After(deadline) {
			t.Fatalf("numbers of the edited memory: %v %v", nums, err)
		}
	}
	f, err := s.Forget(ctx, "#"+strings.TrimLeft(VersionRowID(nums[0]), "0"))
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != m.ID || !slices.Equal(f.Numbers, nums) || f.ForgottenAt == "" {
		t.Fatalf("forgot %+v, want %s %v", f, m.ID, nums)
	}
	r, err := env.DB.Get(store.TableMemories, m.ID)
	if err != nil || !r.Forgotten() || strings.Contains(string(r.Data), "secret") || string(r.Data) != string(store.ForgetData(m.ID, mustParse(t, f.ForgottenAt))) {
		t.Fatalf("row after forget %s %v", r.Data, err)
	}
	again, err := s.Forget(ctx, m.ID)
	if err != nil || again.ForgottenAt != f.ForgottenAt || !slices.Equal(again.Numbers, nums) {
		t.Fatalf("forget again: %+v %v, want %+v", again, err, f)
	}
	_, err = s.Get(ctx, m.ID)
	var fe *ForgottenError
	if !errors.As(err, &fe) || !errors.Is(err, ErrNotFound) || fe.At != f.ForgottenAt {
		t.Fatalf("get of a forgotten memory: %v", err)
	}
	if _, err := s.Update(ctx, m.ID, PatchInput{Content: ptr("x")}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a forgotten memory: %v", err)
	}
	for _, id := range []string{"01JUNKNOWN", "999999", ""} {
		if _, err := s.Forget(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("forget %q: %v", id, err)
		}
	}
	if err := s.Delete(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if f, err := s.Forget(ctx, other.ID); err != nil || f.ID != other.ID {
		t.Fatalf("forget of a deleted memory: %+v %v", f, err)
	}
}

func TestForgetVersion(t *testing.T) {
	in := `{"number":3,"memory_id":"m","project":"p","content":"secret","content_hash":"ab","category":"c","importance":5,"tags":["t"],"source":"api","origin":"o","event_hash":"0x1","supersedes":2,"future":1}`
	out, changed, err := ForgetVersion([]byte(in), "2026-01-01T00:00:00Z")
	if err != nil || !changed {
		t.Fatal(err, changed)
	}
	want := `{"content_hash":"ab","event_hash":"0x1","forgotten_at":"2026-01-01T00:00:00Z","future":1,"memory_id":"m","number":3,"origin":"o","project":"p","supersedes":2}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if _, changed, _ := ForgetVersion(out, "2027-01-01T00:00:00Z"); changed {
		t.Fatal("erasing again changed it")
	}
}

func mustParse(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
