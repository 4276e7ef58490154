package app

import "context"

// PromoteIn is the input of instance.promote.
type PromoteIn struct {
	Force bool `json:"force,omitempty" desc:"Promote even though the current home still answers (it is demoted when it learns of the promotion; its numbers above the base are refused everywhere)."`
}

// Promoted is the answer of instance.promote: the home record now naming
// this instance.
type Promoted struct {
	InstanceID string `json:"instance_id"`
	Name       string `json:"name"`
	// Epoch is the record's term (it only grows); Base the highest memory
	// number this instance held: it numbers from Base+1.
	Epoch uint64 `json:"epoch"`
	Base  uint64 `json:"base"`
	// PreviousHome is the id of the home it replaces ("" if none was known).
	PreviousHome string `json:"previous_home,omitempty"`
	IssuedAt     string `json:"issued_at"`
	// Restarting: the daemon restarts its parts as home right after this
	// answer.
	Restarting bool `json:"restarting"`
}

// InstancePromote is `crow instance promote` (home failover, SPEC §12).
var InstancePromote = define(&Def[PromoteIn, Promoted]{
	Spec: Spec{Name: "instance.promote", Method: "POST", Path: "/v1/instance/promote", Tool: "crow_promote_instance",
		Title: "Promote this instance to home", Tag: "instances",
		Summary: "Make this instance home when home is lost (it must hold the master seed: crow init --import)",
		Description: "Home failover: this instance, a satellite that holds the master seed (made with crow init --import), " +
			"becomes home. It signs a home record of the next epoch naming itself, with the highest memory number it holds " +
			"as the base; every instance follows the highest epoch. It then numbers every unnumbered version it holds and " +
			"goes on from base+1, consolidates and anchors; satellites forward consolidations to it; an old home that comes " +
			"back is demoted. Refused on an instance without the seed, on home, and while the current home still answers " +
			"(unless force). Returns {instance_id, name, epoch, base, previous_home, issued_at, restarting}.",
		NoRoute: true},
	Impl: func(a *App, ctx context.Context, in PromoteIn) (Promoted, error) {
		if a.d.Promote == nil {
			return Promoted{}, Errorf(KindUnavailable, "this gateway cannot promote its instance")
		}
		p, err := a.d.Promote(ctx, in.Force)
		if err != nil {
			return Promoted{}, err
		}
		a.log.Info("instance promoted to home", "epoch", p.Epoch, "base", p.Base, "previous_home", p.PreviousHome)
		return p, nil
	},
})
