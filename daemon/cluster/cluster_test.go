package cluster_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/crow-sync/crow/daemon/cluster"
)

type memory struct {
	ID      string `json:"id"`
	Content string `json:"content"`
}

type conflict struct {
	ID    string `json:"id"`
	Op    string `json:"op"`
	RowID string `json:"row_id"`
}

func conflicts(t *testing.T, n *cluster.Node) []conflict {
	t.Helper()
	var body struct {
		Conflicts []conflict `json:"conflicts"`
	}
	n.MustDo(200, "GET", "/v1/sync/conflicts", nil, &body)
	slices.SortFunc(body.Conflicts, func(a, b conflict) int { return cmpString(a.ID, b.ID) })
	return body.Conflicts
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func content(n *cluster.Node, id string) string {
	var m memory
	if st, err := n.Do("GET", "/v1/memory/"+id, nil, &m); err != nil || st != 200 {
		return ""
	}
	return m.Content
}

// TestPartitionedEditsMakeOneConflictEverywhere: A writes a memory that
// reaches everyone; partition A | B,C; A and B edit it; heal: every node
// holds the same winner and exactly one conflict record, with the same id.
func TestPartitionedEditsMakeOneConflictEverywhere(t *testing.T) {
	c := cluster.New(t, 3, cluster.Options{})
	a, b := c.Node("A"), c.Node("B")

	var m memory
	a.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "the original text", "project": "crow"}, &m)
	c.Eventually("the memory on every node", func() bool {
		for _, n := range c.Nodes {
			if content(n, m.ID) != "the original text" {
				return false
			}
		}
		return true
	})

	c.Partition([]string{"A"}, []string{"B", "C"})
	a.MustDo(200, "PATCH", "/v1/memory/"+m.ID, map[string]any{"content": "A's edit"}, nil)
	b.MustDo(200, "PATCH", "/v1/memory/"+m.ID, map[string]any{"content": "B's edit"}, nil)
	c.Eventually("C to see B's edit (same side)", func() bool { return content(c.Node("C"), m.ID) == "B's edit" })
	if got := content(a, m.ID); got != "A's edit" {
		t.Fatalf("A crossed the partition: %q", got)
	}
	c.Heal()

	var want []conflict
	c.Eventually("one conflict and one winner on every node", func() bool {
		want = conflicts(t, a)
		if len(want) != 1 {
			return false
		}
		winner := content(a, m.ID)
		for _, n := range c.Nodes[1:] {
			if !reflect.DeepEqual(conflicts(t, n), want) || content(n, m.ID) != winner {
				return false
			}
		}
		return true
	})
	if want[0].Op != "update" || want[0].RowID != m.ID {
		t.Errorf("conflict %+v, want an update conflict on %s", want[0], m.ID)
	}
}

// TestLibp2pCluster: the same daemons over real libp2p on loopback
// replicate, and a partition cuts them.
func TestLibp2pCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts libp2p hosts")
	}
	c := cluster.New(t, 2, cluster.Options{Libp2p: true})
	a, b := c.Node("A"), c.Node("B")
	var m memory
	a.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "over libp2p", "project": "crow"}, &m)
	c.Eventually("the memory on B", func() bool { return content(b, m.ID) == "over libp2p" })

	c.Partition([]string{"A"}, []string{"B"})
	b.MustDo(200, "PATCH", "/v1/memory/"+m.ID, map[string]any{"content": "B's edit"}, nil)
	c.Heal()
	c.Eventually("B's edit on A after the heal", func() bool { return content(a, m.ID) == "B's edit" })
}
