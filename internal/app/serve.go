package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain/library"
	"shelf/domain/moderation"
	"shelf/internal/config"
	"shelf/internal/metrics"
	"shelf/repository"
)

// Serve connects to Cassandra (migrating first unless switched off), builds
// the router and serves until ctx ends, then drains in-flight requests.
// With SHELF_PPROF_ADDR set, it also serves net/http/pprof there; with
// SHELF_METRICS_ADDR set, /metrics is served there and not by the API.
func Serve(ctx context.Context, cfg config.Config, logger zerolog.Logger, opts ...Option) error {
	logConfig(logger, cfg)
	// A port another process holds is told at once, not after the
	// connection to Cassandra and the schema's check (a minute while a
	// node starts): the port is tried, and given back until the API is
	// built (a client meanwhile is refused, not left waiting).
	probe, err := listenHTTP(cfg.HTTP.Addr)
	if err != nil {
		return err
	}
	_ = probe.Close()
	m := metrics.New()
	session, cfg, err := connectChecked(ctx, cfg, logger, cfg.MigrateOnStart, m, wiringOf(opts).serial)
	if err != nil {
		return err
	}
	defer session.Close()
	a, err := New(cfg, logger, session, m, opts...)
	if err != nil {
		return err
	}
	ln, err := listenHTTP(cfg.HTTP.Addr)
	if err != nil {
		return err
	}
	pprof, err := listenPprof(cfg.HTTP.PprofAddr, logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	metricsSide, err := listenMetrics(cfg.HTTP.MetricsAddr, a.Metrics, logger)
	if err != nil {
		_ = ln.Close()
		closeSides(pprof)
		return err
	}
	logger.Info().Str("addr", ln.Addr().String()).Str("url", publicURL(ln.Addr())).Msg("shelf is serving")
	if msg := linksElsewhere(cfg.Mail.PublicURL, ln.Addr()); msg != "" {
		logger.Warn().Msg(msg)
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go sweep(sweepCtx, a.Moderation, repository.NewAudit(a.DB), cfg.Moderation.SweepInterval, attemptGrace(cfg), logger)
	go drainOutbox(sweepCtx, a.Contents, cfg.Content, a.Metrics, logger)
	go a.WorkJobs(sweepCtx, cfg.Content.JobInterval, logger)
	// On shutdown the background fan-outs stop beside the requests'
	// drain, within the same SHELF_SHUTDOWN_TIMEOUT: what is not finished
	// by then keeps its outbox marks, for the outbox worker of whichever
	// process runs next (a shutdown loses nothing).
	stopping, stop := context.WithCancel(ctx)
	fanoutsClosed := make(chan struct{})
	go func() {
		defer close(fanoutsClosed)
		<-stopping.Done()
		closeCtx, cancel := context.WithTimeout(context.Background(), cfg.HTTP.ShutdownTimeout)
		defer cancel()
		if left := a.Contents.Close(closeCtx); left > 0 {
			logger.Warn().Int("items", left).Msg("background fan-outs left to the outbox worker")
		}
	}()
	stopAt := make(chan time.Time, 1)
	context.AfterFunc(ctx, func() { stopAt <- time.Now() })
	err = serveWithSides(ctx, ln, a.Router, []*side{pprof, metricsSide}, cfg.HTTP, logger)
	stop()
	// The requests drained; what they left for after their answers (a
	// password change's notice, a link asked for) has no record to be
	// sent from elsewhere: it finishes before the session closes, within
	// the SHELF_SHUTDOWN_TIMEOUT the signal began (the drain's).
	deadline := time.Now().Add(cfg.HTTP.ShutdownTimeout)
	select {
	case at := <-stopAt:
		deadline = at.Add(cfg.HTTP.ShutdownTimeout)
	default:
	}
	afterCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if !a.Accounts.Close(afterCtx) {
		logger.Warn().Msg("work left after answers (mail, sightings of sessions) still running at shutdown: ended")
	}
	<-fanoutsClosed
	return err
}

// listenHTTP listens on the API's address. A port another process holds
// (most often an earlier make run) is refused saying what to do next:
// stop it, or serve on the next port.
func listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen on %s (SHELF_HTTP_ADDR): %w: another process serves there (an earlier make run?); stop it, or serve elsewhere: %s",
			addr, err, elsewhere(addr))
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s (SHELF_HTTP_ADDR): %w", addr, err)
	}
	return ln, nil
}

// elsewhere names the settings that serve on the port after addr's, with
// the public URL to match (mailed links come back to it): spelled out
// where the host is this machine.
func elsewhere(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p <= 0 || p >= 65535 {
		return "SHELF_HTTP_ADDR=:8081 SHELF_PUBLIC_URL=http://localhost:8081"
	}
	next := net.JoinHostPort(host, strconv.Itoa(p+1))
	ip := net.ParseIP(host)
	if host == "" || host == "localhost" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified())) {
		return "SHELF_HTTP_ADDR=" + next + " SHELF_PUBLIC_URL=http://localhost:" + strconv.Itoa(p+1)
	}
	return "SHELF_HTTP_ADDR=" + next + " (and SHELF_PUBLIC_URL to match)"
}

// attemptGrace is how old an interrupted suspension's or unsuspension's
// entry must be before the sweeper finishes it: past any request's
// deadline, so the request has surely stopped.
func attemptGrace(cfg config.Config) time.Duration {
	return max(time.Minute, 2*cfg.HTTP.RequestTimeout)
}

// sweep lifts ended suspensions every interval until ctx ends, finishes
// the suspensions and unsuspensions a stopped request left
// (moderation.FinishInterrupted), and every bucketsEvery makes the
// suspended list's bucket index agree with its rows
// (moderation.IndexBuckets). Every instance runs one; lifting and fencing
// are compare-and-sets and the records' writes idempotent, so they never
// clash.
func sweep(ctx context.Context, m *moderation.Service, audit moderation.Audit, interval, grace time.Duration, logger zerolog.Logger) {
	var indexed time.Time
	every(ctx, interval, nil, func() {
		if time.Since(indexed) >= bucketsEvery {
			indexed = time.Now()
			if n, err := m.IndexBuckets(ctx, audit); err != nil && ctx.Err() == nil {
				logger.Warn().Err(err).Msg("suspended list's bucket index")
			} else if n > 0 {
				logger.Warn().Int("fixed", n).Msg("suspended list's bucket index set right (a bucket with rows not indexed, or an empty one indexed)")
			}
		}
		if n, err := m.FinishInterrupted(ctx, grace); err != nil && ctx.Err() == nil {
			logger.Warn().Err(err).Msg("interrupted suspensions")
		} else if n > 0 {
			logger.Info().Int("finished", n).Msg("interrupted suspensions and unsuspensions finished")
		}
		for {
			lifted, err := m.SweepExpired(ctx, 100)
			if err != nil && ctx.Err() == nil {
				logger.Warn().Err(err).Msg("suspension sweep")
			}
			if lifted > 0 {
				logger.Info().Int("lifted", lifted).Msg("ended suspensions lifted")
			}
			if lifted < 100 || err != nil {
				break
			}
		}
	})
}

// bucketsEvery is how often the sweeper checks the suspended list's
// bucket index against its rows and deletes its entries marked emptied
// over an hour ago: two reads of the index and one of the list's
// partition keys (a few per month of suspensions).
const bucketsEvery = time.Minute

// every calls fn every interval, and at once whenever wake says so (nil:
// never), until ctx ends.
func every(ctx context.Context, interval time.Duration, wake <-chan struct{}, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		fn()
	}
}

// drainOutbox finishes fan-outs that stopped part-way (a crash, a failed
// write) every interval until ctx ends. Every instance runs one; fan-out
// writes are idempotent, so they never clash.
// The backlog's read for the metrics grows with the backlog (up to
// library.BacklogMarks marks), so the worker makes it once every
// backlogEvery, not every interval: under a large backlog, the time the
// gauges matter, it would compete with the drain itself.
func drainOutbox(ctx context.Context, c *library.Service, cfg config.Content, m *metrics.Metrics, logger zerolog.Logger) {
	backlog := sampled{every: backlogEvery}
	every(ctx, cfg.OutboxInterval, nil, func() {
		done, err := c.DrainOutbox(ctx, cfg.OutboxGrace, 100)
		if err != nil && ctx.Err() == nil {
			logger.Warn().Err(err).Msg("outbox")
		}
		if done > 0 {
			logger.Info().Int("completed", done).Msg("unfinished fan-outs completed")
		}
		if !backlog.due(time.Now()) {
			return
		}
		if items, oldest, err := c.OutboxBacklog(ctx); err == nil {
			m.OutboxItems.Set(float64(items))
			m.OutboxAge.Set(oldest.Seconds())
		}
	})
}

// backlogEvery is how often the outbox worker reads the backlog for its
// metrics (a scrape's usual interval).
const backlogEvery = 15 * time.Second

// sampled says when a periodic task that runs more often than it need be
// does its part again: the first time, then once every every.
type sampled struct {
	every time.Duration
	last  time.Time
}

func (s *sampled) due(now time.Time) bool {
	if !s.last.IsZero() && now.Sub(s.last) < s.every {
		return false
	}
	s.last = now
	return true
}

// ServeHTTP runs the server on ln until ctx ends, then stops accepting and
// waits up to ShutdownTimeout for in-flight requests to finish.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, c config.HTTP, logger zerolog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info().Dur("timeout", c.ShutdownTimeout).Msg("shutting down: draining in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info().Msg("stopped")
	return nil
}

// publicURL is the address to print for people: localhost for a wildcard.
func publicURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		if ok {
			return fmt.Sprintf("http://localhost:%d", tcp.Port)
		}
		return "http://" + addr.String()
	}
	return "http://" + addr.String()
}

// linksElsewhere says, when SHELF_PUBLIC_URL (the base of mailed links) is
// this machine on another port than the one served, where the links lead
// and what to set: make run moved to :8081 with the default public URL
// mails links to localhost:8080, another server or none. Empty otherwise,
// as for a public URL on another machine (a proxy's).
func linksElsewhere(public string, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	u, err := url.Parse(public)
	if !ok || err != nil || !config.IsLoopbackURL(public) {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port == strconv.Itoa(tcp.Port) {
		return ""
	}
	here := u.Scheme + "://" + net.JoinHostPort(u.Hostname(), strconv.Itoa(tcp.Port))
	return fmt.Sprintf("mailed links lead to SHELF_PUBLIC_URL %s, not to this server on port %d: set SHELF_PUBLIC_URL=%s (unless a proxy on this machine forwards %s here)",
		public, tcp.Port, here, public)
}

// WorkJobs runs the job worker until ctx ends: a pass
// (lifecycle.Service.WorkJobs) every interval, or at once when a request
// of this process began a job (lifecycle.Service.Wake). Every instance
// runs one; a job's lease keeps two from running one job
// (docs/design/jobs.md).
func (a *App) WorkJobs(ctx context.Context, interval time.Duration, logger zerolog.Logger) {
	every(ctx, interval, a.Lifecycle.Woken(), func() {
		r, err := a.Lifecycle.WorkJobs(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Warn().Err(err).Int("failed", r.Failed).Msg("jobs")
		}
		if r.Finished > 0 {
			logger.Info().Int("finished", r.Finished).Msg("jobs finished")
		}
		if r.Changes > 0 {
			logger.Info().Int("changes", r.Changes).Msg("group membership changes finished after their request ended")
		}
		m := a.Metrics
		m.JobsFinished.Add(float64(r.Finished))
		m.JobsFailed.Add(float64(r.Failed))
		m.JobsRunning.Set(float64(r.Held))
		left := r.Found - r.Finished - r.Stale - r.Held
		m.JobsWaiting.Set(float64(max(left, 0)))
		oldest := 0.0
		if !r.Oldest.IsZero() {
			oldest = a.Lifecycle.Now().Sub(r.Oldest).Seconds()
		}
		m.JobsOldest.Set(oldest)
	})
}
