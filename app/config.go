package app

import (
	"context"

	"github.com/crow-sync/crow/home"
)

// ConfigShown is the answer of config.show: the daemon's effective
// configuration, key by key, with where each value came from.
type ConfigShown struct {
	// File is the config.toml the daemon read (it may not exist).
	File     string         `json:"file"`
	Settings []home.Setting `json:"settings"`
}

// ConfigShow shows the configuration the running daemon uses (`crow config
// show`): flags given to crow serve show as source "flag", secrets such as
// an rpc_url's API key are redacted (home.Settings).
var ConfigShow = define(&Def[NoInput, ConfigShown]{
	Spec: Spec{Name: "config.show", Method: "GET", Path: "/v1/config", Tag: "instance",
		Summary:  "The daemon's effective configuration and where each value came from (flag, env, file, default); secrets redacted",
		ReadOnly: true, Idempotent: true, NoStore: true},
	Impl: func(a *App, ctx context.Context, _ NoInput) (ConfigShown, error) {
		if a.d.Config == nil {
			return ConfigShown{}, unavailable("configuration")
		}
		return *a.d.Config, nil
	},
})
