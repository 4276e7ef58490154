package feed

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt")

// goldenValues computes every frozen byte string from fixed inputs.
func goldenValues(t *testing.T) [][2]string {
	t.Helper()
	hello, world := LeafHash([]byte("hello")), LeafHash([]byte("world"))
	l, err := OpenLog(NewMemStorage(), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([][]byte{[]byte("a")}); err != nil {
		t.Fatal(err)
	}
	h, err := l.Append([][]byte{[]byte("b"), []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	headEnc, _ := h.MarshalBinary()
	p, err := l.Proof(1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	proofEnc, _ := p.MarshalBinary()
	var h1 Head
	l2, _ := OpenLog(NewMemStorage(), testKey(1))
	h1, _ = l2.Append([][]byte{[]byte("x")})
	fe := &ForkError{Key: h.Key, Held: h, Other: h1}
	forkEnc, _ := fe.MarshalBinary()
	roots := []Node{{Index: 1, Size: 2, Hash: ParentHash(2, LeafHash([]byte("a")), LeafHash([]byte("b")))}, {Index: 4, Size: 1, Hash: LeafHash([]byte("c"))}}
	th := TreeHash(roots)
	if th != h.TreeHash {
		t.Fatalf("tree hash from roots %x, log %x", th, h.TreeHash)
	}
	x := func(b []byte) string { return hex.EncodeToString(b) }
	return [][2]string{
		{"leaf(hello)", x(hello[:])},
		{"leaf(empty)", x(func() []byte { h := LeafHash(nil); return h[:] }())},
		{"parent(10,hello,world)", x(func() []byte { h := ParentHash(10, hello, world); return h[:] }())},
		{"treehash(a,b,c)", x(th[:])},
		{"signable(a,b,c)", x(h.SignableBytes())},
		{"head(a,b,c)", x(headEnc)},
		{"proof([1,2) since 1 of a,b,c)", x(proofEnc)},
		{"fork(abc,x)", x(forkEnc)},
	}
}

func TestGolden(t *testing.T) {
	got := goldenValues(t)
	const path = "testdata/golden.txt"
	if *update {
		var b strings.Builder
		b.WriteString("# Frozen feed formats. Regenerate only for a new format version: go test ./feed/ -run TestGolden -update\n")
		for _, kv := range got {
			fmt.Fprintf(&b, "%s %s\n", kv[0], kv[1])
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		want[line[:i]] = line[i+1:]
	}
	for _, kv := range got {
		if want[kv[0]] != kv[1] {
			t.Errorf("%s:\n got  %s\n want %s", kv[0], kv[1], want[kv[0]])
		}
	}
	if len(want) != len(got) {
		t.Errorf("golden file has %d values, test computes %d", len(want), len(got))
	}
}

// TestGoldenIndependent pins the first hashes against values computed by
// hand from the spec (sha256 of the spelled-out preimage), so the golden
// file cannot drift together with the code.
func TestGoldenIndependent(t *testing.T) {
	if LeafHash([]byte("hello")) != refLeaf([]byte("hello")) {
		t.Fatal("leaf hash differs from spec preimage")
	}
	var h Head
	h.Key[0], h.TreeHash[0], h.Length = 0xaa, 0xbb, 0x0102
	want := "63726f772d666565642d7631" + "aa" + strings.Repeat("00", 31) + "bb" + strings.Repeat("00", 31) + "0000000000000102"
	if got := hex.EncodeToString(h.SignableBytes()); got != want {
		t.Fatalf("signable bytes\n got  %s\n want %s", got, want)
	}
	enc, _ := h.MarshalBinary()
	wantEnc := "01" + "aa" + strings.Repeat("00", 31) + "0000000000000102" + "bb" + strings.Repeat("00", 31) + strings.Repeat("00", 64)
	if got := hex.EncodeToString(enc); got != wantEnc {
		t.Fatalf("head encoding\n got  %s\n want %s", got, wantEnc)
	}
}
