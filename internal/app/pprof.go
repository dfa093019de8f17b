package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// pprofMux serves net/http/pprof on a mux of its own. The handlers are
// registered here one by one: importing net/http/pprof also puts them on
// http.DefaultServeMux, which shelf never serves.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // and the named profiles: heap, goroutine, allocs ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// listenPprof opens SHELF_PPROF_ADDR's listener, or returns nil when the
// setting is empty (profiling off). It logs the address, as a warning when
// it is reachable beyond this host: pprof has no authentication.
func listenPprof(addr string, logger zerolog.Logger) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (SHELF_PPROF_ADDR): %w", addr, err)
	}
	event := logger.Info()
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		event = logger.Warn().Str("warning", "pprof listens beyond loopback and has no authentication; never expose it publicly")
	}
	event.Str("addr", ln.Addr().String()).Str("url", publicURL(ln.Addr())+"/debug/pprof/").Msg("pprof is serving")
	return ln, nil
}

// serveWithPprof serves the API on ln (ServeHTTP) and, when pprofLn is not
// nil, net/http/pprof on it, until ctx ends; pprof stops when the API does.
// A pprof server that fails is logged and leaves the API serving.
func serveWithPprof(ctx context.Context, ln net.Listener, api http.Handler, pprofLn net.Listener, c config.HTTP, logger zerolog.Logger) error {
	if pprofLn == nil {
		return ServeHTTP(ctx, ln, api, c, logger)
	}
	pprofCtx, stopPprof := context.WithCancel(ctx)
	pprofDone := make(chan struct{})
	go func() {
		defer close(pprofDone)
		if err := servePprof(pprofCtx, pprofLn, c); err != nil {
			logger.Error().Err(err).Msg("pprof stopped; the API goes on")
		}
	}()
	err := ServeHTTP(ctx, ln, api, c, logger)
	stopPprof()
	<-pprofDone
	return err
}

// servePprof serves pprofMux on ln until ctx ends, then closes at once: a
// profile of a process that is stopping is not worth waiting for. Only the
// headers have a timeout: a CPU profile or a trace answers after the
// seconds its caller asked for.
func servePprof(ctx context.Context, ln net.Listener, c config.HTTP) error {
	srv := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: c.ReadHeaderTimeout}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("pprof on %s: %w", ln.Addr(), err)
	}
	return nil
}
