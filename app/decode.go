package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// DecodeArgs reads an MCP call's arguments (a JSON object; empty means {})
// into a new value of the input type and returns a pointer to it. Unknown
// arguments and wrong JSON types are refused with a message naming the
// argument.
func (in *Input) DecodeArgs(raw json.RawMessage) (reflect.Value, error) {
	ptr := reflect.New(in.Type)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := in.rejectKeys(raw, SurfaceMCP); err != nil {
		return ptr, err
	}
	if err := decodeStrict(raw, ptr.Interface(), SurfaceMCP); err != nil {
		return ptr, err
	}
	if err := in.checkGivenZeros(ptr.Elem(), objectKeys(raw), SurfaceMCP); err != nil {
		return ptr, err
	}
	return ptr, nil
}

// objectKeys reports which keys of the JSON object raw hold a value other
// than null (none when raw is not an object).
// raw is parsed at the first question, if any is asked: most inputs have no field
// checkGivenZeros asks about (a memory's importance is a pointer), and the parse was
// 2 % of home's CPU while it took single-memory writes.
func objectKeys(raw []byte) func(f *Field) bool {
	var keys map[string]json.RawMessage
	parsed := false
	return func(f *Field) bool {
		if !parsed {
			parsed = true
			if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &keys) != nil {
				keys = nil
			}
		}
		v, ok := keys[f.Name]
		return ok && string(bytes.TrimSpace(v)) != "null"
	}
}

// checkGivenZeros refuses a whole number given explicitly as 0 to a
// non-pointer field whose range excludes 0. check cannot tell it from an
// absent field (whose zero value means "the default"), so the decoders,
// which see what was given, ask this.
func (in *Input) checkGivenZeros(v reflect.Value, given func(f *Field) bool, s Surface) error {
	for i := range in.Fields {
		f := &in.Fields[i]
		if f.Type.Kind() == reflect.Pointer || !isInt(f.Type) || !v.FieldByIndex(f.Index).IsZero() || !given(f) {
			continue
		}
		if (f.Min != nil && *f.Min > 0) || (f.Max != nil && *f.Max < 0) {
			return Invalidf("%s must be %s, got 0", f.NameOn(s), f.rangeText())
		}
	}
	return nil
}

// rejectKeys refuses keys of a JSON object that name fields the surface does
// not carry there: non-MCP fields on MCP; path and query fields in a REST body.
func (in *Input) rejectKeys(raw []byte, s Surface) error {
	var bad []string
	for i := range in.Fields {
		f := &in.Fields[i]
		if (s == SurfaceMCP && !f.MCP) || (s == SurfaceREST && f.In != InBody) {
			bad = append(bad, f.Name)
		}
	}
	if len(bad) == 0 || raw[0] != '{' {
		return nil
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return nil // decodeStrict says what is wrong
	}
	for _, k := range sortedKeys(keys) {
		if contains(bad, k) {
			if s == SurfaceMCP {
				return Invalidf("unknown argument %q; the tool's input schema lists the accepted ones", k)
			}
			return Invalidf("unknown field %q in the request body (it is given in the path or query)", k)
		}
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// decodeStrict decodes exactly one JSON value into dst, refusing unknown
// fields and trailing data, with messages in JSON terms.
func decodeStrict(raw []byte, dst any, s Surface) error {
	what, whole := "field", "request body"
	if s == SurfaceMCP {
		what, whole = "argument", "arguments"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return Invalidf("%s is empty; a JSON object is required", whole)
		case errors.As(err, &syntax):
			return Invalidf("malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
		case errors.As(err, &typ) && typ.Field != "":
			return Invalidf("%s %q must be %s, got a JSON %s", what, typ.Field, JSONKind(typ.Type), typ.Value)
		case errors.As(err, &typ):
			return Invalidf("%s must be %s, got a JSON %s", whole, JSONKind(typ.Type), typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return Invalidf("malformed JSON: unexpected end of %s", whole)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			if s == SurfaceMCP {
				return Invalidf("unknown argument %s; the tool's input schema lists the accepted ones",
					strings.TrimPrefix(err.Error(), "json: unknown field "))
			}
			return Invalidf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return Invalidf("malformed JSON: %s", err.Error())
		}
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Invalidf("%s must hold a single JSON object", whole)
	}
	return nil
}

// JSONKind names what a Go type accepts in JSON, for messages a client can
// act on (never a Go type name).
func JSONKind(t reflect.Type) string {
	t = base(t)
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		if t == rawJSONType {
			return "a JSON value"
		}
		return "a JSON array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a valid JSON value"
}

// REST is what a REST request carries: the route's path values, the query
// string and the body (nil when empty).
type REST struct {
	Method string
	Path   string // the request path, for messages
	Value  func(name string) string
	Query  url.Values
	Body   []byte
}

// BindREST reads a REST request into a new value of the input type and
// returns a pointer to it: path wildcards and query parameters into their
// fields, the body (a JSON object of the body fields, or the whole-body
// field) into the rest. Unknown query parameters and body fields are
// refused.
func (in *Input) BindREST(r REST) (reflect.Value, error) {
	ptr := reflect.New(in.Type)
	v := ptr.Elem()
	if err := in.bindQuery(v, r); err != nil {
		return ptr, err
	}
	body := bytes.TrimSpace(r.Body)
	switch {
	case in.WholeBody >= 0:
		if len(body) == 0 {
			return ptr, Invalidf("request body is empty; a JSON object is required")
		}
		f := &in.Fields[in.WholeBody]
		if err := decodeStrict(body, v.FieldByIndex(f.Index).Addr().Interface(), SurfaceREST); err != nil {
			return ptr, err
		}
		if string(body) == "null" && f.Required {
			// Say it of the body: on REST the field has no name of its own.
			return ptr, Invalidf("request body must be %s, got null", JSONKind(f.Type))
		}
	case in.Body:
		if len(body) == 0 {
			if in.bodyRequired() {
				return ptr, Invalidf("request body is empty; a JSON object is required")
			}
			body = []byte("{}") // every body field is optional
		}
		if err := in.rejectKeys(body, SurfaceREST); err != nil {
			return ptr, err
		}
		if err := decodeStrict(body, ptr.Interface(), SurfaceREST); err != nil {
			return ptr, err
		}
		keys := objectKeys(body)
		if err := in.checkGivenZeros(v, func(f *Field) bool { return f.In == InBody && keys(f) }, SurfaceREST); err != nil {
			return ptr, err
		}
	case len(body) > 0 && string(body) != "{}":
		return ptr, Invalidf("%s %s takes no request body", r.Method, r.Path)
	}
	for i := range in.Fields {
		f := &in.Fields[i]
		if f.In != InPath {
			continue
		}
		if fv := v.FieldByIndex(f.Index); fv.Kind() == reflect.String {
			fv.SetString(r.Value(f.RESTName))
		} else if err := f.setQuery(fv, []string{r.Value(f.RESTName)}); err != nil {
			return ptr, err // a number in the path (memory.proof's {n}), parsed as a query value is
		}
	}
	return ptr, nil
}

// bodyRequired reports whether a REST body must be given: some body field
// is required.
func (in *Input) bodyRequired() bool {
	for i := range in.Fields {
		if f := &in.Fields[i]; (f.In == InBody || f.In == InWholeBody) && f.Required {
			return true
		}
	}
	return false
}

func (in *Input) bindQuery(v reflect.Value, r REST) error {
	if len(r.Query) == 0 {
		return nil
	}
	var names []string
	byName := map[string]*Field{}
	for i := range in.Fields {
		if f := &in.Fields[i]; f.In == InQuery {
			names = append(names, f.RESTName)
			byName[f.RESTName] = f
		}
	}
	takes := "no query parameters"
	if len(names) > 0 {
		takes = "only " + strings.Join(names, ", ")
	}
	keys := make([]string, 0, len(r.Query))
	for k := range r.Query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := byName[k]
		if f == nil {
			return Invalidf("unknown query parameter %q: %s %s takes %s", k, r.Method, r.Path, takes)
		}
		if err := f.setQuery(v.FieldByIndex(f.Index), r.Query[k]); err != nil {
			return err
		}
	}
	return in.checkGivenZeros(v, func(f *Field) bool { return f.In == InQuery && r.Query.Get(f.RESTName) != "" }, SurfaceREST)
}

// setQuery parses the values of one query parameter into fv; an empty
// value counts as absent.
func (f *Field) setQuery(fv reflect.Value, vals []string) error {
	name := f.RESTName
	t := fv.Type()
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String {
		var out []string
		for _, v := range vals {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
		fv.Set(reflect.ValueOf(out).Convert(t))
		return nil
	}
	if len(vals) > 1 {
		return Invalidf("query parameter %s is given %d times; give it once", name, len(vals))
	}
	s := vals[0]
	if s == "" {
		return nil
	}
	if t.Kind() == reflect.Pointer {
		fv.Set(reflect.New(t.Elem()))
		fv = fv.Elem()
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return Invalidf("%s must be true or false, got %q", name, s)
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Invalidf("%s must be %s, got %q", name, f.rangeText(), s)
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Invalidf("%s must be %s, got %q", name, f.rangeText(), s)
		}
		fv.SetUint(n)
	default:
		panic(fmt.Sprintf("app: query field %s has unsupported type %s", name, t))
	}
	return nil
}

// EncodeREST is BindREST's inverse, for the typed client: the request path
// (wildcards filled and escaped), the query and the body (nil: none) of in.
func (in *Input) EncodeREST(pathPattern string, v any) (path string, q url.Values, body []byte, err error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	path, q = pathPattern, url.Values{}
	for i := range in.Fields {
		f := &in.Fields[i]
		fv := rv.FieldByIndex(f.Index)
		switch f.In {
		case InPath:
			seg := fmt.Sprint(fv.Interface()) // a string or a number (memory.proof's {n})
			path = strings.Replace(path, "{"+f.RESTName+"}", url.PathEscape(seg), 1)
		case InQuery:
			if fv.IsZero() {
				continue
			}
			for fv.Kind() == reflect.Pointer {
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Slice {
				for j := 0; j < fv.Len(); j++ {
					q.Add(f.RESTName, fv.Index(j).String())
				}
				continue
			}
			q.Set(f.RESTName, fmt.Sprint(fv.Interface()))
		case InWholeBody:
			body, err = json.Marshal(fv.Interface())
			if err != nil {
				return "", nil, nil, err
			}
		}
	}
	if in.Body && in.WholeBody < 0 {
		all, err := json.Marshal(v)
		if err != nil {
			return "", nil, nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(all, &m); err != nil {
			return "", nil, nil, err
		}
		for i := range in.Fields {
			if in.Fields[i].In != InBody {
				delete(m, in.Fields[i].Name)
			}
		}
		if body, err = json.Marshal(m); err != nil {
			return "", nil, nil, err
		}
	}
	return path, q, body, nil
}
