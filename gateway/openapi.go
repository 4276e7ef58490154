package gateway

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/crow-sync/crow/app"
)

// OpenAPIPath serves the gateway's OpenAPI 3.1 document. It is public: it
// describes the API, not the owner's data, and clients read it before they
// hold a key.
const OpenAPIPath = "/v1/openapi.json"

// routeDoc is what the OpenAPI document says about a route beyond its path,
// method, access and query parameters.
type routeDoc struct {
	tag     string
	summary string
	resp    any  // the success body of a gateway route: a zero value of the type encoded
	text    bool // the answer is text (Prometheus exposition format)
	mcp     bool // an MCP streamable-HTTP endpoint (JSON-RPC 2.0)
	jsonrpc bool // the chain's JSON-RPC (chainrpc.go)
}

// methods are the methods a route is documented under: its own, or for the
// method-less MCP endpoints those of the streamable-HTTP transport.
func (rt route) methods() []string {
	if rt.method == "" {
		return []string{http.MethodPost, http.MethodGet, http.MethodDelete}
	}
	return []string{rt.method}
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(s.openapi())
}

var pathParam = regexp.MustCompile(`\{([a-zA-Z_]+)\}`)

// buildOpenAPI writes the document from the route table.
func (s *Server) buildOpenAPI() []byte {
	g := app.NewSchemaGen("#/components/schemas/")
	errSchema := g.Of(reflect.TypeFor[errorBody]())
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errSchema}}}
	}
	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		item := paths[rt.path]
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		var pathParams []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			pathParams = append(pathParams, map[string]any{
				"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"},
			})
		}
		if pathParams != nil {
			item["parameters"] = pathParams
		}
		for _, m := range rt.methods() {
			op := map[string]any{
				"operationId": operationID(m, rt.path),
				"summary":     rt.doc.summary,
				"tags":        []string{rt.doc.tag},
			}
			if rt.access == public {
				op["security"] = []any{} // no key needed
			}
			if rt.op != nil {
				if params := opQueryDocs(g, rt.op); params != nil {
					op["parameters"] = params
				}
			}
			responses := map[string]any{
				"4XX":     errResp("The request is wrong (bad body or query, unknown id, method not allowed); the error says what"),
				"default": errResp("Internal error; the message carries the request id the daemon's log names"),
			}
			switch rt.access {
			case ownerOnly:
				responses["401"] = errResp("Missing or wrong owner API key")
			case ownerOrPeer:
				responses["401"] = errResp("Missing or wrong owner API key, or a refused federation token")
			}
			switch {
			case rt.doc.mcp:
				mcpOperation(op, responses, m)
			case rt.doc.jsonrpc:
				chainRPCOperation(op, responses, m)
			case rt.doc.text:
				responses["200"] = map[string]any{"description": "OK", "content": map[string]any{
					"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}}
			case rt.op != nil && rt.op.Output() == reflect.TypeFor[*app.Stream]():
				responses[strconv.Itoa(rt.op.Info().SuccessStatus())] = map[string]any{"description": "A stream of bytes", "content": map[string]any{
					"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}}
			case rt.op != nil:
				responses[strconv.Itoa(rt.op.Info().SuccessStatus())] = map[string]any{"description": http.StatusText(rt.op.Info().SuccessStatus()),
					"content": map[string]any{"application/json": map[string]any{"schema": g.Of(rt.op.Output())}}}
				if body := rt.op.Input().InputSchema(g, app.SurfaceREST); body != nil {
					op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
						"application/json": map[string]any{"schema": body}}}
				}
			default:
				responses["200"] = map[string]any{"description": "OK", "content": map[string]any{
					"application/json": map[string]any{"schema": g.Of(reflect.TypeOf(rt.doc.resp))}}}
			}
			op["responses"] = responses
			item[strings.ToLower(m)] = op
		}
	}
	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":   "crow gateway",
			"version": s.app.Self().Version,
			"description": "The HTTP API of one crow instance: REST under /v1, MCP over streamable HTTP at /mcp and /router/mcp, " +
				"the embedded chain's read-only JSON-RPC at /v1/chain/rpc, " +
				"health and Prometheus metrics. Every route needs the owner API key ($CROW_HOME/api-key) as " +
				"`Authorization: Bearer KEY` or `x-api-key: KEY` unless its security list is empty. Errors are " +
				"`{\"error\": \"…\"}`. Request bodies are capped (256 KiB REST, 1 MiB MCP); unknown query parameters and " +
				"unknown body fields are refused with 400.",
		},
		"servers":  []any{map[string]any{"url": "http://127.0.0.1:3001", "description": "the default listen address"}},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"apiKey": []any{}}},
		"paths":    paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "the owner API key"},
				"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-api-key", "description": "the owner API key"},
			},
			"schemas": g.Defs(),
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("gateway: encoding the OpenAPI document: " + err.Error()) // only maps, slices and strings: cannot fail
	}
	return b
}

// mcpOperation describes one method of the MCP streamable-HTTP transport.
func mcpOperation(op, responses map[string]any, method string) {
	rpc := map[string]any{
		"type":     "object",
		"required": []string{"jsonrpc"},
		"properties": map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"id":      map[string]any{"type": []string{"string", "integer"}},
			"method":  map[string]any{"type": "string"},
			"params":  map[string]any{"type": "object"},
			"result":  map[string]any{"type": "object"},
			"error":   map[string]any{"type": "object"},
		},
	}
	sessionHeader := map[string]any{"name": "Mcp-Session-Id", "in": "header", "schema": map[string]any{"type": "string"},
		"description": "the session id the initialize answer set"}
	stream := map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}
	switch method {
	case http.MethodPost:
		op["description"] = "A JSON-RPC 2.0 message of the Model Context Protocol (initialize, tools/list, tools/call, …)."
		op["parameters"] = []any{sessionHeader}
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": rpc}}}
		responses["200"] = map[string]any{"description": "The JSON-RPC answer (or an event stream of them)", "content": map[string]any{
			"application/json": map[string]any{"schema": rpc}, "text/event-stream": stream["text/event-stream"]}}
		responses["202"] = map[string]any{"description": "A notification or response was accepted"}
	case http.MethodGet:
		op["description"] = "Opens the server-to-client event stream of a session."
		op["parameters"] = []any{sessionHeader}
		responses["200"] = map[string]any{"description": "Server-sent events", "content": stream}
	case http.MethodDelete:
		op["description"] = "Ends a session."
		op["parameters"] = []any{sessionHeader}
		responses["200"] = map[string]any{"description": "The session is closed"}
	}
}

// operationID names an operation after its method and path, e.g.
// get_v1_memory_id.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}")
		if seg == "" {
			continue
		}
		b.WriteByte('_')
		b.WriteString(strings.NewReplacer("-", "_", ".", "_").Replace(seg))
	}
	return b.String()
}

// opQueryDocs are the OpenAPI parameter objects of an operation's query
// fields.
func opQueryDocs(g *app.SchemaGen, op app.Op) []any {
	var out []any
	in := op.Input()
	for i := range in.Fields {
		f := &in.Fields[i]
		if f.In != app.InQuery {
			continue
		}
		sch := f.Schema(g, app.SurfaceREST)
		desc, _ := sch["description"].(string)
		delete(sch, "description")
		d := map[string]any{"name": f.RESTName, "in": "query", "schema": sch, "description": desc}
		if f.Required {
			d["required"] = true
		}
		if sch["type"] == "array" {
			d["style"], d["explode"] = "form", true
		}
		out = append(out, d)
	}
	return out
}
