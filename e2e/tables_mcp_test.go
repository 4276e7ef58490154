package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/records"
)

// dataStr is a string field of a record's data ("" when absent).
func dataStr(r records.Record, k string) string {
	var s string
	_ = json.Unmarshal(r.Data[k], &s)
	return s
}

// found reports whether crow_search on c for q (in tables) has a hit of table/id.
func found(t *testing.T, c *mcpclient.Client, q string, tables []string, table, id string) bool {
	t.Helper()
	res, errText := callTool[app.SearchAllResult](t, c, "crow_search", app.SearchAllIn{Query: q, Tables: tables})
	if errText != "" {
		t.Fatalf("crow_search %q: %s", q, errText)
	}
	for _, h := range res.Results {
		if h.Table == table && h.ID == id {
			return true
		}
	}
	return false
}

// TestTableToolsRoundTripThroughTwoDaemons: the MCP tools of the synced
// tables on two real daemons. A note stored by MCP on home is found by
// crow_search and read by crow_get_note on the laptop; the laptop's update
// and delete are seen on home; one search across tables finds a contact and
// a note; crow_context set on both for one key while they are apart ends
// with the same winner on both and no conflict record; a conflicting note
// edit raises a notification crow_list_notifications shows, unread first,
// with its link, and crow_mark_notification_read marks read.
func TestTableToolsRoundTripThroughTwoDaemons(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	mh, ml := mcpClient(t, home, "/mcp"), mcpClient(t, laptop, "/mcp")

	// Store on home, find and read on the laptop.
	note, errText := callTool[records.Record](t, mh, "crow_store_note", app.NoteIn{Title: "Heron migration",
		Content: "The grey herons leave the marsh in October.", Tags: []string{"birds"}, Extra: map[string]json.RawMessage{"mood": json.RawMessage(`"calm"`)}})
	if errText != "" || note.ID == "" || note.Table != "notes" {
		t.Fatalf("crow_store_note: %+v %s", note, errText)
	}
	Eventually(t, syncTimeout, "the laptop to find the note", func() bool {
		return found(t, ml, "herons", nil, "notes", note.ID)
	})
	got, errText := callTool[records.Record](t, ml, "crow_get_note", app.RecordID{ID: note.ID})
	if errText != "" || dataStr(got, "title") != "Heron migration" || dataStr(got, "mood") != "calm" || got.InstanceID != instanceID(home) {
		t.Fatalf("crow_get_note on the laptop: %+v %s", got, errText)
	}

	// Update on the laptop: home reads it and finds it by its new words.
	content := "The grey herons stay all winter."
	if up, errText := callTool[records.Record](t, ml, "crow_update_note", app.NotePatch{ID: note.ID, Content: &content}); errText != "" || dataStr(up, "title") != "Heron migration" {
		t.Fatalf("crow_update_note: %+v %s", up, errText)
	}
	Eventually(t, syncTimeout, "home to see the laptop's update", func() bool {
		r, errText := callTool[records.Record](t, mh, "crow_get_note", app.RecordID{ID: note.ID})
		return errText == "" && dataStr(r, "content") == content && found(t, mh, "winter", []string{"notes"}, "notes", note.ID)
	})
	if found(t, mh, "october", nil, "notes", note.ID) {
		t.Error("home still finds the note by its old words")
	}

	// One search across tables finds a contact and a note.
	contact, errText := callTool[records.Record](t, mh, "crow_store_contact", app.ContactIn{Name: "Hera Heron", Email: "hera@example.org", Notes: "counts herons"})
	if errText != "" {
		t.Fatalf("crow_store_contact: %s", errText)
	}
	Eventually(t, syncTimeout, "the laptop to find the contact and the note in one search", func() bool {
		res, errText := callTool[app.SearchAllResult](t, ml, "crow_search", app.SearchAllIn{Query: "herons", Tables: []string{"notes", "contacts"}})
		if errText != "" {
			return false
		}
		var n, c bool
		for _, h := range res.Results {
			n = n || (h.Table == "notes" && h.ID == note.ID && h.Title == "Heron migration")
			c = c || (h.Table == "contacts" && h.ID == contact.ID && h.Title == "Hera Heron")
		}
		return n && c && len(res.Results) == 2
	})

	// The same search from the CLI; no words is a usage error.
	if out := laptop.MustCLI("search", "herons", "--tables", "notes,contacts"); !strings.Contains(out, note.ID) || !strings.Contains(out, contact.ID) {
		t.Errorf("crow search: %s", out)
	}
	if _, errOut, err := laptop.CLI("search"); err == nil || !strings.Contains(errOut, "usage: crow search") {
		t.Errorf("crow search without words: %v %q", err, errOut)
	}

	// Delete on the laptop: gone on home, and from its search.
	if d, errText := callTool[app.RecordDeleted](t, ml, "crow_delete_note", app.RecordID{ID: note.ID}); errText != "" || !d.Deleted {
		t.Fatalf("crow_delete_note: %+v %s", d, errText)
	}
	Eventually(t, syncTimeout, "home to see the laptop's delete", func() bool {
		_, errText := callTool[records.Record](t, mh, "crow_get_note", app.RecordID{ID: note.ID})
		return strings.Contains(errText, "no note with id") && !found(t, mh, "herons", nil, "notes", note.ID)
	})

	// A second note both will edit while apart.
	shared, errText := callTool[records.Record](t, mh, "crow_store_note", app.NoteIn{Title: "Shared", Content: "v0"})
	if errText != "" {
		t.Fatal(errText)
	}
	Eventually(t, syncTimeout, "the laptop to have the shared note", func() bool {
		_, errText := callTool[records.Record](t, ml, "crow_get_note", app.RecordID{ID: shared.ID})
		return errText == ""
	})

	// Apart: both set one crow_context key, and both edit the shared note.
	cut(home)
	cut(laptop)
	key := app.ContextSetIn{Section: "style", Device: "", Project: "birds"}
	for _, side := range []struct {
		c    *mcpclient.Client
		text string
	}{{mh, "home's style"}, {ml, "laptop's style"}} {
		in := key
		in.Content = side.text
		if r, errText := callTool[records.Record](t, side.c, "crow_set_context", in); errText != "" || r.ID != records.ContextRowID(records.ContextKey{Section: "style", Project: "birds"}) {
			t.Fatalf("crow_set_context %q: %+v %s", side.text, r, errText)
		}
		v := side.text
		if _, errText := callTool[records.Record](t, side.c, "crow_update_note", app.NotePatch{ID: shared.ID, Content: &v}); errText != "" {
			t.Fatal(errText)
		}
	}
	heal(home)
	heal(laptop)

	get := app.ContextKeyIn{Section: "style", Project: "birds"}
	var winner string
	Eventually(t, syncTimeout, "both to keep the same context", func() bool {
		a, e1 := callTool[records.Record](t, mh, "crow_get_context", get)
		b, e2 := callTool[records.Record](t, ml, "crow_get_context", get)
		winner = dataStr(a, "content")
		return e1 == "" && e2 == "" && winner == dataStr(b, "content") && a.InstanceID == b.InstanceID &&
			converged(home, laptop)
	})
	if winner != "home's style" && winner != "laptop's style" {
		t.Fatalf("context winner %q", winner)
	}
	for _, d := range []*Daemon{home, laptop} {
		c := mcpClient(t, d, "/mcp")
		list, errText := callTool[app.ConflictList](t, c, "crow_list_sync_conflicts", app.ConflictListIn{Table: "crow_context", Unresolved: ptr(false)})
		if errText != "" || len(list.Conflicts) != 0 {
			t.Errorf("%s: crow_context conflict records %+v %s", d.Name, list.Conflicts, errText)
		}
		page, errText := callTool[records.Page](t, c, "crow_list_context", app.ContextListIn{Project: "birds"})
		if errText != "" || len(page.Records) != 1 || dataStr(page.Records[0], "content") != winner {
			t.Errorf("%s: crow_list_context project birds: %+v %s", d.Name, page, errText)
		}
	}

	// The note edits conflicted: the notification is listed unread first, with its link.
	for _, side := range []struct {
		d *Daemon
		c *mcpclient.Client
	}{{home, mh}, {laptop, ml}} {
		var id string
		Eventually(t, syncTimeout, side.d.Name+" to notify the conflict", func() bool {
			list, errText := callTool[app.NotificationList](t, side.c, "crow_list_notifications", app.PageIn{})
			if errText != "" || len(list.Notifications) == 0 {
				return false
			}
			n := list.Notifications[0]
			id = n.ID
			return n.Kind == "sync_conflict" && !n.Read && n.Link == "/ui/conflicts" &&
				n.URL == side.d.URL()+"/ui/conflicts" && list.Unread >= 1
		})
		if m, errText := callTool[app.MarkedRead](t, side.c, "crow_mark_notification_read", app.NotificationID{ID: id}); errText != "" || !m.Read {
			t.Fatalf("%s: crow_mark_notification_read: %+v %s", side.d.Name, m, errText)
		}
		list, _ := callTool[app.NotificationList](t, side.c, "crow_list_notifications", app.PageIn{})
		for _, n := range list.Notifications {
			if n.ID == id && !n.Read {
				t.Errorf("%s: notification %s still unread", side.d.Name, id)
			}
		}
	}
}
