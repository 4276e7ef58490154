package app

import (
	"context"
	"errors"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
)

// ChainReader reads state anchors on chain (package anchor's Chain).
type ChainReader = anchor.ChainReader

// Verification is the answer of the verification operations (package
// anchor owns the verdicts).
type Verification = anchor.Report

// VerifyIn is the input of project.anchor.
type VerifyIn struct {
	Project string `json:"project" in:"path,name=name" required:"true" desc:"The project name."`
	Version uint64 `json:"version,omitempty" in:"query" min:"1" max:"1000000000" desc:"the state version (default: the newest)"`
}

var (
	ProjectAnchor = define(&Def[VerifyIn, Verification]{
		Spec: Spec{Name: "project.anchor", Method: "GET", Path: "/v1/project/{name}/state/anchor", Access: Public, Tag: "projects", ReadOnly: true,
			Summary: "Is this state version anchored, and does the on-chain hash match? (public)"},
		Impl: func(a *App, ctx context.Context, in VerifyIn) (Verification, error) {
			v, err := a.verifier()
			if err != nil {
				return Verification{}, err
			}
			r, err := v.VerifyVersion(ctx, in.Project, in.Version)
			return r, verifyError(in.Project, err)
		},
	})
	ProjectVerify = define(&Def[ProjectName, Verification]{
		Spec: Spec{Name: "project.verify", Method: "GET", Path: "/v1/verify/{name}", Access: Public, Tag: "projects", ReadOnly: true,
			Summary: "Verify every state version of a project against the chain (public)"},
		Impl: func(a *App, ctx context.Context, in ProjectName) (Verification, error) {
			v, err := a.verifier()
			if err != nil {
				return Verification{}, err
			}
			r, err := v.VerifyProject(ctx, in.Project)
			return r, verifyError(in.Project, err)
		},
	})
)

// verifier is the anchor Verifier over this instance's parts; an instance
// that keeps no project state has none.
func (a *App) verifier() (anchor.Verifier, error) {
	if a.d.Projects == nil || a.d.ProjectID == nil || a.d.DB == nil {
		return anchor.Verifier{}, Errorf(KindNotFound, "this gateway keeps no project state")
	}
	return anchor.Verifier{DB: a.d.DB, Chain: a.d.Chain, ProjectID: a.d.ProjectID, Versions: a.d.Projects}, nil
}

func verifyError(project string, err error) error {
	if errors.Is(err, projects.ErrNoState) {
		return noState(project, err)
	}
	return err
}
