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
		checkRoot(t, e.client, stateTree(t, testStates(fmt.Sprint("crash", i), "a", 1, 2)).Root(), 2, r)
		if st, err := e.TxStatus(ctx, r.TxHash); err != nil || !st.Mined || st.BlockHash != r.BlockHash {
			t.Errorf("receipt %d after the crash: %+v, %v", i, st, err)
		}
	}
	checkRoot(t, e.client, memoryRoot(t, crashMemory()), 1, rs[2])
	evs, err := e.MemoryEvents(ctx, hashOf("crash memory"), 0)
	if err != nil || len(evs) != 1 || evs[0].TxHash != rs[2].TxHash {
		t.Fatalf("memory after crash: %+v, %v", evs, err)
	}
	// And it goes on: the next root gets the next id.
	if _, r := anchorStates(t, e, testStates("crash", "after", 10, 1)); r.RootID != 4 {
		t.Errorf("after the crash: root id %d, want 4", r.RootID)
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
		tree := stateTree(failTB{fail}, testStates(fmt.Sprint("crash", i), "a", 1, 2))
		report(e.AnchorRoot(ctx, tree.Root(), tree.Len()))
	}
	ms := crashMemory()
	report(e.AnchorMemories(ctx, memoryRoot(failTB{fail}, ms), ms))
	os.Exit(3) // no Close: the node never gets to flush anything
}

// crashMemory is the memory the child anchors.
func crashMemory() []MemoryAnchor {
	ev := hashOf("crash memory")
	ct, _ := EncryptMemory(goldenSeed().MemoryEncryptionKey(), ev, []byte("antes del crash"))
	return []MemoryAnchor{{EventHash: ev, EncryptedContent: ct, Category: "note", Importance: 2, PlainLength: 15}}
}

// failTB lets the child use the test helpers: Fatal exits.
type failTB struct{ fail func(error) }

func (failTB) Helper()             {}
func (f failTB) Fatal(args ...any) { f.fail(fmt.Errorf("%s", fmt.Sprint(args...))) }
