// Package mail sends the accounts' mail (accounts.Mailer): to the log, for
// development (SHELF_MAILER=log, the default: the links are in the log),
// or through an SMTP server (SHELF_MAILER=smtp) with net/smtp.
package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain/accounts"
)

// Log writes every mail to the log instead of sending it, links and all:
// what `make run` needs to sign up and reset a password without a mail
// server. Never in production: a token in the log is a credential there.
type Log struct{ Logger zerolog.Logger }

var _ accounts.Mailer = Log{}

// Send logs m at info, its text whole.
func (l Log) Send(_ context.Context, m accounts.Message) error {
	l.Logger.Info().Str("to", m.To).Str("subject", m.Subject).Str("text", m.Text).
		Msg("mail (SHELF_MAILER=log: written here, not sent)")
	return nil
}

// TLS modes of an SMTP connection.
const (
	// TLSStartTLS: plain TCP, then STARTTLS, required (port 587).
	TLSStartTLS = "starttls"
	// TLSImplicit: TLS from the first byte (port 465).
	TLSImplicit = "tls"
	// TLSNone: no TLS at all (a local relay or a test server only).
	TLSNone = "none"
)

// SMTPConfig is an SMTP server and how to talk to it.
type SMTPConfig struct {
	Host string
	Port int
	// Username and Password for AUTH PLAIN; empty: no AUTH.
	Username, Password string
	// TLS is TLSStartTLS, TLSImplicit or TLSNone.
	TLS string
	// From is the sender, "Name <address>" or an address.
	From string
	// Timeout bounds one mail's whole conversation.
	Timeout time.Duration
	// TLSConfig, when set, replaces the default (tests trust their own
	// certificate with it).
	TLSConfig *tls.Config
}

// SMTP sends each mail on a connection of its own: mails are few (signups,
// resets), and a connection kept open would need keeping alive.
type SMTP struct {
	cfg  SMTPConfig
	from *mail.Address
}

var _ accounts.Mailer = (*SMTP)(nil)

// NewSMTP checks cfg and returns the mailer.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("mail: the sender %q: %w", cfg.From, err)
	}
	if cfg.Host == "" {
		return nil, errors.New("mail: no SMTP host")
	}
	switch cfg.TLS {
	case TLSStartTLS, TLSImplicit, TLSNone:
	default:
		return nil, fmt.Errorf("mail: TLS mode %q is not starttls, tls or none", cfg.TLS)
	}
	return &SMTP{cfg: cfg, from: from}, nil
}

// Send delivers m: connect (TLS as configured), AUTH when a user is set,
// MAIL, RCPT, DATA, QUIT, all within the timeout.
func (s *SMTP) Send(ctx context.Context, m accounts.Message) error {
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return fmt.Errorf("mail: the recipient: %w", err)
	}
	msg, err := s.compose(to, m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := s.converse(c, to.Address, msg); err != nil {
		return fmt.Errorf("mail: %s:%d: %w", s.cfg.Host, s.cfg.Port, withoutAddress(err, to.Address))
	}
	return nil
}

// withoutAddress is err with address (in any case) written [recipient]:
// a server's refusal names the recipient it refused, and the error is
// logged, where a user's address must not be
// (TestARefusedRecipientIsNotInTheError). errors.Is and As still see err.
func withoutAddress(err error, address string) error {
	text := regexp.MustCompile(`(?i)`+regexp.QuoteMeta(address)).ReplaceAllLiteralString(err.Error(), "[recipient]")
	if text == err.Error() {
		return err
	}
	return redacted{err: err, text: text}
}

// redacted is an error shown as text, which wraps err.
type redacted struct {
	err  error
	text string
}

func (r redacted) Error() string { return r.text }
func (r redacted) Unwrap() error { return r.err }

// dial opens the connection (TLS from the start in implicit mode) with a
// deadline for the whole conversation, and greets the server.
func (s *SMTP) dial(ctx context.Context) (*smtp.Client, error) {
	addr := net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mail: connecting to %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if s.cfg.TLS == TLSImplicit {
		tc := tls.Client(conn, s.tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mail: TLS with %s: %w", addr, err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, s.cfg.Host)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("mail: greeting from %s: %w", addr, err)
	}
	return c, nil
}

func (s *SMTP) tlsConfig() *tls.Config {
	if s.cfg.TLSConfig != nil {
		return s.cfg.TLSConfig
	}
	return &tls.Config{ServerName: s.cfg.Host, MinVersion: tls.VersionTLS12}
}

// converse runs the SMTP dialogue on an open client.
func (s *SMTP) converse(c *smtp.Client, to string, msg []byte) error {
	if err := c.Hello("localhost"); err != nil {
		return err
	}
	if s.cfg.TLS == TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return errors.New("the server offers no STARTTLS (SHELF_SMTP_TLS=starttls requires it)")
		}
		if err := c.StartTLS(s.tlsConfig()); err != nil {
			return err
		}
	}
	if s.cfg.Username != "" {
		// net/smtp refuses PLAIN over a connection without TLS, except to
		// localhost: credentials never cross a network in clear text.
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, s.cfg.Host)); err != nil {
			return err
		}
	}
	if err := c.Mail(s.from.Address); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// compose renders the message: headers (the subject encoded as RFC 2047
// words when it is not ASCII) and the text as UTF-8 quoted-printable, so
// no line is too long and nothing in the text can end the headers.
func (s *SMTP) compose(to *mail.Address, m accounts.Message) ([]byte, error) {
	var id [12]byte
	_, _ = rand.Read(id[:])
	domainPart := s.from.Address[strings.LastIndexByte(s.from.Address, '@')+1:]
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", s.from.String())
	header("To", to.String())
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", time.Now().UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id[:])+"@"+domainPart+">")
	header("MIME-Version", "1.0")
	header("Content-Type", `text/plain; charset="utf-8"`)
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(strings.ReplaceAll(m.Text, "\n", "\r\n"))); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
