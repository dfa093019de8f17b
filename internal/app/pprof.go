package app

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/rs/zerolog"
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
// it is reachable beyond this host: pprof has no authentication. Its
// server times out nothing but the headers: a CPU profile or a trace
// answers after the seconds its caller asked for.
func listenPprof(addr string, logger zerolog.Logger) (*side, error) {
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
	return &side{name: "pprof", ln: ln, handler: pprofMux()}, nil
}
