//go:build nemesis

package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// account is what the workload knows of an account it signed up.
type account struct {
	id        string
	username  string   // as last known (a rename of unknown outcome may have changed it)
	email     string   // as signed up
	passwords []string // every password it may have now
	token     string
	deleted   bool // a deletion of it answered 202 (its job finishes the rest)
	// deleting: a deletion of it was sent. No reset is asked for it from
	// then on: once deleted, its email may be another account's, and
	// the link would reset that one.
	deleting bool
}

// item is a content item the workload created.
type item struct {
	id, owner string // owner: the account's id
	token     string
}

// group is a group the workload created during the run (the setup's
// crowd groups are in workload.groups).
type group struct {
	id, name string
	token    string // its creator's session ("" when the admin made it)
	password string // its creator's password then, which a closing proves
	closed   bool   // a closing of it answered 202 (its job finishes the rest)
}

// workload runs every operation at once from several workers.
type workload struct {
	c       *client
	mail    *mailbox
	admin   string // the admin's token
	groups  []string
	mu      sync.Mutex
	account []*account
	items   []*item
	made    []*group
}

// passwords numbers every password the workload chooses, so that no two
// of one account are equal.
var passwords atomic.Int64

func nextPassword() string { return fmt.Sprintf("nemesis password %d", passwords.Add(1)) }

// pick returns a random element, or nil.
func pick[T any](w *workload, list *[]*T) *T {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(*list) == 0 {
		return nil
	}
	return (*list)[rand.IntN(len(*list))]
}

// window names the keys signups and renames race for: three usernames and
// three emails per three-second window, so collisions are the rule.
func window() (string, string) {
	gen := time.Now().Unix() / 3
	return fmt.Sprintf("n%dx%d", gen, rand.IntN(3)), fmt.Sprintf("n%dx%d@example.org", gen, rand.IntN(3))
}

func (w *workload) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				w.step(i)
			}
		}()
	}
	wg.Wait()
}

// step runs one operation chosen at random: the lifecycle (deleting an
// account, creating and closing a group, resetting a password) a tenth of
// the time.
func (w *workload) step(worker int) {
	api := rand.IntN(len(w.c.Bases))
	switch r := rand.IntN(45); {
	case r < 8:
		u, e := window()
		w.signup(worker, api, u, e)
	case r < 12:
		w.login(worker, api)
	case r < 16:
		w.rename(worker, api)
	case r < 18:
		w.changePassword(worker, api)
	case r < 20:
		w.suspend(worker, api)
	case r < 22:
		w.unsuspend(worker, api)
	case r < 24:
		w.c.Call(worker, api, "list-suspended", http.MethodGet, "/v1/suspensions?limit=20", w.admin, nil, nil)
	case r < 28:
		w.join(worker, api)
	case r < 36:
		w.content(worker, api)
	case r < 40:
		w.library(worker, api)
	case r < 41:
		w.deleteAccount(worker, api)
	case r < 42:
		w.createGroup(worker, api, groupWindow())
	case r < 43:
		w.closeGroup(worker, api)
	default:
		w.reset(worker, api)
	}
}

func (w *workload) signup(worker, api int, u, e string) {
	pw := nextPassword()
	status, out := w.c.Call(worker, api, "signup", http.MethodPost, "/v1/users", "",
		map[string]string{"username": u, "email": e, "password": pw}, map[string]string{"username": u, "email": e, "password": pw})
	if status == http.StatusCreated {
		id, _ := out["id"].(string)
		w.mu.Lock()
		w.account = append(w.account, &account{id: id, username: u, email: e, passwords: []string{pw}})
		w.mu.Unlock()
	}
}

func (w *workload) login(worker, api int) {
	a := pick(w, &w.account)
	if a == nil {
		return
	}
	w.mu.Lock()
	name, pw := a.username, a.passwords[len(a.passwords)-1]
	w.mu.Unlock()
	if token := w.logIn(worker, api, a, name, pw); token != "" {
		w.mu.Lock()
		a.token = token
		w.mu.Unlock()
	}
}

// logIn opens a session of a by login and password; "" if refused. The
// history keeps the password, so that a session from before a reset or a
// password change is told from one opened with the new password.
func (w *workload) logIn(worker, api int, a *account, login, pw string) string {
	status, out := w.c.Call(worker, api, "login", http.MethodPost, "/v1/sessions", "",
		map[string]string{"login": login, "password": pw}, map[string]string{"user": a.id, "login": login, "password": pw})
	if status != http.StatusCreated {
		return ""
	}
	token, _ := out["token"].(string)
	return token
}

// session returns an account with a session, or nil.
func (w *workload) session() (*account, string) {
	a := pick(w, &w.account)
	if a == nil {
		return nil, ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if a.token == "" {
		return nil, ""
	}
	return a, a.token
}

func (w *workload) rename(worker, api int) {
	a, token := w.session()
	if a == nil {
		return
	}
	u, _ := window()
	w.mu.Lock()
	pw := a.passwords[len(a.passwords)-1]
	w.mu.Unlock()
	// A new username takes the current password (U9).
	status, _ := w.c.Call(worker, api, "rename", http.MethodPatch, "/v1/users/"+a.id, token,
		map[string]string{"username": u, "currentPassword": pw}, map[string]string{"user": a.id, "username": u})
	if status == http.StatusOK {
		w.mu.Lock()
		a.username = u
		w.mu.Unlock()
	}
}

func (w *workload) changePassword(worker, api int) {
	a, token := w.session()
	if a == nil {
		return
	}
	w.mu.Lock()
	current := a.passwords[len(a.passwords)-1]
	next := nextPassword()
	a.passwords = append(a.passwords, next) // it may apply whatever the answer
	w.mu.Unlock()
	w.c.Call(worker, api, "change-password", http.MethodPut, "/v1/users/"+a.id+"/password", token,
		map[string]string{"currentPassword": current, "newPassword": next}, map[string]string{"user": a.id, "password": next})
}

func (w *workload) suspend(worker, api int) {
	a := pick(w, &w.account)
	if a == nil {
		return
	}
	body := map[string]string{"reason": "nemesis"}
	if rand.IntN(2) == 0 {
		body["until"] = time.Now().Add(time.Duration(5+rand.IntN(20)) * time.Second).UTC().Format(time.RFC3339)
	}
	w.c.Call(worker, api, "suspend", http.MethodPost, "/v1/users/"+a.id+"/suspension", w.admin, body,
		map[string]string{"user": a.id, "until": body["until"]})
}

func (w *workload) unsuspend(worker, api int) {
	a := pick(w, &w.account)
	if a == nil {
		return
	}
	w.c.Call(worker, api, "unsuspend", http.MethodDelete, "/v1/users/"+a.id+"/suspension", w.admin, nil,
		map[string]string{"user": a.id})
}

// join adds an account to one of the small groups (capacity 3): adds race
// for the last places.
func (w *workload) join(worker, api int) {
	a := pick(w, &w.account)
	if a == nil || len(w.groups) == 0 {
		return
	}
	g := w.groups[rand.IntN(len(w.groups))]
	if made := pick(w, &w.made); made != nil && rand.IntN(2) == 0 {
		g = made.id
	}
	w.c.Call(worker, api, "group-add", http.MethodPut, "/v1/groups/"+g+"/members/"+a.id, w.admin,
		map[string]string{"role": "member"}, map[string]string{"group": g, "user": a.id})
}

var visibilities = []string{"public", "loggedin", "private"}

// content creates, updates, shares, unshares or deletes an item.
func (w *workload) content(worker, api int) {
	it := pick(w, &w.items)
	if it == nil || rand.IntN(4) == 0 {
		a, token := w.session()
		if a == nil {
			return
		}
		v := visibilities[rand.IntN(3)]
		status, out := w.c.Call(worker, api, "content-create", http.MethodPost, "/v1/content", token,
			map[string]string{"name": "item", "visibility": v}, map[string]string{"owner": a.id, "visibility": v})
		if status == http.StatusCreated {
			id, _ := out["id"].(string)
			w.mu.Lock()
			w.items = append(w.items, &item{id: id, owner: a.id, token: token})
			w.mu.Unlock()
		}
		return
	}
	other := pick(w, &w.account)
	switch rand.IntN(6) {
	case 0, 1:
		v := visibilities[rand.IntN(3)]
		name := fmt.Sprintf("item %d", rand.IntN(1000))
		w.c.Call(worker, api, "content-update", http.MethodPatch, "/v1/content/"+it.id, it.token,
			map[string]string{"name": name, "visibility": v}, map[string]string{"content": it.id, "name": name, "visibility": v})
	case 2, 3:
		role := []string{"viewer", "manager"}[rand.IntN(2)]
		w.c.Call(worker, api, "content-share", http.MethodPut, "/v1/content/"+it.id+"/members/"+other.id, it.token,
			map[string]string{"role": role}, map[string]string{"content": it.id, "principal": other.id, "role": role})
	case 4:
		w.c.Call(worker, api, "content-unshare", http.MethodDelete, "/v1/content/"+it.id+"/members/"+other.id, it.token, nil,
			map[string]string{"content": it.id, "principal": other.id})
	default:
		if rand.IntN(4) == 0 {
			w.c.Call(worker, api, "content-delete", http.MethodDelete, "/v1/content/"+it.id, it.token, nil,
				map[string]string{"content": it.id})
		}
	}
}

// library reads a library page, as its owner or anonymously.
func (w *workload) library(worker, api int) {
	a, token := w.session()
	if a == nil {
		return
	}
	if rand.IntN(2) == 0 {
		token = ""
	}
	w.c.Call(worker, api, "library", http.MethodGet, "/v1/users/"+a.id+"/library?limit=20", token, nil,
		map[string]string{"user": a.id, "anonymous": fmt.Sprint(token == "")})
}
