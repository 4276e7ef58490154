package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/crow-sync/crow/conflicts"
)

// The operator's notifications (package conflicts raises them: sync
// conflicts, feed forks), on REST and as MCP tools.

// Notification is one notification with the absolute URL of the view it
// links to.
type Notification struct {
	conflicts.Notification
	// URL is Link on this instance's gateway ("" when the gateway URL is unknown).
	URL string `json:"url,omitempty"`
}

// NotificationList is the answer of notifications.list.
type NotificationList struct {
	Notifications []Notification `json:"notifications"`
	Unread        int            `json:"unread"` // over all notifications, not only this page
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// PageIn pages the notifications, newest first (unread first on MCP).
type PageIn struct {
	Limit       int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"50" desc:"Page size; absent: the whole list (MCP default 50)."`
	Cursor      string `json:"cursor,omitempty" in:"query" desc:"next_cursor of the previous page; absent for the first page."`
	UnreadFirst *bool  `json:"unread_first,omitempty" in:"query" mcpdefault:"true" desc:"Unread notifications first, then the read ones, each newest first (MCP default true; REST default false: newest first)."`
}

// NotificationID names one notification.
type NotificationID struct {
	ID string `json:"id" in:"path" required:"true" desc:"Id of the notification (crow_list_notifications)."`
}

// MarkedRead is the answer of notifications.read.
type MarkedRead struct {
	ID   string `json:"id"`
	Read bool   `json:"read"`
}

var (
	NotificationsList = define(&Def[PageIn, NotificationList]{
		Spec: Spec{Name: "notifications.list", Method: "GET", Path: "/v1/notifications", Tool: "crow_list_notifications",
			Title: "List notifications", Tag: "sync", Summary: "Notifications, newest first (unread first with unread_first)",
			Description: "List the operator's notifications: sync conflicts to review (kind sync_conflict, one per burst; " +
				"crow_list_sync_conflicts lists them) and feed forks (kind feed_fork: an instance's history was cloned or " +
				"restored and it stopped replicating). Unread first, each newest first. Each has id, kind, priority, title, " +
				"body, link (the web view), url (link on this gateway), read and created_at. Returns {notifications, unread " +
				"(the count of all unread), next_cursor}. Mark one read with crow_mark_notification_read.",
			ReadOnly: true},
		Impl: (*App).notificationsList,
	})
	NotificationsRead = define(&Def[NotificationID, MarkedRead]{
		Spec: Spec{Name: "notifications.read", Method: "POST", Path: "/v1/notifications/{id}/read", Tool: "crow_mark_notification_read",
			Title: "Mark a notification read", Tag: "sync", Summary: "Mark a notification read",
			Description: "Mark a notification read (idempotent). Once the unread conflict notification is read, the next new " +
				"conflict raises a new one. Returns {id, read: true}.",
			Idempotent: true},
		Impl: (*App).notificationsRead,
	})
)

func notificationKey(n conflicts.Notification) (time.Time, string) { return n.CreatedAt, n.ID }

// readShift moves read notifications behind every unread one in the
// unread-first order: the page key of a read one is its time less a century
// (the cursor stays "<time>_<id>" of that key).
const readShift = 100 * 365 * 24 * time.Hour

func unreadFirstKey(n conflicts.Notification) (time.Time, string) {
	if n.Read {
		return n.CreatedAt.Add(-readShift), n.ID
	}
	return n.CreatedAt, n.ID
}

func (a *App) notificationsList(_ context.Context, in PageIn) (NotificationList, error) {
	cs, err := a.conflictStore()
	if err != nil {
		return NotificationList{}, err
	}
	list, err := cs.Notifications()
	if err != nil {
		return NotificationList{}, err
	}
	unread := 0
	for _, n := range list {
		if !n.Read {
			unread++
		}
	}
	key := notificationKey
	if in.UnreadFirst != nil && *in.UnreadFirst {
		key = unreadFirstKey
		slices.SortStableFunc(list, func(x, y conflicts.Notification) int {
			tx, ix := key(x)
			ty, iy := key(y)
			if c := ty.Compare(tx); c != 0 {
				return c
			}
			return strings.Compare(iy, ix)
		})
	}
	list, next, err := conflicts.PageNewest(list, key, in.Cursor, in.Limit)
	if err != nil {
		return NotificationList{}, Wrap(KindInvalid, err, "")
	}
	out := make([]Notification, 0, len(list))
	base := strings.TrimRight(a.d.Self.GatewayURL, "/")
	for _, n := range list {
		u := ""
		if base != "" && strings.HasPrefix(n.Link, "/") {
			u = base + n.Link
		}
		out = append(out, Notification{Notification: n, URL: u})
	}
	return NotificationList{Notifications: out, Unread: unread, NextCursor: next}, nil
}

func (a *App) notificationsRead(_ context.Context, in NotificationID) (MarkedRead, error) {
	cs, err := a.conflictStore()
	if err != nil {
		return MarkedRead{}, err
	}
	if err := cs.MarkRead(in.ID); errors.Is(err, conflicts.ErrNotFound) {
		return MarkedRead{}, Wrap(KindNotFound, err, "no notification with id "+in.ID+"; crow_list_notifications lists them")
	} else if err != nil {
		return MarkedRead{}, err
	}
	return MarkedRead{ID: in.ID, Read: true}, nil
}
