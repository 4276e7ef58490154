package state

// ItemRef names one item of a state and its provenance: what an auditor
// needs to recompute the item's evidence root.
type ItemRef struct {
	List string // the state's list: "decisions", "milestones", …
	ID   string // dec_0001, …
	Provenance
}

// Items returns every item of s with its provenance, list by list in the
// order of the state's JSON, each list in its order.
func Items(s State) []ItemRef {
	var out []ItemRef
	add := func(list, id string, p Provenance) { out = append(out, ItemRef{List: list, ID: id, Provenance: p}) }
	for _, x := range s.Decisions {
		add("decisions", x.ID, x.Provenance)
	}
	for _, x := range s.Milestones {
		add("milestones", x.ID, x.Provenance)
	}
	for _, x := range s.Risks {
		add("risks", x.ID, x.Provenance)
	}
	for _, x := range s.Assumptions {
		add("assumptions", x.ID, x.Provenance)
	}
	for _, x := range s.OpenQuestions {
		add("open_questions", x.ID, x.Provenance)
	}
	for _, x := range s.Priorities {
		add("priorities", x.ID, x.Provenance)
	}
	for _, x := range s.Constraints {
		add("constraints", x.ID, x.Provenance)
	}
	for _, x := range s.Vision {
		add("vision", x.ID, x.Provenance)
	}
	for _, x := range s.Vocabulary {
		add("vocabulary", x.ID, x.Provenance)
	}
	for _, x := range s.Metrics {
		add("metrics", x.ID, x.Provenance)
	}
	return out
}
