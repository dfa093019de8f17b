//go:build regions

package regions

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"shelf/tests/internal/checker"
)

// account is what the workload knows of an account a 201 signup made.
type account struct {
	id       string
	username string // as last known (a rename of unknown outcome may have changed it)
	password string // never changed here
}

// workload collides in both regions at once: signups of one username and
// email through both API processes, and two admins (one a region) renaming
// two accounts to one username, asking for one new email for two accounts,
// suspending one account with two different ends. Logins, user reads and
// library pages run beside them (reads: the latency report).
type workload struct {
	c      *checker.Client
	admins []string // admins[i] is a session of region i's admin
	mu     sync.Mutex
	seen   []*account
}

// passwords numbers every password the workload chooses.
var passwords atomic.Int64

func nextPassword() string { return fmt.Sprintf("regions password %d", passwords.Add(1)) }

// window names the keys the regions race for: three usernames and three
// emails per three-second window, so collisions are the rule.
func window() (string, string) {
	gen := time.Now().Unix() / 3
	k := rand.IntN(3)
	return fmt.Sprintf("r%dx%d", gen, k), fmt.Sprintf("r%dx%d@example.org", gen, k)
}

func (w *workload) pick() *account {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return nil
	}
	return w.seen[rand.IntN(len(w.seen))]
}

func (w *workload) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				w.step(i)
			}
		})
	}
	wg.Wait()
}

// both runs f through region 0 and region 1 at once (as worker and
// worker+1000).
func both(worker int, f func(worker, api int)) {
	var wg sync.WaitGroup
	for api := range 2 {
		wg.Go(func() { f(worker+1000*api, api) })
	}
	wg.Wait()
}

// step runs one operation, through a region chosen at random, or a
// colliding pair through both.
func (w *workload) step(worker int) {
	api := rand.IntN(2)
	pair := rand.IntN(2) == 0
	switch r := rand.IntN(100); {
	case r < 25:
		u, e := window()
		if pair {
			both(worker, func(worker, api int) { w.signup(worker, api, u, e) })
		} else {
			w.signup(worker, api, u, e)
		}
	case r < 35:
		w.login(worker, api)
	case r < 50:
		u, _ := window()
		if a, b := w.pick(), w.pick(); pair && a != nil && b != nil && a != b {
			both(worker, func(worker, api int) { w.rename(worker, api, []*account{a, b}[api], u) })
		} else if a != nil {
			w.rename(worker, api, a, u)
		}
	case r < 60:
		_, e := window()
		if a, b := w.pick(), w.pick(); pair && a != nil && b != nil && a != b {
			both(worker, func(worker, api int) { w.changeEmail(worker, api, []*account{a, b}[api], e) })
		} else if a != nil {
			w.changeEmail(worker, api, a, e)
		}
	case r < 70:
		if a := w.pick(); pair && a != nil {
			both(worker, func(worker, api int) { w.suspend(worker, api, a) })
		} else if a != nil {
			w.suspend(worker, api, a)
		}
	case r < 75:
		if a := w.pick(); a != nil {
			w.c.Call(worker, api, "unsuspend", http.MethodDelete, "/v1/users/"+a.id+"/suspension", w.admins[api], nil,
				map[string]string{"user": a.id})
		}
	case r < 88:
		if a := w.pick(); a != nil {
			w.c.Call(worker, api, "read-user", http.MethodGet, "/v1/users/"+a.id, "", nil, map[string]string{"user": a.id})
		}
	default:
		if a := w.pick(); a != nil {
			w.c.Call(worker, api, "library", http.MethodGet, "/v1/users/"+a.id+"/library?limit=20", "", nil,
				map[string]string{"user": a.id, "anonymous": "true"})
		}
	}
}

func (w *workload) signup(worker, api int, u, e string) {
	pw := nextPassword()
	status, out := w.c.Call(worker, api, "signup", http.MethodPost, "/v1/users", "",
		map[string]string{"username": u, "email": e, "password": pw}, map[string]string{"username": u, "email": e, "password": pw})
	if status == http.StatusCreated {
		id, _ := out["id"].(string)
		w.mu.Lock()
		w.seen = append(w.seen, &account{id: id, username: u, password: pw})
		w.mu.Unlock()
	}
}

// login by username: a 201 is a read of who holds it (the claim model).
func (w *workload) login(worker, api int) {
	a := w.pick()
	if a == nil {
		return
	}
	w.mu.Lock()
	name := a.username
	w.mu.Unlock()
	w.c.Call(worker, api, "login", http.MethodPost, "/v1/sessions", "",
		map[string]string{"login": name, "password": a.password}, map[string]string{"user": a.id, "login": name, "password": a.password})
}

// rename: the region's admin gives a the username u (an admin sends no
// password for another account).
func (w *workload) rename(worker, api int, a *account, u string) {
	status, _ := w.c.Call(worker, api, "rename", http.MethodPatch, "/v1/users/"+a.id, w.admins[api],
		map[string]string{"username": u}, map[string]string{"user": a.id, "username": u})
	if status == http.StatusOK {
		w.mu.Lock()
		a.username = u
		w.mu.Unlock()
	}
}

// changeEmail: the region's admin asks for the email e for a; it stays
// pending (the link mailed to it is never followed), held beside a's own.
func (w *workload) changeEmail(worker, api int, a *account, e string) {
	w.c.Call(worker, api, "email-change", http.MethodPatch, "/v1/users/"+a.id, w.admins[api],
		map[string]string{"email": e}, map[string]string{"user": a.id, "email": e})
}

// suspend: for good, or until 5-25 s from now.
func (w *workload) suspend(worker, api int, a *account) {
	body := map[string]string{"reason": fmt.Sprintf("regions dc%d", api+1)}
	if rand.IntN(2) == 0 {
		body["until"] = time.Now().Add(time.Duration(5+rand.IntN(20)) * time.Second).UTC().Format(time.RFC3339)
	}
	w.c.Call(worker, api, "suspend", http.MethodPost, "/v1/users/"+a.id+"/suspension", w.admins[api], body,
		map[string]string{"user": a.id, "until": body["until"]})
}

// signups are the accounts U3 checks.
func (w *workload) signups() []checker.Signup {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]checker.Signup, len(w.seen))
	for i, a := range w.seen {
		out[i] = checker.Signup{ID: a.id, Passwords: []string{a.password}}
	}
	return out
}
