package state

import (
	"fmt"
	"testing"
)

// bigState is a state with n decisions, each citing 5 memories.
func bigState(n int) State {
	var s State
	for i := range n {
		s.Decisions = append(s.Decisions, Decision{ID: fmt.Sprintf("dec_%04d", i+1), Title: "PostgreSQL con RLS para multi-tenancy",
			Statement: "La seguridad por fila saca el filtrado por tenant de la capa de aplicación", Status: DecisionProposed,
			Provenance: Provenance{EvidenceMemoryIDs: MemoryIDs{1, 2, 3, 4, 5}, EvidenceRoot: rootOf(1, 2, 3, 4, 5), CreatedVersion: 1, UpdatedVersion: 1}})
	}
	return s
}

func BenchmarkHash(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		s := bigState(n)
		c, _ := Canonical(s)
		b.Run(fmt.Sprintf("%d items (%d KB)", n, len(c)>>10), func(b *testing.B) {
			b.SetBytes(int64(len(c)))
			for b.Loop() {
				if _, err := Hash(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
