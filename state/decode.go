package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// op is one decoded op of the grammar. check validates its fields alone; apply validates it
// against the state being built and, only if it is valid, changes that state. apply returns
// the id of the item it added or changed ("" for set_focus and set_phase).
type op interface {
	check() error
	apply(b *builder) (itemID string, err error)
}

// opTypes is the closed grammar: op name → a new, empty op. The fields of each op are its
// struct's json tags.
var opTypes = map[string]func() op{
	"add_decision":          func() op { return new(addDecision) },
	"set_decision_status":   func() op { return new(setDecisionStatus) },
	"supersede_decision":    func() op { return new(supersedeDecision) },
	"add_milestone":         func() op { return new(addMilestone) },
	"set_milestone_status":  func() op { return new(setMilestoneStatus) },
	"add_risk":              func() op { return new(addRisk) },
	"set_risk_status":       func() op { return new(setRiskStatus) },
	"set_focus":             func() op { return new(setFocus) },
	"set_phase":             func() op { return new(setPhase) },
	"add_assumption":        func() op { return new(addAssumption) },
	"invalidate_assumption": func() op { return new(invalidateAssumption) },
	"add_open_question":     func() op { return new(addOpenQuestion) },
	"answer_open_question":  func() op { return new(answerOpenQuestion) },
	"add_priority":          func() op { return new(addPriority) },
	"set_priority_status":   func() op { return new(setPriorityStatus) },
	"add_constraint":        func() op { return new(addConstraint) },
	"remove_constraint":     func() op { return new(removeConstraint) },
	"set_vision":            func() op { return new(setVision) },
	"add_vocabulary":        func() op { return new(addVocabulary) },
	"set_metric":            func() op { return new(setMetric) },
}

// opField describes one field of an op, from its struct field.
type opField struct {
	name string
	kind string // what the JSON value must be, for error messages
}

var (
	opNames  []string             // sorted
	opFields map[string][]opField // op name → fields in struct order
)

func init() {
	opFields = make(map[string][]opField, len(opTypes))
	for name, mk := range opTypes {
		opNames = append(opNames, name)
		t := reflect.TypeOf(mk()).Elem()
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			opFields[name] = append(opFields[name], opField{tag, kindOf(f.Type)})
		}
	}
	slices.Sort(opNames)
}

func kindOf(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Pointer:
		return kindOf(t.Elem())
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Int:
		return "an integer"
	case t == reflect.TypeFor[[]uint64]():
		return "a list of memory numbers (positive integers)"
	}
	panic("state: op field of unsupported type " + t.String())
}

// OpNames returns the ops of the grammar, sorted.
func OpNames() []string { return slices.Clone(opNames) }

// OpFields returns the fields an op accepts besides "op", in the order the package doc
// lists them, or nil for an unknown op.
func OpFields(op string) []string {
	var names []string
	for _, f := range opFields[op] {
		names = append(names, f.name)
	}
	return names
}

// decodeOp decodes and checks one op: a JSON object with a known "op" and only that op's
// fields, none of them twice or null, each of the right type, then the op's own checks.
func decodeOp(raw json.RawMessage) (string, op, error) {
	if len(raw) > MaxOpBytes {
		return "", nil, fmt.Errorf("op is %d bytes of JSON; at most %d", len(raw), MaxOpBytes)
	}
	members, err := objectMembers(raw)
	if err != nil {
		return "", nil, err
	}
	nameRaw, ok := members["op"]
	if !ok {
		return "", nil, fmt.Errorf(`missing "op"; one of %s`, strings.Join(opNames, ", "))
	}
	var name string
	if err := json.Unmarshal(nameRaw, &name); err != nil {
		return "", nil, errors.New(`"op" must be a string`)
	}
	mk, ok := opTypes[name]
	if !ok {
		return "", nil, fmt.Errorf("unknown op %q; one of %s", quote(name), strings.Join(opNames, ", "))
	}
	fields := opFields[name]
	var p problems
	for _, m := range sortedKeys(members) {
		if m == "op" {
			continue
		}
		if !slices.ContainsFunc(fields, func(f opField) bool { return f.name == m }) {
			p.add("unknown field %q for %s (its fields: %s)", quote(m), name, strings.Join(OpFields(name), ", "))
		} else if string(members[m]) == "null" {
			p.add("%s is null; omit it or give a value", m)
		}
	}
	if err := p.err(); err != nil {
		return name, nil, err
	}
	o := mk()
	if err := json.Unmarshal(raw, o); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field, _, _ := strings.Cut(te.Field, ".")
			for _, f := range fields {
				if f.name == field {
					return name, nil, fmt.Errorf("%s must be %s, not %s", field, f.kind, quote(te.Value))
				}
			}
		}
		return name, nil, fmt.Errorf("decoding %s: %w", name, err)
	}
	if err := o.check(); err != nil {
		return name, nil, err
	}
	return name, o, nil
}

// objectMembers splits a JSON object into its members, refusing anything else, duplicate
// member names and trailing data.
func objectMembers(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("op is not valid JSON: %w", err)
		}
		return nil, errors.New("op must be a JSON object")
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("op is not valid JSON: %w", err)
		}
		key := tok.(string) // the decoder only yields strings as member names
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("op is not valid JSON: %w", err)
		}
		if _, dup := members[key]; dup {
			return nil, fmt.Errorf("field %q appears twice", quote(key))
		}
		members[key] = v
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, fmt.Errorf("op is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("op is not valid JSON: data after the object")
	}
	return members, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
