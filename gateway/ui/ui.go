// Package ui is the gateway's web UI (SPEC §8): static pages under /ui/ —
// an overview, the projects (each one's newest Project State and the anchor
// status of its versions, SPEC §10–§11), the memories (the newest, or a
// search, each with a "Forget…" button that erases it everywhere after a
// confirmation, SPEC §10), the sync conflict recovery view
// (SPEC §6: both versions side by side with a per-field diff; keep, restore,
// resolve all), the instances (on home with a form that makes a one-time
// invite for a new machine, SPEC §7), the notifications and the public
// verify page.
//
// The pages carry no data and need no authentication: their scripts (ES
// modules under js/: one per page, loaded by a single <script
// type="module">, and the shared api.js, dom.js, nav.js — the one header —
// and anchors.js) ask the owner for the API key, keep it in sessionStorage
// and read and change everything through the authenticated REST API (/v1/...). The verify page
// is public: it calls only GET /v1/verify/{name}, never with the key, and
// never asks for one. Every answer
// carries a strict Content-Security-Policy (no inline script or style, no
// other origin), so the JavaScript and CSS are separate files and data is
// rendered with DOM text nodes only.
package ui

import (
	"embed"
	"net/http"
	"strconv"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is the path the gateway mounts Handler at.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every answer.
const CSP = "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

// asset is one file served under Prefix.
type asset struct {
	file        string // in static/
	contentType string
	body        []byte
}

const (
	typeHTML = "text/html; charset=utf-8"
	typeJS   = "text/javascript; charset=utf-8"
	typeCSS  = "text/css; charset=utf-8"
	typeSVG  = "image/svg+xml"
)

// assets maps each served path to its file. Any other path under Prefix is
// a 404.
var assets = map[string]*asset{
	Prefix:                   {file: "index.html", contentType: typeHTML},
	Prefix + "projects":      {file: "projects.html", contentType: typeHTML},
	Prefix + "memories":      {file: "memories.html", contentType: typeHTML},
	Prefix + "verify":        {file: "verify.html", contentType: typeHTML},
	Prefix + "conflicts":     {file: "conflicts.html", contentType: typeHTML},
	Prefix + "instances":     {file: "instances.html", contentType: typeHTML},
	Prefix + "notifications": {file: "notifications.html", contentType: typeHTML},
	Prefix + "app.css":       {file: "app.css", contentType: typeCSS},
	Prefix + "favicon.svg":   {file: "favicon.svg", contentType: typeSVG},
}

// moduleDir holds the ES modules (one per page, the shared API, DOM and
// header modules), each served as Prefix+"js/"+name.
const moduleDir = "js"

func init() {
	mods, err := static.ReadDir("static/" + moduleDir)
	if err != nil {
		panic("ui: embedded modules missing: " + err.Error())
	}
	for _, m := range mods {
		if !m.IsDir() && strings.HasSuffix(m.Name(), ".js") {
			assets[Prefix+moduleDir+"/"+m.Name()] = &asset{file: moduleDir + "/" + m.Name(), contentType: typeJS}
		}
	}
	for _, a := range assets {
		b, err := static.ReadFile("static/" + a.file)
		if err != nil {
			panic("ui: embedded file missing: " + err.Error())
		}
		a.body = b
	}
}

// Paths returns the paths Handler serves (for tests and route listings).
func Paths() []string {
	ps := make([]string, 0, len(assets))
	for p := range assets {
		ps = append(ps, p)
	}
	return ps
}

// Handler serves the web UI. It is mounted by the gateway at "/ui/"
// (requests arrive with the full path, e.g. /ui/conflicts). Only GET and
// HEAD are served; unknown paths are a 404.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	a, ok := assets[r.URL.Path]
	if !ok {
		http.Error(w, "404 page not found: "+r.URL.Path+" (the web UI is at "+Prefix+")", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed: use GET", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(a.body)
	}
}
