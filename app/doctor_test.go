package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/federation"
)

// fakeCalls answers Ping for the ids in ok, and fails otherwise.
type fakeCalls struct{ ok map[string]bool }

func (f fakeCalls) Ping(_ context.Context, id string) (federation.Pong, error) {
	if !f.ok[id] {
		return federation.Pong{}, errors.New("peer refused this instance's token")
	}
	return federation.Pong{InstanceID: id, Time: "2026-12-02T04:00:00Z"}, nil
}

func (f fakeCalls) PeerCheck(context.Context, string) (federation.CheckAnswer, error) {
	return federation.CheckAnswer{}, errors.New("not used")
}

func TestPeerCheckCallsTheCallerBack(t *testing.T) {
	a := app.New(app.Deps{Self: app.Self{InstanceID: "self"}, PeerCalls: fakeCalls{ok: map[string]bool{"good": true}}})
	peerCtx := func(id string) context.Context {
		return app.WithCaller(context.Background(), app.Caller{Surface: app.SurfaceMCP, Peer: id})
	}
	ans, err := app.Call(peerCtx("good"), a, app.PeerCheckOp, app.NoInput{})
	if err != nil || !ans.CallbackOK || ans.InstanceID != "self" || ans.Time == "" {
		t.Fatalf("good peer: %+v %v", ans, err)
	}
	ans, err = app.Call(peerCtx("bad"), a, app.PeerCheckOp, app.NoInput{})
	if err != nil || ans.CallbackOK || ans.CallbackError == "" {
		t.Fatalf("refused callback: %+v %v", ans, err)
	}
	// The owner is no peer: nobody to call back.
	_, err = app.Call(context.Background(), a, app.PeerCheckOp, app.NoInput{})
	if k := app.KindOf(context.Background(), err); k != app.KindInvalid {
		t.Fatalf("owner call: kind %v, err %v", k, err)
	}
	if _, err := app.Call(context.Background(), a, app.DoctorRun, app.NoInput{}); app.KindOf(context.Background(), err) != app.KindUnavailable {
		t.Fatalf("doctor without its part: %v", err)
	}
	// Peers may call the two checks, not the doctor itself.
	if !a.PeerMayCall(&app.PeerCheckOp.Spec) || !a.PeerMayCall(&app.PeerPing.Spec) || a.PeerMayCall(&app.DoctorRun.Spec) {
		t.Fatal("peer access of the doctor's operations")
	}
}
