//go:build nemesis

package nemesis

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"shelf/tests/internal/checker"
)

// The lifecycle part of the workload: accounts deleted, groups created and
// closed, passwords reset with the mailed token. Each races what its
// checks are about: a deletion or a closing sometimes runs twice at once
// (the user and an admin, the creator and an admin) and beside a signup or
// a creation of the names it frees; a reset runs beside a login with the
// old password, whose session is used once the reset answered, and its
// token is sometimes used again, or twice at once.

// together runs each f at once and waits for them all.
func together(fs ...func()) {
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}

// groupWindow names the groups creations race for: two names per
// six-second window.
func groupWindow() string {
	return fmt.Sprintf("g%dx%d", time.Now().Unix()/6, rand.IntN(2))
}

// deleteAccount deletes an account, by its own session or an admin's,
// sometimes both at once, sometimes beside a signup of its username or
// its email.
func (w *workload) deleteAccount(worker, api int) {
	a := pick(w, &w.account)
	if a == nil {
		return
	}
	w.mu.Lock()
	own, username, email := a.token, a.username, a.email
	// The user's own deletion proves the password (U9); an admin's
	// does not read it.
	body := map[string]string{"currentPassword": a.passwords[len(a.passwords)-1]}
	a.deleting = true
	w.mu.Unlock()
	del := func(token, by string, worker int) func() {
		return func() {
			status, _ := w.c.Call(worker, api, "delete-account", http.MethodPost, "/v1/users/"+a.id+"/deletion", token, body,
				map[string]string{"user": a.id, "by": by})
			if status == http.StatusAccepted {
				w.mu.Lock()
				a.deleted = true
				w.mu.Unlock()
			}
		}
	}
	steps := []func(){del(w.admin, "admin", worker)}
	if own != "" && rand.IntN(2) == 0 {
		steps[0] = del(own, "self", worker)
	}
	if own != "" && rand.IntN(3) == 0 {
		steps = append(steps, del(w.admin, "admin", worker+100))
	}
	if rand.IntN(2) == 0 {
		u, e := window()
		if rand.IntN(2) == 0 {
			u = username
		} else {
			e = email
		}
		steps = append(steps, func() { w.signup(worker+200, api, u, e) })
	}
	together(steps...)
}

// createGroup creates a group named name (capacity 3), as an account with
// a session or as the admin.
func (w *workload) createGroup(worker, api int, name string) {
	token, by, password := w.admin, "admin", ""
	if a, t := w.session(); a != nil && rand.IntN(2) == 0 {
		token, by = t, a.id
		w.mu.Lock()
		password = a.passwords[len(a.passwords)-1]
		w.mu.Unlock()
	}
	status, out := w.c.Call(worker, api, "group-create", http.MethodPost, "/v1/groups", token,
		map[string]any{"name": name, "maxMembers": 3}, map[string]string{"name": name, "by": by})
	if status == http.StatusCreated {
		id, _ := out["id"].(string)
		g := &group{id: id, name: name}
		if by != "admin" {
			g.token, g.password = token, password
		}
		w.mu.Lock()
		w.made = append(w.made, g)
		w.mu.Unlock()
	}
}

// closeGroup closes a group the workload created, by its creator or an
// admin, sometimes both at once, sometimes beside a creation of its name.
func (w *workload) closeGroup(worker, api int) {
	g := pick(w, &w.made)
	if g == nil {
		return
	}
	closing := func(token, by string, worker int) func() {
		return func() {
			// A manager's closing proves the password; an admin's does not
			// read it.
			body := map[string]string{}
			if by != "admin" {
				body["currentPassword"] = g.password
			}
			status, _ := w.c.Call(worker, api, "group-close", http.MethodPost, "/v1/groups/"+g.id+"/closing", token, body,
				map[string]string{"group": g.id, "name": g.name, "by": by})
			if status == http.StatusAccepted {
				w.mu.Lock()
				g.closed = true
				w.mu.Unlock()
			}
		}
	}
	steps := []func(){closing(w.admin, "admin", worker)}
	if g.token != "" && rand.IntN(2) == 0 {
		steps[0] = closing(g.token, "creator", worker)
		if rand.IntN(2) == 0 {
			steps = append(steps, closing(w.admin, "admin", worker+100))
		}
	}
	if rand.IntN(2) == 0 {
		steps = append(steps, func() { w.createGroup(worker+200, api, g.name) })
	}
	together(steps...)
}

// reset asks for a reset link for an account, takes the token from the
// mail and sets a new password with it. Half the time a login with the old
// password runs beside the confirmation, and its session is used once the
// confirmation answered; the account's own session is used then too. A
// token that worked is sometimes sent again with another password, and a
// token is sometimes sent twice at once, with two passwords.
func (w *workload) reset(worker, api int) {
	a := pick(w, &w.account)
	if a == nil {
		return
	}
	w.mu.Lock()
	email, username, old, own, deleting := a.email, a.username, a.passwords[len(a.passwords)-1], a.token, a.deleting
	w.mu.Unlock()
	if deleting {
		return
	}
	status, _ := w.c.Call(worker, api, "reset-request", http.MethodPost, "/v1/password-resets", "",
		map[string]string{"email": email}, map[string]string{"user": a.id, "email": email})
	if status != http.StatusAccepted {
		return
	}
	token, ok := w.mail.take(email, 10*time.Second)
	w.mu.Lock()
	deleting = a.deleting
	w.mu.Unlock()
	if !ok || deleting {
		return
	}
	confirm := func(pw string, worker int) func() {
		return func() {
			w.mu.Lock()
			a.passwords = append(a.passwords, pw) // it may apply whatever the answer
			w.mu.Unlock()
			status, _ := w.c.Call(worker, api, "reset-confirm", http.MethodPost, "/v1/password-resets/confirm", "",
				map[string]string{"token": token, "newPassword": pw},
				map[string]string{"user": a.id, "token": checker.SessionLabel(token), "password": pw})
			if status >= 400 && status < 500 { // refused: it sets nothing (U8)
				w.mu.Lock()
				if i := slices.Index(a.passwords, pw); i >= 0 {
					a.passwords = slices.Delete(a.passwords, i, i+1)
				}
				w.mu.Unlock()
			}
		}
	}
	var inFlight string
	steps := []func(){confirm(nextPassword(), worker)}
	if rand.IntN(4) == 0 {
		steps = append(steps, confirm(nextPassword(), worker+100))
	}
	if rand.IntN(2) == 0 {
		steps = append(steps, func() { inFlight = w.logIn(worker+200, api, a, username, old) })
	}
	together(steps...)
	for _, s := range []string{inFlight, own} {
		if s != "" {
			w.c.Call(worker, api, "me", http.MethodGet, "/v1/me", s, nil, map[string]string{"user": a.id})
		}
	}
	if rand.IntN(3) == 0 {
		confirm(nextPassword(), worker)()
	}
}
