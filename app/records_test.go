package app_test

import (
	"slices"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/records"
)

// TestRecordInputsAreTheSpecs pins the record inputs' tags (the schemas of
// REST and MCP) to package records' field rules, which it enforces again.
func TestRecordInputsAreTheSpecs(t *testing.T) {
	type pair struct {
		spec          *records.Spec
		create, patch app.Op
	}
	for _, p := range []pair{
		{records.Notes, app.Notes.Create, app.Notes.Update},
		{records.Sources, app.Sources.Create, app.Sources.Update},
		{records.Contacts, app.Contacts.Create, app.Contacts.Update},
		{records.BlogPosts, app.BlogPosts.Create, app.BlogPosts.Update},
		{records.Settings, app.SettingSet, nil},
	} {
		var names []string
		for _, f := range p.spec.Fields {
			names = append(names, f.Name)
			for _, op := range []app.Op{p.create, p.patch} {
				if op == nil {
					continue
				}
				in := field(t, op, f.Name)
				name := op.Info().Name + "." + f.Name
				switch f.Type {
				case records.String:
					if in.MaxLen != f.MaxLen {
						t.Errorf("%s: maxlen %d, records' %d", name, in.MaxLen, f.MaxLen)
					}
				case records.Strings:
					if in.MaxItems != f.MaxItems || in.ItemMaxLen != f.MaxLen || in.ItemMinLen != 1 {
						t.Errorf("%s: maxitems %d itemmaxlen %d, records' %d %d", name, in.MaxItems, in.ItemMaxLen, f.MaxItems, f.MaxLen)
					}
				}
				if !slices.Equal(in.Enum, f.Enum) {
					t.Errorf("%s: enum %v, records' %v", name, in.Enum, f.Enum)
				}
				// Required on create unless records fills it (a default, a slug from the title).
				wantReq := op == p.create && f.Required && f.Default == "" && f.Format != records.Slug
				if op != p.create && f.Name == p.spec.KeyField {
					wantReq = true
				}
				if in.Required != wantReq {
					t.Errorf("%s: required %v, want %v", name, in.Required, wantReq)
				}
				if f.Default != "" && op == p.create && in.Default != `"`+f.Default+`"` {
					t.Errorf("%s: default %s, records' %q", name, in.Default, f.Default)
				}
			}
		}
		// No input field that is not the table's (but id and extra).
		for _, op := range []app.Op{p.create, p.patch} {
			if op == nil {
				continue
			}
			for _, in := range op.Input().Fields {
				if !slices.Contains(names, in.Name) && in.Name != "id" && in.Name != "extra" {
					t.Errorf("%s has input %s, not a field of %s", op.Info().Name, in.Name, p.spec.Table)
				}
			}
		}
	}
	for _, name := range []string{"section", "device", "project"} {
		for _, op := range []app.Op{app.ContextSet, app.ContextGet, app.ContextDelete, app.ContextList} {
			if f := field(t, op, name); f.MaxLen != records.MaxContextPart {
				t.Errorf("%s.%s: maxlen %d, records' %d", op.Info().Name, name, f.MaxLen, records.MaxContextPart)
			}
		}
	}
	if f := field(t, app.ContextSet, "content"); f.MaxLen != records.MaxContextContent || !f.Required {
		t.Errorf("context.set.content: maxlen %d required %v", f.MaxLen, f.Required)
	}
	for _, k := range []app.Op{app.SettingGet, app.SettingDelete} {
		if f := field(t, k, "key"); f.MaxLen != records.MaxKey {
			t.Errorf("%s.key: maxlen %d", k.Info().Name, f.MaxLen)
		}
	}
	// The search's tables are the indexed ones.
	if f := field(t, app.SearchAll, "tables"); f.MaxItems < len(records.SearchTables()) {
		t.Errorf("search.all.tables: maxitems %d < %d tables", f.MaxItems, len(records.SearchTables()))
	}
}
