package app

import (
	"encoding/json"
	"path"
	"reflect"
	"strings"
	"time"
)

// SchemaGen derives JSON Schemas (draft 2020-12, the dialect of OpenAPI 3.1)
// from the Go types the handlers encode and decode, so the document describes
// exactly what encoding/json reads and writes. Named struct types become
// components (#/components/schemas/<pkg>.<Name>); the rest is inlined.
type SchemaGen struct {
	defs map[string]any
	// refPrefix is where defs live: the OpenAPI components, or "#/$defs/"
	// in a self-contained schema (mcpOutputSchema).
	refPrefix string
}

// NewSchemaGen returns a generator whose named structs go to refPrefix
// ("#/components/schemas/" for OpenAPI, "#/$defs/" for a self-contained
// schema).
func NewSchemaGen(refPrefix string) *SchemaGen {
	return &SchemaGen{defs: map[string]any{}, refPrefix: refPrefix}
}

// Defs are the named schemas referenced so far.
func (g *SchemaGen) Defs() map[string]any { return g.defs }

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawJSONType   = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// schemaOf returns the schema of v's type.
func (g *SchemaGen) Of(t reflect.Type) map[string]any { return g.schema(t) }

func (g *SchemaGen) schema(t reflect.Type) map[string]any {
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
func (g *SchemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	g.fields(t, props, &required)
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func (g *SchemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
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

// OutputSchema is the self-contained schema (named structs under $defs) of
// an operation's result, for MCP: unlike mcp-go's, it describes
// json.RawMessage fields as any JSON value (rows' data).
func OutputSchema(t reflect.Type) map[string]any {
	g := NewSchemaGen("#/$defs/")
	obj := g.object(base(t))
	if len(g.defs) > 0 {
		obj["$defs"] = g.defs
	}
	return obj
}

// ToolInputSchema is the self-contained schema (named structs under $defs)
// of an operation's MCP arguments.
func (in *Input) ToolInputSchema() map[string]any {
	g := NewSchemaGen("#/$defs/")
	sch := in.InputSchema(g, SurfaceMCP)
	if len(g.defs) > 0 {
		sch["$defs"] = g.defs
	}
	return sch
}

// InputSchema is the JSON Schema of an operation's input on a surface: for
// MCP the arguments object, for REST the body object (nil when the REST
// request has no body). Refs go to g.
func (in *Input) InputSchema(g *SchemaGen, s Surface) map[string]any {
	if s == SurfaceREST && in.WholeBody >= 0 {
		return g.schema(in.Fields[in.WholeBody].Type)
	}
	if s == SurfaceREST && !in.Body {
		return nil
	}
	props := map[string]any{}
	required := []string{}
	for i := range in.Fields {
		f := &in.Fields[i]
		if s == SurfaceMCP && !f.MCP || s == SurfaceREST && f.In != InBody {
			continue
		}
		props[f.Name] = f.Schema(g, s)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// Schema is the JSON Schema of one field's value on a surface, with its
// constraints, description and default.
func (f *Field) Schema(g *SchemaGen, s Surface) map[string]any {
	sch := map[string]any{}
	for k, v := range g.schema(base(f.Type)) {
		sch[k] = v
	}
	if isInt(f.Type) {
		if f.Min != nil {
			sch["minimum"] = *f.Min
		}
		if f.Max != nil {
			sch["maximum"] = *f.Max
		}
	}
	if f.MinLen > 0 {
		sch["minLength"] = f.MinLen
	}
	if f.MaxLen > 0 {
		sch["maxLength"] = f.MaxLen
	}
	if f.Enum != nil {
		sch["enum"] = f.Enum
	}
	if f.MaxItems > 0 {
		sch["maxItems"] = f.MaxItems
	}
	if items, ok := sch["items"].(map[string]any); ok && (f.ItemMinLen > 0 || f.ItemMaxLen > 0) {
		it := map[string]any{}
		for k, v := range items {
			it[k] = v
		}
		if f.ItemMinLen > 0 {
			it["minLength"] = f.ItemMinLen
		}
		if f.ItemMaxLen > 0 {
			it["maxLength"] = f.ItemMaxLen
		}
		sch["items"] = it
	}
	if f.Desc != "" {
		sch["description"] = f.Desc
	}
	def := f.Default
	if s == SurfaceMCP && f.MCPDefault != "" {
		def = f.MCPDefault
	}
	if def != "" {
		var v any
		if json.Unmarshal([]byte(def), &v) == nil {
			sch["default"] = v
		}
	}
	return sch
}
