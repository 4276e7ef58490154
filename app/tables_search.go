package app

import (
	"context"

	"github.com/crow-sync/crow/records"
)

// SearchAllIn is the input of search.all.
type SearchAllIn struct {
	Query  string   `json:"query" in:"query,name=q" required:"true" maxlen:"1024" desc:"The words to search for."`
	Tables []string `json:"tables,omitempty" in:"query" maxitems:"8" desc:"Only these tables: memories, notes, sources, contacts, settings, blog_posts, crow_context (default: all; REST: comma-separated)."`
	Limit  int      `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"20" desc:"Maximum number of results, 1-1000 (default 20)."`
}

// SearchAllResult is the answer of search.all.
type SearchAllResult struct {
	Query   string        `json:"query"`
	Results []records.Hit `json:"results"`
}

var SearchAll = define(&Def[SearchAllIn, SearchAllResult]{
	Spec: Spec{Name: "search.all", Method: "GET", Path: "/v1/search", Tool: "crow_search",
		Title: "Search everything", Tag: "records", Summary: "Full-text search across memories, notes, sources, contacts, settings, blog posts and contexts",
		Description: "One full-text search across every table of this instance: memories, notes, sources, contacts, settings, " +
			"blog posts and crow_context rows (or only those in tables), best match first. Sees every row stored before the call. " +
			"Returns {query, results: [{table, id, title, snippet, score}]}; read a hit with the table's get tool " +
			"(crow_get_note, crow_get_memory, …) and its id. crow_search_memories searches memories with their filters, and other instances.",
		ReadOnly: true},
	Impl: func(a *App, ctx context.Context, in SearchAllIn) (SearchAllResult, error) {
		svc, err := a.records()
		if err != nil {
			return SearchAllResult{}, err
		}
		hits, err := svc.Search(ctx, records.SearchOptions{Query: in.Query, Tables: in.Tables, Limit: in.Limit})
		if err != nil {
			return SearchAllResult{}, err
		}
		return SearchAllResult{Query: in.Query, Results: hits}, nil
	},
})
