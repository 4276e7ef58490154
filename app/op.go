package app

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// Access says who may call an operation.
type Access int

const (
	// Owner: the owner API key only.
	Owner Access = iota
	// Peer: the owner, or another instance of this identity over
	// federation (the peer allow-list: search and read operations).
	Peer
	// Public: anyone who can reach the gateway.
	Public
)

func (a Access) String() string {
	switch a {
	case Peer:
		return "peer"
	case Public:
		return "public"
	}
	return "owner"
}

// Spec is what an operation is, apart from its types and its code: its
// names on every surface, who may call it and what the schemas say of it.
type Spec struct {
	// Name identifies the operation ("memory.create"): log fields, metrics,
	// the table's tests.
	Name string
	// Method and Path are its REST route ("" Method: not on REST). Path
	// wildcards are {name}, bound to fields tagged in:"path".
	Method, Path string
	// Status is the REST success status (200 when 0).
	Status int
	// Tool is its MCP tool name ("": not on MCP).
	Tool string
	// Title is the tool's human title; Summary the one-line description
	// (OpenAPI summary); Description the tool's longer text (Summary when
	// empty). Tag groups it in the OpenAPI document.
	Title, Summary, Description, Tag string
	// Access says who may call it.
	Access Access
	// HomePeer lets peers call it on the home instance even when Access is
	// Owner (satellites forward consolidations to home).
	HomePeer bool
	// The MCP tool annotations: ReadOnly (changes nothing), Destructive
	// (may destroy data: delete, revoke, forget, overwrite), Idempotent,
	// OpenWorld (reaches beyond this identity's instances).
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	// NoRoute keeps the tool off /router/mcp (it is about this instance only).
	NoRoute bool
	// NoStore marks a REST answer Cache-Control: no-store (it holds a secret).
	NoStore bool
	// MaxBody caps the REST request body in bytes (0: the gateway's default,
	// 256 KiB); MCP messages keep the MCP endpoint's cap.
	MaxBody int64
}

// SuccessStatus is Status, or 200.
func (s *Spec) SuccessStatus() int {
	if s.Status == 0 {
		return 200
	}
	return s.Status
}

// Surface is how an operation was reached.
type Surface int

const (
	SurfaceGo   Surface = iota // a direct Go call (tests, the daemon)
	SurfaceREST                // the REST API (and the CLI, which speaks it)
	SurfaceMCP                 // an MCP tool call
)

// Caller is who calls an operation and how.
type Caller struct {
	Surface Surface
	// Peer is the calling instance's id for a federated call ("" for the
	// owner or the public).
	Peer string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries (a Go call by the owner when none).
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// PeerOf returns the calling peer's instance id; ok is false unless the
// call is a federated one.
func PeerOf(ctx context.Context) (string, bool) {
	c := CallerOf(ctx)
	return c.Peer, c.Peer != ""
}

// Op is an operation with its types erased, as the adapters (REST, MCP,
// OpenAPI, the router) walk the table.
type Op interface {
	Info() *Spec
	Input() *Input
	// Output is the type of a successful result.
	Output() reflect.Type
	// Location is the REST Location header of a result ("" for none).
	Location(out any) string
	// invoke runs the operation on a *In from Input's decoders.
	invoke(ctx context.Context, a *App, in reflect.Value) (any, error)
}

// Def is one operation: its Spec, its typed input and output, and its code
// (a method of App, written next to the domain call it makes). Define it
// with define in the table; nothing else is needed for REST, MCP, OpenAPI
// and the typed client.
type Def[In, Out any] struct {
	Spec
	// Impl does the work on a validated input.
	Impl func(a *App, ctx context.Context, in In) (Out, error)
	// Locate, if set, gives the REST Location header of a result.
	Locate func(out Out) string
}

func (d *Def[In, Out]) Info() *Spec          { return &d.Spec }
func (d *Def[In, Out]) Input() *Input        { return InputOf(reflect.TypeFor[In]()) }
func (d *Def[In, Out]) Output() reflect.Type { return reflect.TypeFor[Out]() }

func (d *Def[In, Out]) Location(out any) string {
	o, ok := out.(Out)
	if d.Locate == nil || !ok {
		return ""
	}
	return d.Locate(o)
}

func (d *Def[In, Out]) invoke(ctx context.Context, a *App, in reflect.Value) (any, error) {
	return d.call(ctx, a, in.Interface().(*In))
}

// ErrPeerDenied is wrapped by the error of a federated call to an operation
// peers may not call (the allow-list: App.PeerMayCall).
var ErrPeerDenied = errors.New("not allowed for federated calls")

// call refuses a peer the operation is not allowed to, validates *in for
// the caller's surface, then runs Impl.
func (d *Def[In, Out]) call(ctx context.Context, a *App, in *In) (Out, error) {
	var zero Out
	if err := a.CheckPeer(ctx, &d.Spec); err != nil {
		return zero, err
	}
	s := CallerOf(ctx).Surface
	info := d.Input()
	v := reflect.ValueOf(in).Elem()
	if err := info.applyDefaults(v, s); err != nil {
		return zero, err
	}
	if err := info.check(v, s); err != nil {
		return zero, err
	}
	if val, ok := any(in).(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return zero, err
		}
	}
	return d.Impl(a, ctx, *in)
}

// Call runs operation d with in on a, as a Go call (or as the caller ctx
// carries): the same validation as REST and MCP, then the operation.
func Call[In, Out any](ctx context.Context, a *App, d *Def[In, Out], in In) (Out, error) {
	return d.call(ctx, a, &in)
}

// CheckPeer refuses a federated call (ctx carries a Caller.Peer) to an
// operation peers may not call; the error wraps ErrPeerDenied. Every call
// goes through it; adapters may call it first to refuse before decoding.
func (a *App) CheckPeer(ctx context.Context, sp *Spec) error {
	peer := CallerOf(ctx).Peer
	if peer == "" || a.PeerMayCall(sp) {
		return nil
	}
	name := sp.Tool
	if name == "" {
		name = sp.Name
	}
	return &Error{Kind: KindForbidden, Err: ErrPeerDenied, Msg: fmt.Sprintf("%s is not allowed for federated calls "+
		"from instance %s (peers may call only the allow-listed search and read tools)", name, peer)}
}

// Invoke runs op with a decoded input (a pointer from Input().DecodeArgs or
// BindREST); the adapters call it.
func (a *App) Invoke(ctx context.Context, op Op, in reflect.Value) (any, error) {
	if a.d.Foreground != nil && !op.Info().ReadOnly {
		a.d.Foreground()
	}
	return op.invoke(ctx, a, in)
}

// table is every operation, in the order of definition (file name order,
// then declaration order): define appends to it at package init.
var table []Op

// define adds d to the table and returns it, so the table's entries are
// package-level values the typed client and tests name directly.
func define[In, Out any](d *Def[In, Out]) *Def[In, Out] {
	if reflect.TypeFor[In]().Kind() != reflect.Struct {
		panic(fmt.Sprintf("app: %s: input must be a struct", d.Name))
	}
	_ = d.Input() // tags are checked at init
	table = append(table, d)
	return d
}

// Ops returns the table of operations.
func Ops() []Op { return table }

// NoInput is the input of an operation that takes none.
type NoInput struct{}
