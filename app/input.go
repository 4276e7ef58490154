package app

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Location is where a REST request carries an input field. MCP carries
// every field (but those tagged mcp:"-") as an argument of the call.
type Location int

const (
	InBody      Location = iota // a key of the JSON body object (the default)
	InPath                      // a {wildcard} of the route path
	InQuery                     // a query parameter
	InWholeBody                 // the whole JSON body is this field (e.g. a row's data)
	InNone                      // not on REST (in:"-")
)

// Field is one input field, read from its struct tags:
//
//	json:"name"            the MCP argument and JSON body key
//	in:"path" | in:"query" | in:"query,name=q" | in:"body" | in:"-"
//	                       where REST carries it (default: a body key); name= renames it on REST
//	mcp:"-"                not an MCP argument
//	route:"-"              not an argument on /router/mcp (instance_id selects what it would)
//	desc:"…"               the description in the schemas
//	required:"true"        must be given (a string: not blank)
//	min:"1" max:"10"       bounds of a whole number
//	minlen:"1" maxlen:"64" length of a string in bytes
//	maxitems:"32"          length of a list
//	itemminlen, itemmaxlen length of each string of a list
//	enum:"a,b"             the accepted values of a string
//	default:"20"           the JSON value used when absent (both surfaces)
//	mcpdefault:"true"      the default on MCP only (REST keeps the zero value)
//
// The limits live here, once: REST, MCP, the OpenAPI document, the MCP input
// schemas and the typed client all read them.
type Field struct {
	Name     string
	RESTName string
	In       Location
	MCP      bool
	// Routed is false for a field /router/mcp leaves out (route:"-").
	Routed     bool
	Index      []int
	Type       reflect.Type
	Desc       string
	Required   bool
	Min, Max   *int64
	MinLen     int
	MaxLen     int
	MaxItems   int
	ItemMinLen int
	ItemMaxLen int
	Enum       []string
	Default    string
	MCPDefault string
}

// NameOn is the field's name on a surface.
func (f *Field) NameOn(s Surface) string {
	if s == SurfaceREST {
		return f.RESTName
	}
	return f.Name
}

// Input describes an operation's input type.
type Input struct {
	Type   reflect.Type
	Fields []Field
	// Body is true when REST carries some field in the body.
	Body bool
	// WholeBody is the index of the InWholeBody field, or -1.
	WholeBody int
}

var inputCache sync.Map // reflect.Type → *Input

// InputOf describes t (a struct type); it panics on a malformed tag, which
// the table's tests catch at once.
func InputOf(t reflect.Type) *Input {
	if v, ok := inputCache.Load(t); ok {
		return v.(*Input)
	}
	in := &Input{Type: t, WholeBody: -1}
	collectFields(t, nil, in)
	for i, f := range in.Fields {
		switch f.In {
		case InBody:
			in.Body = true
		case InWholeBody:
			in.Body = true
			in.WholeBody = i
		}
	}
	inputCache.Store(t, in)
	return in
}

func collectFields(t reflect.Type, index []int, in *Input) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			collectFields(sf.Type, idx, in)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := Field{Name: name, RESTName: name, MCP: sf.Tag.Get("mcp") != "-", Routed: sf.Tag.Get("route") != "-", Index: idx, Type: sf.Type,
			Desc: sf.Tag.Get("desc"), Required: sf.Tag.Get("required") == "true",
			Default: sf.Tag.Get("default"), MCPDefault: sf.Tag.Get("mcpdefault")}
		loc, opts, _ := strings.Cut(sf.Tag.Get("in"), ",")
		switch loc {
		case "", "json":
			f.In = InBody
		case "path":
			f.In = InPath
		case "query":
			f.In = InQuery
		case "body":
			f.In = InWholeBody
		case "-":
			f.In = InNone
		default:
			panic(fmt.Sprintf("app: field %s: unknown in:%q", name, loc))
		}
		if n, ok := strings.CutPrefix(opts, "name="); ok {
			f.RESTName = n
		}
		f.Min = tagInt(sf, "min")
		f.Max = tagInt(sf, "max")
		f.MinLen = tagIntOr(sf, "minlen")
		f.MaxLen = tagIntOr(sf, "maxlen")
		f.MaxItems = tagIntOr(sf, "maxitems")
		f.ItemMinLen = tagIntOr(sf, "itemminlen")
		f.ItemMaxLen = tagIntOr(sf, "itemmaxlen")
		if e := sf.Tag.Get("enum"); e != "" {
			f.Enum = strings.Split(e, ",")
		}
		in.Fields = append(in.Fields, f)
	}
}

func tagInt(sf reflect.StructField, key string) *int64 {
	v := sf.Tag.Get(key)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("app: field %s: bad %s:%q", sf.Name, key, v))
	}
	return &n
}

func tagIntOr(sf reflect.StructField, key string) int {
	if p := tagInt(sf, key); p != nil {
		return int(*p)
	}
	return 0
}

// base is t without pointers.
func base(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isInt reports whether t (without pointers) is a whole-number kind.
func isInt(t reflect.Type) bool {
	switch base(t).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// rangeText says which whole numbers f accepts.
func (f *Field) rangeText() string {
	switch {
	case f.Min != nil && f.Max != nil:
		return fmt.Sprintf("a whole number from %d to %d", *f.Min, *f.Max)
	case f.Min != nil:
		return fmt.Sprintf("a whole number of at least %d", *f.Min)
	case f.Max != nil:
		return fmt.Sprintf("a whole number of at most %d", *f.Max)
	}
	if base(f.Type).Kind() >= reflect.Uint && base(f.Type).Kind() <= reflect.Uint64 {
		return "a whole number of at least 0"
	}
	return "a whole number"
}

// applyDefaults sets absent fields of v (a struct value) to their default on
// surface s.
func (in *Input) applyDefaults(v reflect.Value, s Surface) error {
	for i := range in.Fields {
		f := &in.Fields[i]
		def := f.Default
		if s == SurfaceMCP && f.MCPDefault != "" {
			def = f.MCPDefault
		}
		if def == "" {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		if !fv.IsZero() {
			continue
		}
		if err := json.Unmarshal([]byte(def), fv.Addr().Interface()); err != nil {
			return fmt.Errorf("app: default of %s: %w", f.Name, err)
		}
	}
	return nil
}

// check validates v's fields against their tags; messages name the fields
// as surface s does.
func (in *Input) check(v reflect.Value, s Surface) error {
	for i := range in.Fields {
		f := &in.Fields[i]
		if (s == SurfaceMCP && !f.MCP) || (s == SurfaceREST && f.In == InNone) {
			continue
		}
		if err := f.check(v.FieldByIndex(f.Index), f.NameOn(s)); err != nil {
			return err
		}
	}
	return nil
}

func (f *Field) check(fv reflect.Value, name string) error {
	isNil := (fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil()
	if f.Required {
		blank := isNil
		if fv.Kind() == reflect.String {
			blank = strings.TrimSpace(fv.String()) == ""
		}
		if fv.Kind() == reflect.Slice && fv.Len() == 0 {
			blank = true
		}
		if blank {
			if f.Desc != "" {
				return Invalidf("%s is required: %s", name, lowerFirst(f.Desc))
			}
			return Invalidf("%s is required", name)
		}
	}
	if isNil || (fv.Kind() != reflect.Pointer && fv.IsZero()) {
		return nil // absent (a non-pointer field's zero value counts as absent)
	}
	for fv.Kind() == reflect.Pointer {
		fv = fv.Elem()
	}
	switch fv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := fv.Int()
		if (f.Min != nil && n < *f.Min) || (f.Max != nil && n > *f.Max) {
			return Invalidf("%s must be %s, got %d", name, f.rangeText(), n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := fv.Uint()
		if (f.Min != nil && *f.Min > 0 && n < uint64(*f.Min)) || (f.Max != nil && n > uint64(*f.Max)) {
			return Invalidf("%s must be %s, got %d", name, f.rangeText(), n)
		}
	case reflect.String:
		if err := f.checkString(fv.String(), name, f.MinLen, f.MaxLen); err != nil {
			return err
		}
		if f.Enum != nil && fv.String() != "" && !contains(f.Enum, fv.String()) {
			return Invalidf("%s must be %s, got %q", name, orList(f.Enum), fv.String())
		}
	case reflect.Slice:
		if f.MaxItems > 0 && fv.Len() > f.MaxItems {
			return Invalidf("%s may hold at most %d items, got %d", name, f.MaxItems, fv.Len())
		}
		if fv.Type().Elem().Kind() == reflect.String {
			for j := 0; j < fv.Len(); j++ {
				if err := f.checkString(fv.Index(j).String(), fmt.Sprintf("%s[%d]", name, j), f.ItemMinLen, f.ItemMaxLen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (f *Field) checkString(s, name string, minLen, maxLen int) error {
	if minLen > 0 && len(s) < minLen {
		if minLen == 1 {
			return Invalidf("%s must not be empty", name)
		}
		return Invalidf("%s must be at least %d bytes long", name, minLen)
	}
	if maxLen > 0 && len(s) > maxLen {
		return Invalidf("%s must be at most %d bytes long, got %d", name, maxLen, len(s))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// orList is "a or b" / "a, b or c".
func orList(vals []string) string {
	if len(vals) < 2 {
		return strings.Join(vals, "")
	}
	return strings.Join(vals[:len(vals)-1], ", ") + " or " + vals[len(vals)-1]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + strings.TrimSuffix(s[1:], ".")
}
