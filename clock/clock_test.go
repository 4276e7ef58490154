package clock

import (
	"testing"
	"time"
)

func TestSystemTicker(t *testing.T) {
	var c Clock = System{}
	before := time.Now()
	tk := c.NewTicker(time.Millisecond)
	defer tk.Stop()
	select {
	case got := <-tk.C():
		if got.Before(before) {
			t.Fatalf("tick %v before the ticker was made (%v)", got, before)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("system ticker never fired")
	}
	if now := c.Now(); now.Before(before) {
		t.Fatalf("Now %v went backwards from %v", now, before)
	}
}
