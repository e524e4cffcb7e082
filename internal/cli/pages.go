package cli

import (
	"log/slog"
	"net/http"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/web"
)

// mountPages mounts the web pages (internal/web) on the API server, so that
// one handler serves both and the pages share the API's access log,
// metrics and rate limit, and returns it.
func mountPages(api *httpapi.Server, svc web.Services, log *slog.Logger) http.Handler {
	web.Mount(api, svc, web.Options{Logger: log})
	return api
}
