package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The MCP wire rules (streamable HTTP transport) that mcp-go v1.2.1 leaves
// open, applied in front of its StreamableHTTPServer by mcpWire:
//
//   - Sessions are tracked (mcpSessions is mcp-go's SessionIdManager): a
//     request other than initialize without Mcp-Session-Id is a 400; an id this
//     server did not hand out, or one that was ended (DELETE, idle expiry), is
//     a 404 — for POST, GET and DELETE alike. mcp-go's default manager checks
//     only the id's format, and its GET accepts any id or none.
//   - A JSON-RPC batch (top-level array) is refused with -32600 unless the
//     session negotiated 2025-03-26, the one revision that has batches; then
//     its messages are served one by one and answered as an array. mcp-go
//     answers every batch with a parse error.
//   - A message without "method" that is not a response is a 400 (mcp-go
//     treats {"id":1} as an empty response and answers 202).
//   - Methods other than GET, POST and DELETE are a 405 with Allow.
//   - A body over the cap is a 413 (mcp-go reads the whole body and answers a
//     JSON-RPC parse error).
//   - HTTP-level errors are {"error": "..."} (mcp-go writes plain text);
//     JSON-RPC-level ones are JSON-RPC error objects with id null.
//   - The stateless 2026-07-28 revision (no sessions at all) is not offered:
//     its requests would bypass every rule above.

// mcpBatchVersion is the one protocol revision whose clients may send
// JSON-RPC batches (added in 2025-03-26, removed in 2025-06-18).
const mcpBatchVersion = mcp.ProtocolVersion20250326

// mcpSessionIdleTTL ends a session nobody used for this long (mcp-go's
// sweeper calls Terminate); the client then gets a 404 and initializes anew,
// as the transport specification requires of it.
const mcpSessionIdleTTL = 24 * time.Hour

// mcpSessions is the session table of one MCP endpoint: mcp-go's
// SessionIdManager, plus the protocol version each session negotiated.
type mcpSessions struct {
	mu   sync.Mutex
	live map[string]string // session id → negotiated protocol version ("" until initialize answered)
}

func newMCPSessions() *mcpSessions { return &mcpSessions{live: map[string]string{}} }

// Generate implements server.SessionIdManager: a new random id, live at once
// (mcp-go calls it for an initialize request).
func (t *mcpSessions) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := "crow-" + hex.EncodeToString(b[:])
	t.mu.Lock()
	t.live[id] = ""
	t.mu.Unlock()
	return id
}

// errUnknownSession is Validate's answer for an id that is not live.
var errUnknownSession = errors.New("unknown or ended MCP session")

// Validate implements server.SessionIdManager: only live ids pass. Ended ids
// are forgotten, so they are unknown: mcp-go answers both with 404.
func (t *mcpSessions) Validate(id string) (isTerminated bool, err error) {
	if _, ok := t.version(id); !ok {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate implements server.SessionIdManager: the session ends (DELETE,
// idle sweep, shutdown).
func (t *mcpSessions) Terminate(id string) (isNotAllowed bool, err error) {
	t.mu.Lock()
	delete(t.live, id)
	t.mu.Unlock()
	return false, nil
}

// version returns the protocol version session id negotiated and whether it
// is live.
func (t *mcpSessions) version(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.live[id]
	return v, ok
}

// hooks records the negotiated protocol version of each session.
func (t *mcpSessions) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil || res == nil {
			return
		}
		t.mu.Lock()
		if _, ok := t.live[cs.SessionID()]; ok {
			t.live[cs.SessionID()] = res.ProtocolVersion
		}
		t.mu.Unlock()
	})
	return h
}

// transportOptions configure mcp-go's StreamableHTTPServer for t: t decides
// which ids are live, idle sessions expire, and only the session-bearing
// protocol revisions are offered.
func (t *mcpSessions) transportOptions() []server.StreamableHTTPOption {
	return []server.StreamableHTTPOption{
		server.WithSessionIdManager(t),
		server.WithSessionIdleTTL(mcpSessionIdleTTL),
		server.WithStreamableHTTPProtocolVersions(mcp.LegacyProtocolVersions()...),
	}
}

// mcpAllow is the Allow header of the MCP endpoints.
const mcpAllow = "GET, POST, DELETE"

// mcpWire applies the wire rules above in front of next (mcp-go's
// StreamableHTTPServer configured with sessions.transportOptions and
// sessions.hooks). maxBody is the body cap, for the 413's message.
func mcpWire(sessions *mcpSessions, maxBody int64, next http.Handler) http.Handler {
	w := &wire{sessions: sessions, maxBody: maxBody, next: next}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		jw := &jsonErrorWriter{ResponseWriter: rw}
		w.serve(jw, r)
		jw.finish()
	})
}

type wire struct {
	sessions *mcpSessions
	maxBody  int64
	next     http.Handler
}

func (w *wire) serve(rw http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		w.post(rw, r)
	case http.MethodGet, http.MethodDelete:
		if !w.session(rw, r) {
			return
		}
		w.next.ServeHTTP(rw, r)
	default:
		rw.Header().Set("Allow", mcpAllow)
		writeError(rw, http.StatusMethodNotAllowed, "method %s is not allowed on %s; use %s", r.Method, r.URL.Path, mcpAllow)
	}
}

// session checks r's Mcp-Session-Id: missing → 400, not live → 404. It
// returns the negotiated version and whether r may go on.
func (w *wire) sessionVersion(rw http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		writeError(rw, http.StatusBadRequest, "missing %s header: initialize a session first (POST an initialize request), then send its id with every request", server.HeaderKeySessionID)
		return "", false
	}
	v, ok := w.sessions.version(id)
	if !ok {
		writeError(rw, http.StatusNotFound, "unknown or ended MCP session %q: initialize a new session", id)
		return "", false
	}
	return v, true
}

func (w *wire) session(rw http.ResponseWriter, r *http.Request) bool {
	_, ok := w.sessionVersion(rw, r)
	return ok
}

// post checks a POST's body and session, then serves it (a batch message by
// message).
func (w *wire) post(rw http.ResponseWriter, r *http.Request) {
	if r.ContentLength > w.maxBody {
		writeError(rw, http.StatusRequestEntityTooLarge, "request body of %d bytes is larger than the %d bytes an MCP message may have", r.ContentLength, w.maxBody)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(rw, http.StatusRequestEntityTooLarge, "request body larger than the %d bytes an MCP message may have", tooBig.Limit)
			return
		}
		writeError(rw, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		w.batch(rw, r, trimmed)
		return
	}
	var msg wireMessage
	if err := json.Unmarshal(trimmed, &msg); err != nil {
		writeRPCError(rw, http.StatusBadRequest, mcp.PARSE_ERROR, "the body is not a JSON-RPC message (a JSON object): "+err.Error())
		return
	}
	if msg.Method == nil && !msg.isResponse() {
		writeRPCError(rw, http.StatusBadRequest, mcp.INVALID_REQUEST, `invalid JSON-RPC message: no "method" (and not a response: it needs an "id" and a "result" or "error")`)
		return
	}
	if msg.Method == nil || *msg.Method != string(mcp.MethodInitialize) {
		if !w.session(rw, r) {
			return
		}
	}
	w.forward(rw, r, body)
}

// forward serves body through mcp-go.
func (w *wire) forward(rw http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	w.next.ServeHTTP(rw, r)
}

// batch serves a JSON-RPC batch: refused (-32600) unless the session
// negotiated mcpBatchVersion; then each message is served on its own and the
// answers come back as one array (202 when none needs an answer).
func (w *wire) batch(rw http.ResponseWriter, r *http.Request, body []byte) {
	v, ok := w.sessionVersion(rw, r)
	if !ok {
		return
	}
	if v != mcpBatchVersion {
		writeRPCError(rw, http.StatusBadRequest, mcp.INVALID_REQUEST, fmt.Sprintf(
			"JSON-RPC batches are not allowed in protocol version %s (only %s has them); send one message per request", v, mcpBatchVersion))
		return
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		writeRPCError(rw, http.StatusBadRequest, mcp.PARSE_ERROR, "the body is not valid JSON: "+err.Error())
		return
	}
	if len(msgs) == 0 {
		writeRPCError(rw, http.StatusBadRequest, mcp.INVALID_REQUEST, "empty JSON-RPC batch")
		return
	}
	var answers []json.RawMessage
	for _, m := range msgs {
		var msg wireMessage
		if err := json.Unmarshal(m, &msg); err != nil || bytes.HasPrefix(bytes.TrimSpace(m), []byte("[")) {
			answers = append(answers, rpcError(nil, mcp.INVALID_REQUEST, "a batch element must be a JSON-RPC message (a JSON object)"))
			continue
		}
		if msg.Method != nil && *msg.Method == string(mcp.MethodInitialize) {
			answers = append(answers, rpcError(msg.ID, mcp.INVALID_REQUEST, "initialize must not be part of a batch"))
			continue
		}
		sub := r.Clone(r.Context())
		sub.Body = io.NopCloser(bytes.NewReader(m))
		sub.ContentLength = int64(len(m))
		rec := &bufferedWriter{header: http.Header{}}
		w.post(rec, sub)
		switch {
		case rec.status == http.StatusAccepted:
		case rec.status == http.StatusOK && strings.HasPrefix(rec.header.Get("Content-Type"), "application/json"):
			answers = append(answers, json.RawMessage(bytes.TrimSpace(rec.body.Bytes())))
		case isRPCMessage(rec.body.Bytes()):
			answers = append(answers, json.RawMessage(bytes.TrimSpace(rec.body.Bytes()))) // our own -32600 or -32700
		default:
			var e errorBody
			if json.Unmarshal(rec.body.Bytes(), &e) != nil {
				e.Error = strings.TrimSpace(rec.body.String())
			}
			answers = append(answers, rpcError(msg.ID, mcp.INVALID_REQUEST, cmp.Or(e.Error, http.StatusText(rec.status))))
		}
	}
	if len(answers) == 0 {
		rw.WriteHeader(http.StatusAccepted)
		return
	}
	writeJSON(rw, http.StatusOK, answers)
}

// isRPCMessage reports whether b is a JSON-RPC message.
func isRPCMessage(b []byte) bool {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(b, &m) == nil && m.JSONRPC == mcp.JSONRPC_VERSION
}

// wireMessage is what mcpWire reads of a JSON-RPC message.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// isResponse reports whether m is a JSON-RPC response: an id and a result or
// an error.
func (m wireMessage) isResponse() bool {
	return len(m.ID) > 0 && string(m.ID) != "null" && (m.Result != nil || m.Error != nil)
}

// rpcError is a JSON-RPC error response (id null when id is empty).
func rpcError(id json.RawMessage, code int, msg string) json.RawMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// writeRPCError writes a JSON-RPC error response (id null) with an HTTP status.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(rpcError(nil, code, msg), '\n'))
}

// bufferedWriter records one message's answer inside a batch. It cannot
// stream (no Flush), so mcp-go answers it with plain JSON.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// jsonErrorWriter turns mcp-go's plain-text HTTP errors into {"error": ...}:
// an error status with a text/plain body is held back and rewritten by
// finish. Everything else (JSON, event streams) passes through, flushes
// included.
type jsonErrorWriter struct {
	http.ResponseWriter
	wroteHeader bool
	plain       bool // holding a plain-text error
	status      int
	msg         bytes.Buffer
}

func (j *jsonErrorWriter) WriteHeader(code int) {
	if j.wroteHeader {
		return
	}
	j.wroteHeader = true
	if code >= 400 && strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
		j.plain, j.status = true, code
		return
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonErrorWriter) Write(p []byte) (int, error) {
	if !j.wroteHeader {
		j.WriteHeader(http.StatusOK)
	}
	if j.plain {
		return j.msg.Write(p)
	}
	return j.ResponseWriter.Write(p)
}

func (j *jsonErrorWriter) Flush() {
	if j.plain {
		return
	}
	if f, ok := j.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (j *jsonErrorWriter) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// finish writes a held plain-text error as JSON.
func (j *jsonErrorWriter) finish() {
	if !j.plain {
		return
	}
	writeJSON(j.ResponseWriter, j.status, errorBody{Error: strings.TrimSpace(j.msg.String())})
}
