package cluster_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/daemon/cluster"
)

// filesHolding returns the files under dir that contain s.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted under us (badger, bleve)
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type numbered struct {
	ID          string  `json:"id"`
	Number      *uint64 `json:"number"`
	Content     string  `json:"content"`
	EventHash   *string `json:"event_hash"`
	ForgottenAt string  `json:"forgotten_at"`
}

// TestForgetErasesEveryCopy: home A, satellites B and C. B writes a memory holding a
// unique string and edits it once (two numbered versions, both holding the string),
// everyone gets it. C is partitioned off; B forgets the memory. Within a bounded time no
// file of A's or B's $CROW_HOME holds the string; after the heal none of C's does either.
// Versions read by number keep number, event hash and forgotten_at, without content; the
// memory by id is a 404 saying when it was forgotten. A node enrolled afterwards syncs
// every feed (cleared entries are verified as leaves) and never holds the string.
func TestForgetErasesEveryCopy(t *testing.T) {
	c := cluster.New(t, 3, cluster.Options{Timeout: 60 * time.Second})
	a, b, cc := c.Node("A"), c.Node("B"), c.Node("C")
	raw := make([]byte, 8)
	rand.Read(raw)
	secret := "zqxsecret" + hex.EncodeToString(raw)

	var m memory
	b.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "first " + secret, "project": "crow"}, &m)
	c.Eventually("home to number the first numbered", func() bool {
		var v numbered
		st, _ := a.Do("GET", "/v1/memory/"+m.ID, nil, &v)
		return st == 200 && v.Number != nil
	})
	b.MustDo(200, "PATCH", "/v1/memory/"+m.ID, map[string]any{"content": "second " + secret}, nil)
	c.Eventually("both versions numbered and everywhere", func() bool {
		for _, n := range c.Nodes {
			for _, num := range []string{"1", "2"} {
				var v numbered
				if st, _ := n.Do("GET", "/v1/memory/"+num, nil, &v); st != 200 || !strings.Contains(v.Content, secret) {
					return false
				}
			}
		}
		return true
	})
	for _, n := range c.Nodes {
		if len(filesHolding(t, n.Dir(), secret)) == 0 {
			t.Fatalf("%s: the string is in no file before the forget: the scan proves nothing", n.Name)
		}
	}

	c.Partition([]string{"A", "B"}, []string{"C"})
	var f struct {
		ID          string   `json:"id"`
		Numbers     []uint64 `json:"numbers"`
		ForgottenAt string   `json:"forgotten_at"`
	}
	start := time.Now()
	b.MustDo(200, "POST", "/v1/memory/"+m.ID+"/forget", nil, &f)
	if f.ID != m.ID || !slices.Equal(f.Numbers, []uint64{1, 2}) || f.ForgottenAt == "" {
		t.Fatalf("forget answered %+v", f)
	}
	var again struct {
		ForgottenAt string `json:"forgotten_at"`
	}
	c.Eventually("A to apply the forget", func() bool {
		st, _ := a.Do("GET", "/v1/memory/"+m.ID, nil, nil)
		return st == 404
	})
	a.MustDo(200, "POST", "/v1/memory/1/forget", nil, &again) // by number, on another node: the same answer
	if again.ForgottenAt != f.ForgottenAt {
		t.Fatalf("forget again answered %+v, want forgotten_at %s", again, f.ForgottenAt)
	}
	clean := func(nodes ...*cluster.Node) func() bool {
		return func() bool {
			for _, n := range nodes {
				if len(filesHolding(t, n.Dir(), secret)) != 0 {
					return false
				}
			}
			return true
		}
	}
	c.Eventually("no copy on A and B", clean(a, b))
	t.Logf("A and B hold no copy %v after the forget", time.Since(start).Round(time.Millisecond))
	if len(filesHolding(t, cc.Dir(), secret)) == 0 {
		t.Fatal("C, partitioned, lost the string: it cannot have heard of the forget")
	}

	for _, n := range []*cluster.Node{a, b} {
		var e struct {
			Error string `json:"error"`
		}
		if st, err := n.Do("GET", "/v1/memory/"+m.ID, nil, &e); err != nil || st != 404 || !strings.Contains(e.Error, "forgotten at "+f.ForgottenAt) {
			t.Fatalf("%s: GET by id = %d %+v %v", n.Name, st, e, err)
		}
	}
	var row struct {
		Data map[string]any `json:"data"`
	}
	b.MustDo(200, "GET", "/v1/tables/memories/rows/"+m.ID+"?deleted=true", nil, &row)
	if len(row.Data) != 2 || row.Data["id"] != m.ID || row.Data["forgotten_at"] != f.ForgottenAt {
		t.Fatalf("the tombstone's data: %v", row.Data)
	}
	checkVersions := func(n *cluster.Node) bool {
		for _, num := range []string{"1", "2"} {
			var v numbered
			if st, _ := n.Do("GET", "/v1/memory/"+num, nil, &v); st != 200 || v.Content != "" || v.ForgottenAt != f.ForgottenAt ||
				v.EventHash == nil || *v.EventHash == "" || v.ID != m.ID {
				return false
			}
		}
		return true
	}
	c.Eventually("versions without content, with forgotten_at, on A and B", func() bool { return checkVersions(a) && checkVersions(b) })

	c.Heal()
	start = time.Now()
	c.Eventually("no copy on C after the heal", clean(cc))
	t.Logf("C holds no copy %v after the heal", time.Since(start).Round(time.Millisecond))
	c.Eventually("versions forgotten on C", func() bool { return checkVersions(cc) })

	d := c.Add("D")
	c.Eventually("D to sync the forgotten memory, never holding the string", func() bool {
		if files := filesHolding(t, d.Dir(), secret); len(files) != 0 {
			t.Fatalf("D received the string: %v", files)
		}
		var e struct {
			Error string `json:"error"`
		}
		st, _ := d.Do("GET", "/v1/memory/"+m.ID, nil, &e)
		return st == 404 && strings.Contains(e.Error, "forgotten") && checkVersions(d)
	})
	time.Sleep(3 * time.Second) // D's Forgetter and compaction have run
	if files := filesHolding(t, d.Dir(), secret); len(files) != 0 {
		t.Fatalf("D holds the string: %v", files)
	}
}
