package projects

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crow-sync/crow/store"
)

// Limits of the projects table.
const (
	// MaxDescriptionBytes bounds a project's description.
	MaxDescriptionBytes = 2000
	// MaxListedRows is how many rows of the projects table List reads (the
	// store's page limit); projects known only from memories are listed
	// beyond it.
	MaxListedRows = 1000
)

// Info is one entry of the project list (GET /v1/projects). JSON field
// names are part of the REST API.
type Info struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Memories    int    `json:"memories"`
	// StateVersion and StateHash are the newest state version's (0 and "" if none).
	StateVersion uint64 `json:"state_version"`
	StateHash    string `json:"state_hash"`
}

// List is the answer of GET /v1/projects.
type List struct {
	Projects []Info `json:"projects"`
}

// CreateInput is the body of POST /v1/projects: a project's name and
// description. It is also the data of a projects row.
type CreateInput struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Validate checks the name (ValidProject) and the description's length; the
// error wraps ErrInvalid.
func (in CreateInput) Validate() error {
	if err := ValidProject(in.Name); err != nil {
		return err
	}
	if len(in.Description) > MaxDescriptionBytes {
		return fmt.Errorf("%w: description is longer than %d bytes", ErrInvalid, MaxDescriptionBytes)
	}
	return nil
}

// List returns every project, sorted by name: those of the projects table
// (with their descriptions) and those that only memories name, each with
// its live memory count (memories: per project, as memory.Service.Count
// gives them) and its newest state version.
func (s *Service) List(memories map[string]int) (List, error) {
	byName := map[string]*Info{}
	for name, n := range memories {
		byName[name] = &Info{Name: name, Memories: n}
	}
	rows, _, err := s.db.List(store.TableProjects, store.ListOptions{Limit: MaxListedRows})
	if err != nil {
		return List{}, fmt.Errorf("listing projects: %w", err)
	}
	for _, row := range rows {
		var p CreateInput
		if json.Unmarshal(row.Data, &p) != nil {
			continue
		}
		in := byName[row.RowID]
		if in == nil {
			in = &Info{Name: row.RowID}
			byName[row.RowID] = in
		}
		in.Description = p.Description
	}
	out := List{Projects: make([]Info, 0, len(byName))}
	for _, in := range byName {
		if v, err := s.Latest(in.Name); err == nil {
			in.StateVersion, in.StateHash = v.Version, v.StateHash
		}
		out.Projects = append(out.Projects, *in)
	}
	slices.SortFunc(out.Projects, func(a, b Info) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Create writes (or rewrites) the projects row of in.Name, after
// validating in (errors wrap ErrInvalid).
func (s *Service) Create(ctx context.Context, in CreateInput) (Info, error) {
	if err := in.Validate(); err != nil {
		return Info{}, err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return Info{}, err
	}
	if _, err := s.w.Write(ctx, store.Mutation{Table: store.TableProjects, RowID: in.Name, Op: store.OpPut, Data: data}); err != nil {
		return Info{}, fmt.Errorf("writing project %s: %w", in.Name, err)
	}
	return Info{Name: in.Name, Description: in.Description}, nil
}
