package gateway

import (
	"encoding/json"
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// schemaGen derives JSON Schemas (draft 2020-12, the dialect of OpenAPI 3.1)
// from the Go types the handlers encode and decode, so the document describes
// exactly what encoding/json reads and writes. Named struct types become
// components (#/components/schemas/<pkg>.<Name>); the rest is inlined.
type schemaGen struct {
	defs map[string]any
	// refPrefix is where defs live: the OpenAPI components, or "#/$defs/"
	// in a self-contained schema (mcpOutputSchema).
	refPrefix string
}

func newSchemaGen() *schemaGen {
	return &schemaGen{defs: map[string]any{}, refPrefix: "#/components/schemas/"}
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawJSONType   = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// schemaOf returns the schema of v's type.
func (g *schemaGen) schemaOf(v any) map[string]any { return g.schema(reflect.TypeOf(v)) }

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawJSONType:
		return map[string]any{"description": "any JSON value"}
	}
	if t.Kind() == reflect.String && t.Implements(marshalerType) {
		// A string type with its own encoding (state.NullString: "" is null).
		return map[string]any{"type": []string{"string", "null"}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(g.schema(t.Elem()))
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name := path.Base(t.PkgPath()) + "." + t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = map[string]any{} // reserve the name (recursive types)
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": g.refPrefix + name}
	}
	return map[string]any{} // interfaces: any JSON value
}

// object describes a struct as encoding/json sees it: exported fields under
// their json names, embedded structs flattened, omitempty fields optional.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	g.fields(t, props, &required)
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}

// nullable lets s also be null (a Go pointer).
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		c := make(map[string]any, len(s))
		for k, v := range s {
			c[k] = v
		}
		c["type"] = []string{typ, "null"}
		return c
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// mcpOutputSchema is mcp.WithOutputSchema with this generator: a
// self-contained schema (named structs under $defs) that, unlike mcp-go's,
// describes json.RawMessage fields as any JSON value (rows' data), so
// results carrying row data validate against it.
func mcpOutputSchema[T any]() mcp.ToolOption {
	return func(t *mcp.Tool) {
		g := newSchemaGen()
		g.refPrefix = "#/$defs/"
		obj := g.object(reflect.TypeFor[T]())
		props, _ := obj["properties"].(map[string]any)
		required, _ := obj["required"].([]string)
		t.OutputSchema = mcp.ToolOutputSchema{Type: "object", Properties: props, Required: required, Defs: g.defs}
	}
}
