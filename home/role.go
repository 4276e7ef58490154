package home

import "fmt"

// SetRole changes this instance's role in instance.json (home failover:
// `crow instance promote` makes a seed holder home, and a home that learns
// of a later home becomes a satellite). Only an instance that holds the
// master seed may be home. The next EnsureCertificate issues the
// certificate of the new role. It changes Info.Role, so call it only while
// no daemon serves this Home (between two runs).
func (h *Home) SetRole(role string) error {
	if role != RoleHome && role != RoleSatellite {
		return fmt.Errorf("invalid role %q: want %q or %q", role, RoleHome, RoleSatellite)
	}
	if role == RoleHome && h.joined {
		return fmt.Errorf("making %s home: %w", h.Root, ErrNoSeed)
	}
	if role == h.Role {
		return nil
	}
	inst, err := encodeInstance(h.Name, role)
	if err != nil {
		return err
	}
	if err := AtomicWrite(h.InstanceFile(), inst, 0o600); err != nil {
		return fmt.Errorf("writing the role: %w", err)
	}
	h.Role = role
	return nil
}
