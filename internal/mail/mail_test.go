package mail

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// refusingServer is an SMTP server on a loopback port that greets, takes
// the sender and refuses every recipient as many servers do, naming the
// address it refused.
func refusingServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(conn)
		write := func(s string) { _, _ = conn.Write([]byte(s + "\r\n")) }
		write("220 test ESMTP")
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch verb := strings.ToUpper(strings.Fields(line + " x")[0]); verb {
			case "EHLO", "HELO", "MAIL":
				write("250 ok")
			case "RCPT":
				// RCPT TO:<address>: echoed back, as Postfix does.
				to := strings.TrimSpace(line[strings.Index(line, ":")+1:])
				write("550 5.1.1 " + to + ": Recipient address rejected: User unknown")
			case "QUIT":
				write("221 bye")
				return
			default:
				write("502 no")
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestARefusedRecipientIsNotInTheError: the error of a mail the server
// refused is logged (by the accounts: "... failed; the user can ask
// again"), and a server's refusal of a recipient names the address. The
// log must not hold a user's address: the error named it as the server
// wrote it.
func TestARefusedRecipientIsNotInTheError(t *testing.T) {
	t.Parallel()
	port := refusingServer(t)
	s, err := NewSMTP(SMTPConfig{Host: "127.0.0.1", Port: port, TLS: TLSNone, From: "shelf@example.org", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), accounts.Message{To: "Alice.Secret@example.org", Subject: "hello", Text: "hello"})
	if err == nil {
		t.Fatal("a refused recipient answered success")
	}
	if strings.Contains(strings.ToLower(err.Error()), "alice.secret") {
		t.Errorf("the error names the recipient: %v", err)
	}
	if !strings.Contains(err.Error(), "550") || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("the error no longer says which server refused what: %v", err)
	}
}
