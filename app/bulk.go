package app

import (
	"context"
	"errors"

	"github.com/crow-sync/crow/memory"
)

// MemoriesCreateIn is the input of memory.create_many.
type MemoriesCreateIn struct {
	Memories []MemoryCreateIn `json:"memories" required:"true" minitems:"1" maxitems:"1000" desc:"1 to 1,000 memories, each as crow_store_memory takes it."`
}

// MemoriesCreated is the answer of memory.create_many: the memories stored,
// in the order given.
type MemoriesCreated struct {
	Memories []memory.Memory `json:"memories"`
}

// MaxBulkBodyBytes caps a bulk write's REST body.
const MaxBulkBodyBytes = 4 << 20

var MemoryCreateMany = define(&Def[MemoriesCreateIn, MemoriesCreated]{
	Spec: Spec{Name: "memory.create_many", Method: "POST", Path: "/v1/memories", Status: 201, Tool: "crow_store_memories",
		Title: "Store several memories", Tag: "memories", Summary: "Store up to 1,000 memories in one transaction, all or none",
		Description: "Store several new memories at once (up to 1,000; REST body up to 4 MiB): every one is validated first, " +
			"and if any is invalid nothing is stored and the error names each bad item by its index (memories[i]) and why. " +
			"Otherwise all are saved durably in one transaction and replicate like single writes. Returns the stored " +
			"memories in the order given.",
		MaxBody: MaxBulkBodyBytes},
	Impl: (*App).memoryCreateMany,
})

func (a *App) memoryCreateMany(ctx context.Context, in MemoriesCreateIn) (MemoriesCreated, error) {
	svc, err := a.memories()
	if err != nil {
		return MemoriesCreated{}, err
	}
	def := memory.SourceAPI
	if CallerOf(ctx).Surface == SurfaceMCP {
		def = memory.SourceMCP
	}
	ins := make([]memory.CreateInput, len(in.Memories))
	for i, m := range in.Memories {
		src := m.Source
		if src == "" {
			src = def
		}
		ins[i] = memory.CreateInput{Content: m.Content, Project: m.Project, Category: m.Category,
			Importance: m.Importance, Tags: m.Tags, Source: src}
	}
	ms, err := svc.AddMany(ctx, ins)
	var be *memory.BulkError
	if errors.As(err, &be) {
		return MemoriesCreated{}, Wrap(KindInvalid, err, err.Error()+"; nothing was stored")
	}
	if err != nil {
		return MemoriesCreated{}, err
	}
	return MemoriesCreated{Memories: ms}, nil
}
