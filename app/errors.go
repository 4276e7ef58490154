package app

import (
	"context"
	"errors"
	"fmt"
)

// Kind classifies an operation's failure. Each kind is mapped once to an
// HTTP status (gateway) and once to an MCP tool error (gateway), and the
// typed client turns a status back into the same kind.
type Kind int

const (
	KindInternal            Kind = iota // a bug or an unexpected failure: logged with the request id
	KindInvalid                         // the input is wrong; the message says what to fix (400)
	KindUnauthorized                    // no or a wrong credential (401)
	KindForbidden                       // the caller may not do this (403)
	KindNotFound                        // what the input names does not exist (404)
	KindConflict                        // the state changed or forbids it (stale, already resolved) (409)
	KindTooLarge                        // the request is over a size limit (413)
	KindUpstream                        // a peer this operation needs answered badly or not at all (502)
	KindUnavailable                     // this instance cannot serve it now (cancelled, not configured) (503)
	KindInsufficientStorage             // the disk is too full to take a write (507)
)

var kindNames = [...]string{
	KindInternal: "internal", KindInvalid: "invalid", KindUnauthorized: "unauthorized",
	KindForbidden: "forbidden", KindNotFound: "not_found", KindConflict: "conflict",
	KindTooLarge: "too_large", KindUpstream: "upstream", KindUnavailable: "unavailable",
	KindInsufficientStorage: "insufficient_storage",
}

// kindStatus is the HTTP status of each kind: the one table the gateway
// answers with and the typed client reads back.
var kindStatus = [...]int{
	KindInternal: 500, KindInvalid: 400, KindUnauthorized: 401, KindForbidden: 403,
	KindNotFound: 404, KindConflict: 409, KindTooLarge: 413, KindUpstream: 502,
	KindUnavailable: 503, KindInsufficientStorage: 507,
}

// HTTPStatus is the HTTP status a REST answer of this kind carries.
func (k Kind) HTTPStatus() int {
	if int(k) < len(kindStatus) {
		return kindStatus[k]
	}
	return 500
}

// KindOfStatus is the kind an HTTP error status stands for (the inverse of
// HTTPStatus; the gateway's own 405 and 415 count as invalid input).
func KindOfStatus(status int) Kind {
	switch status {
	case 405, 415:
		return KindInvalid
	}
	for k, st := range kindStatus {
		if st == status {
			return Kind(k)
		}
	}
	return KindInternal
}

// String is the kind's stable name ("not_found"), used on the wire.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "internal"
}

// ParseKind is the inverse of Kind.String (unknown names: KindInternal).
func ParseKind(s string) Kind {
	for k, n := range kindNames {
		if n == s {
			return Kind(k)
		}
	}
	return KindInternal
}

// Error is an operation's failure with its kind and a message fit for the
// caller. Err, if set, is the cause (kept for errors.Is and the log).
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of kind k.
func Errorf(k Kind, format string, a ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, a...)}
}

// Wrap returns an *Error of kind k whose message is msg (the cause's when
// empty) and whose cause is err.
func Wrap(k Kind, err error, msg string) error {
	if msg == "" {
		msg = err.Error()
	}
	return &Error{Kind: k, Msg: msg, Err: err}
}

// Invalidf is Errorf(KindInvalid, …).
func Invalidf(format string, a ...any) error { return Errorf(KindInvalid, format, a...) }

// KindOf classifies err: an *Error keeps its kind; the domain packages'
// errors are mapped by the table in classify.go; a cancelled context is
// unavailable; anything else is internal.
func KindOf(ctx context.Context, err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if k, ok := classify(err); ok {
		return k
	}
	if ctx != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return KindUnavailable
	}
	return KindInternal
}

// Message is what the caller is told of err (for KindInternal the gateway
// says "internal error" with the request id instead).
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	return err.Error()
}
