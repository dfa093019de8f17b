package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parser reads variables, falling back to the defaults in Vars, and collects
// one error per bad variable.
type parser struct {
	getenv func(string) string
	errs   []error
}

func (p *parser) fail(name, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// str returns the variable's value, or its default when unset or blank.
func (p *parser) str(name string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	for _, v := range Vars {
		if v.Name == name {
			return v.Default
		}
	}
	panic("config: undocumented variable " + name)
}

func (p *parser) duration(name string) time.Duration {
	return p.durationFrom(name, time.Nanosecond, "a positive duration such as 5s or 250ms")
}

// longestTTL is the longest setting that becomes a row's TTL (a claim's
// lease, a session, a mailed link): Cassandra refuses a TTL over 20 years
// (630 720 000 s), and a token's row lives an hour past its link
// (accounts.TokenGrace); this leaves a day.
const longestTTL = 630720000*time.Second - 24*time.Hour

// ttl reads a positive duration that some row keeps as its TTL: one
// Cassandra would refuse is refused here, not by every write that uses it.
func (p *parser) ttl(name string) time.Duration {
	d := p.duration(name)
	if d > longestTTL {
		p.fail(name, "%v is longer than Cassandra keeps a row (a TTL of at most 20 years): set %v or less", d, longestTTL)
		return 0
	}
	return d
}

// durationOrZero reads a duration that may be zero (off).
func (p *parser) durationOrZero(name string) time.Duration {
	return p.durationFrom(name, 0, "a duration such as 100ms, or 0s")
}

// durationFrom reads a duration of at least least; what describes the
// values accepted, for the error.
func (p *parser) durationFrom(name string, least time.Duration, what string) time.Duration {
	raw := p.str(name)
	d, err := time.ParseDuration(raw)
	if err != nil || d < least {
		p.fail(name, "%q is not %s", raw, what)
		return 0
	}
	return d
}

func (p *parser) positiveInt(name string) int {
	raw := p.str(name)
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		p.fail(name, "%q is not a positive whole number", raw)
		return 0
	}
	return n
}

func (p *parser) nonNegativeInt(name string) int {
	raw := p.str(name)
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		p.fail(name, "%q is not a whole number of 0 or more", raw)
		return 0
	}
	return n
}

// mostCounted is the largest limit the throttle keeps (a read of a
// scope takes at most this many rows: domain/accounts' maxCounted); a
// larger one would be kept as this, so it is refused here instead.
const mostCounted = 512

// countLimit is a limit the throttle counts in Cassandra: 0 (off) to
// mostCounted.
func (p *parser) countLimit(name string) int {
	n := p.nonNegativeInt(name)
	if n > mostCounted {
		p.fail(name, "%d is more than the %d the throttle counts; set %d or less (0 turns it off)", n, mostCounted, mostCounted)
		return 0
	}
	return n
}

func (p *parser) boolean(name string) bool {
	raw := p.str(name)
	b, err := strconv.ParseBool(raw)
	if err != nil {
		p.fail(name, "%q is not true or false", raw)
	}
	return b
}

func (p *parser) oneOf(name string, allowed ...string) string {
	raw := p.str(name)
	for _, a := range allowed {
		if strings.EqualFold(raw, a) {
			return a
		}
	}
	p.fail(name, "%q is not one of %s", raw, strings.Join(allowed, ", "))
	return ""
}

func (p *parser) list(name string) []string {
	var out []string
	for _, item := range strings.Split(p.str(name), ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// origins reads browser origins: *, or scheme://host[:port] (the host
// may hold one * for any label, https://*.example.org) and nothing more.
// A browser's Origin header has no path, so one with a path, a slash at
// the end or no scheme would never match: CORS would be off for it while
// the log said it was set.
func (p *parser) origins(name string) []string {
	var out []string
	for _, item := range p.list(name) {
		u, err := url.Parse(item)
		if item != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil || strings.Count(u.Host, "*") > 1) {
			p.fail(name, "%q is not an origin such as https://app.example.org (a scheme and host, no path, no slash at the end)", item)
			continue
		}
		out = append(out, item)
	}
	return out
}

var keyspaceRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

func (p *parser) keyspace(name string) string {
	raw := p.str(name)
	if !keyspaceRE.MatchString(raw) {
		p.fail(name, "%q is not a keyspace name (a lower-case letter, then lower-case letters, digits or _; at most 48)", raw)
	}
	return raw
}

func (p *parser) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for _, item := range p.list(name) {
		prefix, err := netip.ParsePrefix(item)
		if err != nil {
			addr, aerr := netip.ParseAddr(item)
			if aerr != nil {
				p.fail(name, "%q is not an address or CIDR", item)
				continue
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		if prefix.Bits() == 0 {
			// Every hop of X-Forwarded-For would be trusted and passed
			// over, down to the connection's peer: each client would be
			// the proxy's address, one budget of every per-address limit.
			p.fail(name, "%q trusts every address, so no X-Forwarded-For entry is ever believed (the client is always the proxy): list the proxies' own networks", item)
			continue
		}
		out = append(out, prefix.Masked())
	}
	return out
}

// listenAddr reads an optional address to listen on: host:port with a
// numeric port (the host may be empty: every interface), or "" when unset.
func (p *parser) listenAddr(name string) string {
	raw := p.str(name)
	if raw == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(raw)
	if _, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil {
		p.fail(name, "%q is not host:port with a port number, such as 127.0.0.1:6060", raw)
		return ""
	}
	return raw
}

var dcRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// replication parses SimpleStrategy:N or NetworkTopologyStrategy:dc=N,dc=N.
func (p *parser) replication(name string) Replication {
	raw := p.str(name)
	class, rest, _ := strings.Cut(raw, ":")
	bad := func() Replication {
		p.fail(name, "%q is not SimpleStrategy:N or NetworkTopologyStrategy:dc1=N,dc2=N", raw)
		return Replication{}
	}
	switch strings.ToLower(class) {
	case "simplestrategy":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 {
			return bad()
		}
		return Replication{Class: "SimpleStrategy", Factor: n}
	case "networktopologystrategy":
		r := Replication{Class: "NetworkTopologyStrategy", PerDC: map[string]int{}}
		for _, pair := range strings.Split(rest, ",") {
			dc, factor, ok := strings.Cut(strings.TrimSpace(pair), "=")
			n, err := strconv.Atoi(factor)
			if !ok || err != nil || n < 0 || !dcRE.MatchString(dc) {
				return bad()
			}
			if _, dup := r.PerDC[dc]; dup {
				// Which count was meant? The last would win unseen.
				p.fail(name, "%q names data centre %s twice", raw, dc)
				return Replication{}
			}
			r.DCOrder = append(r.DCOrder, dc)
			r.PerDC[dc] = n
		}
		return r
	default:
		return bad()
	}
}

// publicURL reads an absolute http(s) URL without user, query or fragment
// (mailed links are built on it), without its trailing slash.
func (p *parser) publicURL(name string) string {
	raw := p.str(name)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		p.fail(name, "%q is not an http or https URL such as https://shelf.example.org", raw)
		return ""
	}
	return strings.TrimRight(raw, "/")
}

// optionalURL reads an http(s) URL as publicURL does, or nothing (off).
func (p *parser) optionalURL(name string) string {
	if p.str(name) == "" {
		return ""
	}
	return p.publicURL(name)
}
