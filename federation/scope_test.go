package federation_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/crow-sync/crow/federation"
)

func TestParseScope(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want federation.Scope
	}{
		{"", federation.Scope{Local: true}},
		{" local ", federation.Scope{Local: true}},
		{"all", federation.Scope{Local: true, Remote: true}},
		{"self", federation.Scope{Local: true}},
		{"local,self", federation.Scope{Local: true}},
		{"b", federation.Scope{Remote: true, Targets: []string{"b"}}},
		{"b, local ,c,", federation.Scope{Local: true, Remote: true, Targets: []string{"b", "c"}}},
		{"self,b", federation.Scope{Local: true, Remote: true, Targets: []string{"b"}}},
	} {
		got, err := federation.ParseScope(tc.in, "self")
		if err != nil || got.Local != tc.want.Local || got.Remote != tc.want.Remote || !slices.Equal(got.Targets, tc.want.Targets) {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{",", " , ,"} {
		if _, err := federation.ParseScope(in, "self"); !errors.Is(err, federation.ErrBadScope) {
			t.Errorf("ParseScope(%q) = %v, want ErrBadScope", in, err)
		}
	}
}
