package state

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits. A request or op beyond them is refused; an op is refused with a message naming
// the field and the limit. Lengths are counted in Unicode code points.
const (
	MaxOpsPerRequest   = 100       // ops in one Request; more refuses the whole request
	MaxOpBytes         = 64 << 10  // bytes of one op's JSON
	MaxTitleLen        = 200       // title (decisions, milestones, risks, assumptions, questions, priorities, constraints)
	MaxTextLen         = 2000      // statement, answer, definition, vision statement
	MaxPhaseLen        = 100       // phase
	MaxFocusLen        = 500       // current_focus
	MaxNameLen         = 100       // vocabulary term, metric name
	MaxValueLen        = 200       // metric value and target
	MaxUnitLen         = 32        // metric unit
	MaxIDLen           = 32        // an item id given in an op
	MaxEvidencePerOp   = 100       // evidence_memory_ids in one op
	MaxEvidencePerItem = 1000      // evidence_memory_ids an item accumulates
	MaxItemsPerList    = 10000     // items in one list of the state
	MaxRank            = 1000      // a priority's rank is 1…MaxRank
	maxQuoted          = 64        // bytes of user input quoted back in an error
	maxMemoryNumber    = 1<<53 - 1 // a memory number must stay an exact JSON integer
)

// problems collects validation failures so that one message reports all of them.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(p, "; "))
}

// line checks a required one-line string.
func (p *problems) line(field, v string, max int) {
	if strings.TrimSpace(v) == "" {
		p.add("%s is missing or blank", field)
		return
	}
	p.optionalLine(field, v, max)
}

// optionalLine checks a one-line string that may be "".
func (p *problems) optionalLine(field, v string, max int) {
	p.textOf(field, v, max, func(r rune) bool { return unicode.IsControl(r) }, "a control character; it must be one line")
}

// text checks a multi-line string: tabs and line breaks are allowed, other control
// characters are not.
func (p *problems) text(field, v string, max int, required bool) {
	if required && strings.TrimSpace(v) == "" {
		p.add("%s is missing or blank", field)
		return
	}
	bad := func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }
	p.textOf(field, v, max, bad, "a control character other than tab and line breaks")
}

func (p *problems) textOf(field, v string, max int, bad func(rune) bool, what string) {
	if !utf8.ValidString(v) {
		p.add("%s is not valid UTF-8", field)
		return
	}
	if n := utf8.RuneCountInString(v); n > max {
		p.add("%s is %d characters long; at most %d", field, n, max)
	}
	if i := strings.IndexFunc(v, bad); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		p.add("%s contains %U, %s", field, r, what)
	}
}

// id checks a required item id.
func (p *problems) id(field, v string) {
	switch {
	case v == "":
		p.add("%s is missing or empty", field)
	case len(v) > MaxIDLen:
		p.add("%s is %d bytes long; item ids are at most %d", field, len(v), MaxIDLen)
	}
}

// enum checks that v is one of allowed.
func (p *problems) enum(field, v string, allowed ...string) {
	if v == "" {
		p.add("%s is missing or empty; one of %s", field, strings.Join(allowed, ", "))
	} else if !slices.Contains(allowed, v) {
		p.add("%s must be one of %s, not %q", field, strings.Join(allowed, ", "), quote(v))
	}
}

// evidence checks evidence_memory_ids; an adding op requires at least one.
func (p *problems) evidence(ids []uint64, required bool) {
	const f = "evidence_memory_ids"
	switch {
	case required && len(ids) == 0:
		p.add("%s is missing or empty: cite at least one memory", f)
		return
	case len(ids) > MaxEvidencePerOp:
		p.add("%s has %d numbers; at most %d", f, len(ids), MaxEvidencePerOp)
		return
	}
	for _, n := range ids {
		if n == 0 {
			p.add("%s: memory numbers start at 1, not 0", f)
			return
		}
		if n > maxMemoryNumber {
			p.add("%s: %d is not a memory number (above 2^53-1)", f, n)
			return
		}
	}
}

// quote shortens user input quoted back in an error message.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
