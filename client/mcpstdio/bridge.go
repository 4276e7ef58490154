// Package mcpstdio bridges a stdio MCP client (Claude Desktop and the like
// start `crow mcp` and speak JSON-RPC over its stdin and stdout) to the local
// daemon's streamable-HTTP MCP endpoint (/mcp). Every message is forwarded as
// is, so the tools, resources and prompts, their schemas and their errors are
// exactly those of the daemon's endpoint: nothing is defined twice.
//
// The contract, message by message:
//
//  1. Each line of stdin is one JSON-RPC message (or a batch). It is POSTed to
//     the daemon's /mcp with the owner key, the session's Mcp-Session-Id and
//     MCP-Protocol-Version once initialize answered.
//  2. The answer is written to stdout one message a line: a JSON body as it
//     is, an event stream (text/event-stream) event by event, in order;
//     202 (a notification or response) writes nothing.
//  3. An HTTP-level error ({"error": ...}), an unreachable daemon or a daemon
//     with no gateway.addr answers a request with a JSON-RPC error carrying
//     the request's id (code CodeDaemon) and logs a line to stderr; a
//     notification's failure is logged only.
//  4. A session the daemon no longer knows (404: the daemon restarted), or
//     none because initialize failed (no daemon then), is initialized again
//     with the client's own initialize request, then the message is sent.
//  5. Requests run concurrently (a long tool call does not hold a ping);
//     initialize and notifications are sent in the order read. Writes to
//     stdout never interleave. stdout carries JSON-RPC only.
//  6. At the end of stdin the session is ended (DELETE) and Serve returns nil.
package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
)

// CodeDaemon is the JSON-RPC error code of a request the daemon could not be
// asked (not running, unreachable, an HTTP-level refusal).
const CodeDaemon = -32000

// MaxMessageBytes bounds one line of stdin (the daemon caps an MCP body at
// 1 MiB; a longer line gets the daemon's 413 as a JSON-RPC error).
const MaxMessageBytes = 4 << 20

// Target is where the daemon is: its base URL and owner key. Resolve is
// called for every message, so a daemon restarted on a new port is found.
type Target func() (base, key string, err error)

// Bridge forwards stdio JSON-RPC to a daemon's /mcp.
type Bridge struct {
	In     io.Reader
	Out    io.Writer
	Target Target
	// Path is the endpoint's path (default "/mcp").
	Path string
	// HTTP is the client (default: one with no timeout; a tool call may
	// take long, and the client's own cancellation ends it).
	HTTP *http.Client
	Log  *slog.Logger

	outMu sync.Mutex // guards writes to Out

	mu       sync.Mutex // guards the fields below
	session  string
	protocol string
	initMsg  []byte // the client's initialize request, replayed after a restart
}

// Serve reads stdin until EOF or ctx ends.
func (b *Bridge) Serve(ctx context.Context) error {
	if b.Path == "" {
		b.Path = "/mcp"
	}
	if b.HTTP == nil {
		b.HTTP = &http.Client{}
	}
	if b.Log == nil {
		b.Log = slog.Default()
	}
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(b.In, 64<<10)
		for {
			line, err := readLine(r)
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			b.end()
			return nil
		case err := <-readErr:
			wg.Wait()
			b.end()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading stdin: %w", err)
		case line := <-lines:
			m := peek(line)
			if m.isRequest() && m.method != "initialize" {
				wg.Add(1)
				go func() { defer wg.Done(); b.handle(ctx, line, m) }()
				continue
			}
			b.handle(ctx, line, m)
		}
	}
}

// readLine reads one line, refusing one longer than MaxMessageBytes (the
// rest of it is skipped).
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) <= MaxMessageBytes {
			buf = append(buf, chunk...)
		} else {
			buf = []byte("{}") // too long: sent on as an invalid message, the daemon refuses it
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}

// message is what the bridge reads of a JSON-RPC message.
type message struct {
	id     json.RawMessage
	method string
	batch  bool
}

func (m message) isRequest() bool { return m.method != "" && len(m.id) > 0 && string(m.id) != "null" }

func peek(line []byte) message {
	t := bytes.TrimSpace(line)
	if len(t) > 0 && t[0] == '[' {
		return message{batch: true}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(t, &m)
	return message{id: m.ID, method: m.Method}
}

// handle forwards one message and writes its answers.
func (b *Bridge) handle(ctx context.Context, line []byte, m message) {
	if m.method == "initialize" {
		b.mu.Lock()
		b.initMsg = append([]byte(nil), line...)
		b.session, b.protocol = "", ""
		b.mu.Unlock()
	}
	err := b.forward(ctx, line, m, true)
	if err == nil {
		return
	}
	if ctx.Err() != nil {
		return
	}
	b.Log.Error("crow mcp: "+err.Error(), "method", m.method)
	if m.isRequest() {
		b.write(rpcError(m.id, CodeDaemon, err.Error()))
	}
}

// errSessionGone is forward's error for a 404 on a live session.
var errSessionGone = errors.New("the daemon no longer knows the MCP session")

// forward POSTs line and writes the answer; retry re-initializes once on a
// lost session.
func (b *Bridge) forward(ctx context.Context, line []byte, m message, retry bool) error {
	b.mu.Lock()
	noSession := b.session == "" && b.initMsg != nil
	b.mu.Unlock()
	if noSession && m.method != "initialize" && retry {
		// initialize failed (no daemon then): open the session now.
		if err := b.reinitialize(ctx); err != nil {
			return err
		}
	}
	resp, err := b.post(ctx, line, m.method == "initialize")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if m.method == "initialize" && resp.StatusCode == http.StatusOK {
		b.mu.Lock()
		b.session = resp.Header.Get("Mcp-Session-Id")
		b.mu.Unlock()
	}
	if resp.StatusCode == http.StatusNotFound && m.method != "initialize" && retry {
		resp.Body.Close()
		if err := b.reinitialize(ctx); err != nil {
			return fmt.Errorf("%w, and initializing a new one failed: %v", errSessionGone, err)
		}
		return b.forward(ctx, line, m, false)
	}
	return b.relay(resp, m)
}

// relay writes resp's JSON-RPC messages to Out.
func (b *Bridge) relay(resp *http.Response, m message) error {
	ct := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case strings.HasPrefix(ct, "text/event-stream"):
		return readEvents(resp.Body, func(data []byte) {
			b.noteInit(m, data)
			b.write(data)
		})
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if isRPC(body) {
		// A JSON-RPC answer (or the daemon's own JSON-RPC refusal, id null:
		// give it the request's id so the client can match it).
		if resp.StatusCode >= 400 && m.isRequest() {
			body = withID(body, m.id)
		}
		b.noteInit(m, body)
		b.write(body)
		return nil
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		return fmt.Errorf("the daemon refused the message (HTTP %d): %s", resp.StatusCode, e.Error)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	b.write(body)
	return nil
}

// noteInit records the protocol version an initialize answer negotiated.
func (b *Bridge) noteInit(m message, data []byte) {
	if m.method != "initialize" {
		return
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(data, &r) == nil && r.Result.ProtocolVersion != "" {
		b.mu.Lock()
		b.protocol = r.Result.ProtocolVersion
		b.mu.Unlock()
	}
}

// reinitialize opens a new session with the client's initialize request,
// answering nothing to the client (it already has its answer).
func (b *Bridge) reinitialize(ctx context.Context) error {
	b.mu.Lock()
	init := b.initMsg
	b.session = ""
	b.mu.Unlock()
	if init == nil {
		return errors.New("no initialize request to replay")
	}
	resp, err := b.post(ctx, init, true)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize: HTTP %d", resp.StatusCode)
	}
	b.mu.Lock()
	b.session = resp.Header.Get("Mcp-Session-Id")
	b.mu.Unlock()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_ = readEvents(bytes.NewReader(body), func(d []byte) { b.noteInit(message{method: "initialize"}, d) })
	} else {
		b.noteInit(message{method: "initialize"}, body)
	}
	resp, err = b.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false)
	if err != nil {
		return err
	}
	resp.Body.Close()
	b.Log.Info("crow mcp: the daemon had lost the MCP session (restarted?); a new one is open")
	return nil
}

// post sends one message to the daemon.
func (b *Bridge) post(ctx context.Context, body []byte, initialize bool) (*http.Response, error) {
	base, key, err := b.Target()
	if err != nil {
		return nil, fmt.Errorf("the crow daemon is not reachable: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+b.Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	if !initialize {
		b.mu.Lock()
		if b.session != "" {
			req.Header.Set("Mcp-Session-Id", b.session)
		}
		if b.protocol != "" {
			req.Header.Set("MCP-Protocol-Version", b.protocol)
		}
		b.mu.Unlock()
	}
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the crow daemon at %s is not reachable (is 'crow serve' running?): %w", base, err)
	}
	return resp, nil
}

// end ends the session (DELETE), best effort.
func (b *Bridge) end() {
	b.mu.Lock()
	id := b.session
	b.mu.Unlock()
	if id == "" {
		return
	}
	base, key, err := b.Target()
	if err != nil {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, strings.TrimRight(base, "/")+b.Path, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Mcp-Session-Id", id)
	if resp, err := b.HTTP.Do(req); err == nil {
		resp.Body.Close()
	}
}

// write writes one message as one line.
func (b *Bridge) write(msg []byte) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, msg); err != nil {
		buf.Reset()
		buf.Write(bytes.TrimSpace(msg))
	}
	buf.WriteByte('\n')
	b.outMu.Lock()
	defer b.outMu.Unlock()
	_, _ = b.Out.Write(buf.Bytes())
}

// readEvents calls fn with the data of each event of an event stream
// (multi-line data joined by newlines, as the SSE format has it).
func readEvents(r io.Reader, fn func(data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data []byte
	have := false
	flush := func() {
		if have && len(bytes.TrimSpace(data)) > 0 {
			fn(data)
		}
		data, have = nil, false
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			flush()
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if have {
				data = append(data, '\n')
			}
			data = append(data, v...)
			have = true
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the daemon's event stream: %w", err)
	}
	return nil
}

// isRPC reports whether b is a JSON-RPC message or batch.
func isRPC(b []byte) bool {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var arr []json.RawMessage
		return json.Unmarshal(t, &arr) == nil && len(arr) > 0 && isRPC(arr[0])
	}
	var m struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(t, &m) == nil && m.JSONRPC == "2.0"
}

// withID sets a JSON-RPC error's null id to id.
func withID(body []byte, id json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if cur, ok := m["id"]; ok && string(cur) != "null" {
		return body
	}
	m["id"] = id
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// rpcError is a JSON-RPC error response.
func rpcError(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg},
	})
	return b
}
