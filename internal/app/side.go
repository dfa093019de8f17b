package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/rs/zerolog"

	"shelf/internal/config"
	"shelf/internal/metrics"
)

// side is a server beside the API's, on a listener of its own, for
// operators only: pprof (SHELF_PPROF_ADDR), metrics (SHELF_METRICS_ADDR).
type side struct {
	name    string
	ln      net.Listener
	handler http.Handler
}

// listenMetrics opens SHELF_METRICS_ADDR's listener, serving /metrics and
// nothing else, or returns nil when the setting is empty (then /metrics is
// on the API's listener). The address is logged; one
// beyond loopback is what a scraper on another host needs, so it is no
// warning (the series name routes and methods, never a person).
func listenMetrics(addr string, m *metrics.Metrics, logger zerolog.Logger) (*side, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (SHELF_METRICS_ADDR): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	logger.Info().Str("addr", ln.Addr().String()).Str("url", publicURL(ln.Addr())+"/metrics").Msg("metrics are serving")
	return &side{name: "metrics", ln: ln, handler: mux}, nil
}

// serveWithSides serves the API on ln (ServeHTTP) and each side server
// that is not nil on its own listener, until ctx ends; the sides stop when
// the API does. A side server that fails is logged and leaves the API
// serving.
func serveWithSides(ctx context.Context, ln net.Listener, api http.Handler, sides []*side, c config.HTTP, logger zerolog.Logger) error {
	sideCtx, stopSides := context.WithCancel(ctx)
	done := make(chan struct{}, len(sides))
	started := 0
	for _, s := range sides {
		if s == nil {
			continue
		}
		started++
		go func() {
			defer func() { done <- struct{}{} }()
			if err := serveSide(sideCtx, s, c); err != nil {
				logger.Error().Err(err).Msg(s.name + " stopped; the API goes on")
			}
		}()
	}
	err := ServeHTTP(ctx, ln, api, c, logger)
	stopSides()
	for range started {
		<-done
	}
	return err
}

// serveSide serves s on its listener until ctx ends, then closes at once:
// what an operator asks of a process that is stopping is not worth
// waiting for. Only the headers have a timeout (see listenPprof).
func serveSide(ctx context.Context, s *side, c config.HTTP) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: c.ReadHeaderTimeout}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s on %s: %w", s.name, s.ln.Addr(), err)
	}
	return nil
}

// closeSides closes the listeners of the sides opened so far (start-up
// failed before they were served).
func closeSides(sides ...*side) {
	for _, s := range sides {
		if s != nil {
			_ = s.ln.Close()
		}
	}
}
