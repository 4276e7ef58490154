package federation

import (
	"slices"
	"testing"
)

func TestDefaultAllowList(t *testing.T) {
	a := DefaultAllowList()
	want := []string{
		"crow_get_memory", "crow_instance_summaries", "crow_list_instances", "crow_list_memories",
		"crow_list_sync_conflicts", "crow_peer_check", "crow_peer_ping", "crow_search_memories", "crow_sync_status",
		"get_project_state",
	}
	if got := a.Tools(); !slices.Equal(got, want) {
		t.Fatalf("Tools() = %v, want %v", got, want)
	}
	for _, tool := range want {
		if !a.Allowed(tool) {
			t.Errorf("%s denied", tool)
		}
	}
	for _, tool := range []string{
		"crow_store_memory", "crow_update_memory", "crow_delete_memory", "crow_register_instance",
		"crow_revoke_instance", "crow_sync_conflicts_keep_current", "crow_sync_conflicts_restore_other",
		"crow_sync_conflicts_resolve_all", "update_project_state", "", "CROW_SEARCH_MEMORIES", "crow_search_memories ",
	} {
		if a.Allowed(tool) {
			t.Errorf("%q allowed by default", tool)
		}
	}
}

func TestAllowListDenyByDefault(t *testing.T) {
	var zero AllowList
	if zero.Allowed("crow_search_memories") || len(zero.Tools()) != 0 {
		t.Error("the zero AllowList allows something")
	}
	if NewAllowList().Allowed("crow_get_memory") {
		t.Error("an empty AllowList allows something")
	}
	a := NewAllowList("crow_store_memory", "crow_store_memory")
	if !a.Allowed("crow_store_memory") || a.Allowed("crow_get_memory") {
		t.Errorf("NewAllowList(crow_store_memory) allows %v", a.Tools())
	}
	if got := a.Tools(); !slices.Equal(got, []string{"crow_store_memory"}) {
		t.Errorf("Tools() = %v", got)
	}
}
