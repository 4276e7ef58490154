package anchor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	ethcrypto "github.com/ethereum/go-ethereum/crypto"
)

const (
	crashDirEnv = "CROW_ANCHOR_CRASH_DIR"
	crashKeyEnv = "CROW_ANCHOR_CRASH_KEY"
)

// TestEmbeddedSurvivesCrash anchors in a child process that then exits
// without closing the chain (as a killed daemon would), and checks that
// everything a returned Receipt reported is there on reopening.
func TestEmbeddedSurvivesCrash(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir, os.Getenv(crashKeyEnv))
		return
	}
	dir, key := t.TempDir(), testKey(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedSurvivesCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashKeyEnv+"="+hex.EncodeToString(ethcrypto.FromECDSA(key)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("child: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	var rs []Receipt
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "RECEIPT "); ok {
			var r Receipt
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
	}
	if len(rs) != 3 {
		t.Fatalf("child reported %d receipts:\n%s\n%s", len(rs), out, stderr.Bytes())
	}

	e := openEmbedded(t, dir, key)
	ctx := testCtx(t)
	if h := headOf(t, e.client); h < rs[2].Block {
		t.Fatalf("after the crash the head is %d, the last receipt was in block %d", h, rs[2].Block)
	}
	for i, r := range rs[:2] {
		for j, s := range testStates(fmt.Sprint("crash", i), "a", 1, 2) {
			checkAnchor(t, e, r.AnchorIDs[j], s, r)
		}
	}
	evs, err := e.MemoryEvents(ctx, hashOf("crash memory"), 0)
	if err != nil || len(evs) != 1 || evs[0].TxHash != rs[2].TxHash {
		t.Fatalf("memory after crash: %+v, %v", evs, err)
	}
	// And it goes on.
	if _, err := e.AnchorStates(ctx, testStates("crash", "after", 10, 1)); err != nil {
		t.Fatal(err)
	}
}

func crashChild(dir, keyHex string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	key, err := ethcrypto.HexToECDSA(keyHex)
	if err != nil {
		fail(err)
	}
	e, err := OpenEmbedded(dir, key, nil)
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report := func(r Receipt, err error) {
		if err != nil {
			fail(err)
		}
		b, _ := json.Marshal(r)
		fmt.Printf("RECEIPT %s\n", b)
	}
	for i := range 2 {
		report(e.AnchorStates(ctx, testStates(fmt.Sprint("crash", i), "a", 1, 2)))
	}
	memKey := goldenSeed().MemoryEncryptionKey()
	ev := hashOf("crash memory")
	ct, _ := EncryptMemory(memKey, ev, []byte("antes del crash"))
	report(e.AnchorMemories(ctx, []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 2, PlainLength: 15}}))
	os.Exit(3) // no Close: the node never gets to flush anything
}
