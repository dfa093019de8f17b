// The shelf console: plain pages over the public API only. The session
// token lives in sessionStorage (gone with the tab). Pages are hash routes
// (#/library, #/item/<id>, #/browse/<user|group>/<name>, #/groups,
// #/groups/<name>, #/account, for admins #/moderation[/<username>] and
// #/audit, and without a session #/auth (log in or sign up), #/forgot, the
// mailed links #/verify?token=..., #/reset?token=...,
// #/revert-email?token=..., #/refuse-email?token=... and
// #/revert-factor?token=..., and an item or
// a library shared by its link), so each can be linked to; the table
// `pages` below lists them, and a page that works without a session says
// public: true. A mailed link's token leaves the address bar as soon as
// its page reads it (linkToken).
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  // params is the query of the route (#/page?key=value), for pages reached
  // from a link that carries one.
  // carried: the message line was said for the next page shown (carry).
  const state = { token: sessionStorage.getItem('shelf.token'), me: null, moved: '', params: new URLSearchParams(), carried: false };
  // Rows per page of every list (sessionStorage shelf.pageSize overrides
  // it: the browser test pages through short lists with 2).
  const pageSize = Math.min(100, Math.max(1, Number(sessionStorage.getItem('shelf.pageSize')) || 10));

  // ---- The API ----

  // ApiError is a refused request: the problem's detail, its code, and
  // the fields it names ({field, code, message}).
  class ApiError extends Error {
    constructor(status, message, fields, code, problem) {
      super(message);
      this.status = status;
      this.fields = fields || [];
      this.code = code || '';
      // problem: the whole answer, for its extension members (a
      // suspension's suspendedAt and until).
      this.problem = problem || {};
    }
  }

  // signedOut counts the sessions this tab let go of (forget: a Log out,
  // a session that ended, a reset, a deletion). A request sent before
  // one and answered after it is Dropped, whatever its answer: nothing
  // of the last session's (a page's rows, a change's outcome, a refusal)
  // shows afterwards, on a page hidden or shown, to whoever uses the tab
  // next.
  let signedOut = 0;
  class Dropped extends Error {}

  // sayError says err on the message line, unless it was Dropped.
  function sayError(err) {
    if (!(err instanceof Dropped)) say(err.message, true);
  }

  // fieldError is a refusal of this page's own about one field (a name
  // that finds nobody), shown as the server's are.
  function fieldError(field, message) {
    return new ApiError(400, message, [{ field, message }]);
  }

  // api sends a request with the tab's session and answers the parsed
  // body, or throws an ApiError; quiet: a 401 is only thrown, the tab
  // keeps its state (start reads the session that way); bare: sent
  // without the session (linkPost).
  async function api(method, path, body, { quiet, bare } = {}) {
    const at = signedOut;
    const headers = {};
    if (state.token && !bare) headers.Authorization = 'Bearer ' + state.token;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res;
    let text;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      text = await res.text();
    } catch (err) {
      if (at !== signedOut) throw new Dropped();
      // No answer came (the network, or shelf itself, is down): a read may
      // simply be tried again; a change may have been made or not.
      throw new ApiError(0, 'shelf did not answer (the network or the server is down)'
        + (method === 'GET' ? ': check your connection and try again.'
          : ', so this may or may not have been done: check your connection, then look whether it was before trying again.'), [], 'no_answer');
    }
    if (at !== signedOut) throw new Dropped();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (err) {
      data = null;
    }
    if (res.status === 401 && headers.Authorization && (!data || data.code === 'unauthorized') && !quiet) {
      // The tab's session is gone (ended elsewhere, expired, the account
      // suspended or deleted): the tab logs out and says so, on the login
      // page. A wrong current password is a 401 too, but its own
      // (invalid_credentials): the session is still good.
      sessionEnded();
      throw new ApiError(401, endedText, [], 'unauthorized');
    }
    if (!res.ok) {
      let message = (data && (data.detail || data.title)) || res.statusText;
      // A limit says when it lets the next one in (Retry-After, seconds):
      // said when its words do not say it ("try again later").
      const wait = Number(res.headers.get('Retry-After'));
      if (res.status === 429 && wait > 0 && !/\d/.test(message)) message += ' ' + waitWords(wait);
      throw new ApiError(res.status, message, data && data.errors, data && data.code, data);
    }
    return data;
  }

  // waitWords says when a refusal that asked to wait seconds lets the
  // next attempt in.
  function waitWords(seconds) {
    if (seconds < 120) return 'You may try again in ' + seconds + (seconds === 1 ? ' second.' : ' seconds.');
    const minutes = Math.ceil(seconds / 60);
    return 'You may try again in ' + minutes + ' minutes (at ' + new Date(Date.now() + seconds * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) + ').';
  }

  // endedText is what a tab whose session ended says, on the login page.
  const endedText = 'This tab\'s session has ended: it was logged out elsewhere, it expired, or the account was suspended or deleted. Log in to go on.';

  const enc = encodeURIComponent;

  // ---- Names instead of ids ----

  const names = new Map();

  // nameOf is what people call a user (username) or a group (name), read
  // once per page load; the id itself only when the lookup fails.
  async function nameOf(id) {
    if (names.has(id)) return names.get(id);
    let name = id;
    try {
      if (id.startsWith('u_')) name = (await api('GET', '/v1/users/' + enc(id))).username;
      else if (id.startsWith('g_')) name = (await api('GET', '/v1/groups/' + enc(id))).name;
    } catch (err) {
      if (err instanceof Dropped) throw err;
      name = id;
    }
    names.set(id, name);
    return name;
  }

  // named finds a user by username or a group by name; one that finds
  // nobody is a refusal of field.
  async function named(kind, name, field) {
    const what = kind === 'group' ? 'group' : 'user';
    if (!name) throw fieldError(field, 'Give a ' + what + ' name.');
    try {
      const found = await api('GET', (what === 'group' ? '/v1/groups/by-name/' : '/v1/users/by-username/') + enc(name));
      names.set(found.id, what === 'group' ? found.name : found.username);
      return found;
    } catch (err) {
      if (err.status === 404) throw fieldError(field, 'No ' + what + ' is named ' + name + '.');
      throw err;
    }
  }

  const userNamed = (username, field) => named('user', username, field);
  const groupNamed = (name, field) => named('group', name, field);

  // ---- Messages and errors next to their fields ----

  // say puts text on the message line of the page shown; the next page
  // shown clears it (route), unless carry said it for that page.
  function say(text, isError) {
    $('message').textContent = text;
    $('message').className = isError ? 'error' : '';
    $('message').removeAttribute('aria-busy');
  }

  // followJob says how a job goes (an account's deletion, a group's
  // closing: the API answered 202 with it) in the message line until it
  // is finished, busy meanwhile: asked again each second (longer while
  // the server does not answer), without the session, which a deletion
  // ends. words.busy(job) and words.done(job) say it, and that a failed
  // run is being tried again (job.retrying); another message taking the
  // line's place stops the updates (the job goes on).
  async function followJob(job, words) {
    const line = $('message');
    const busy = () => {
      say(words.busy(job) + (job.retrying ? ' A step failed and is being tried again on its own: nothing to do but wait.' : ''));
      line.setAttribute('aria-busy', 'true');
    };
    busy();
    let pause = 1000;
    while (job.state !== 'finished') {
      await new Promise((resolve) => setTimeout(resolve, pause));
      if (line.getAttribute('aria-busy') !== 'true') return;
      try {
        const res = await fetch('/v1/jobs/' + enc(job.id));
        if (!res.ok) throw new Error(res.statusText);
        job = await res.json();
        pause = 1000;
      } catch (err) {
        pause = Math.min(pause * 2, 10000);
      }
      if (line.getAttribute('aria-busy') !== 'true') return;
      busy();
    }
    say(words.done(job));
  }

  // jobProgress is how far a job went through its items, in words ('' before it counted them).
  function jobProgress(job) {
    return job.total > 0 ? ' (' + job.done + ' of ' + job.total + ' items)' : '';
  }

  // readFailed is a change's outcome followed by the failure of the read
  // that was to show it (the lists it changed, or the page it went on
  // to), and what to do: the change was made, and stays said.
  function readFailed(outcome, err) {
    return outcome + ' Then reading the page failed: ' + err.message + (/[.!?]$/.test(err.message) ? '' : '.')
      + ' Reload the page to see it as it is now.';
  }

  // changed says outcome (or what the function outcome answers) once
  // refresh, the reads that show a change made, is done, or beside their
  // failure (readFailed). A read Dropped, or one that found the session
  // ended (the tab is logged out, and says so), is thrown as any other.
  async function changed(outcome, refresh) {
    const text = () => (typeof outcome === 'function' ? outcome() : outcome);
    try {
      await refresh();
    } catch (err) {
      if (err instanceof Dropped || !state.token) throw err;
      say(readFailed(text(), err), true);
      return;
    }
    say(text());
  }

  // carry says the outcome of an action that goes on to another page
  // (or shows the same one afresh): the message stays for that page.
  function carry(text, isError) {
    say(text, isError);
    state.carried = true;
  }

  function clearErrors(form) {
    form.querySelectorAll('.field-error').forEach((el) => el.remove());
    form.querySelectorAll('[aria-invalid]').forEach((el) => {
      el.removeAttribute('aria-invalid');
      el.removeAttribute('aria-describedby');
    });
  }

  // showError puts each field the error names beside that field of form;
  // the rest, and the error itself, go to the message line.
  function showError(form, err) {
    if (err instanceof Dropped) return;
    const loose = [];
    for (const f of (err && err.fields) || []) {
      // A recovery code is typed in a form's code field (withCode sends
      // it as recoveryCode): its refusal goes there too.
      const input = form && f.field && (form.elements.namedItem(f.field)
        || (f.field === 'recoveryCode' && form.elements.namedItem('code')));
      if (!input || !input.closest) {
        loose.push((f.field ? f.field + ': ' : '') + f.message);
        continue;
      }
      const note = document.createElement('span');
      note.className = 'field-error';
      note.id = form.id + '-' + f.field + '-error';
      note.textContent = f.message;
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', note.id);
      // Inside the field's label, under the field: the form keeps its line.
      // A field the page had hidden is shown (a code field, hidden while
      // the page knew of no second factor, one added since in another tab).
      const label = input.closest('label');
      if (label) {
        label.append(note);
        label.hidden = false;
      } else input.after(note);
    }
    say(err.message + (loose.length ? ' (' + loose.join('; ') + ')' : ''), true);
    // The eye goes where the fix is: the first field refused.
    const first = form && form.querySelector('[aria-invalid="true"]');
    if (first) first.focus();
  }

  // busyWhile marks el busy (aria-busy, and a button or a changed select
  // disabled) while fn runs; a second press meanwhile does nothing (no
  // double submit), and a select cannot be changed again only to have
  // its change dropped (the library's order would then say newest over
  // the oldest rows read). A button that is off whatever runs (data-off:
  // a pager's Next on its last page) stays disabled after.
  async function busyWhile(el, fn) {
    if (!el) return fn();
    if (el.getAttribute('aria-busy') === 'true') return undefined;
    const buttons = el.tagName === 'FORM' ? [...el.querySelectorAll('button')] : ['BUTTON', 'SELECT'].includes(el.tagName) ? [el] : [];
    // A disabled control loses the keyboard's focus to the page's start
    // (and a question answered leaves it in its closed dialog): the
    // pressed (or changed) control, or a form's pressed button, takes it
    // back once enabled again, unless it went elsewhere meanwhile (a
    // field refused, a new page).
    const focused = el.contains(document.activeElement) ? document.activeElement : null;
    el.setAttribute('aria-busy', 'true');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      return await fn();
    } finally {
      el.removeAttribute('aria-busy');
      buttons.forEach((b) => { b.disabled = b.hasAttribute('data-off'); });
      const now = document.activeElement;
      const lost = !now || now === document.body || Boolean(now.closest('dialog:not([open])'));
      if (focused && !focused.disabled && focused.isConnected && lost) focused.focus();
    }
  }

  function form(id, handler) {
    $(id).addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const f = ev.target;
      if (f.getAttribute('aria-busy') === 'true') return;
      clearErrors(f);
      // What people type loses white space at its ends (the API refuses
      // it, 400 untrimmed); passwords are sent exactly as typed.
      const values = Object.fromEntries([...new FormData(f)].map(([k, v]) =>
        [k, typeof v === 'string' && !/password/i.test(k) ? v.trim() : v]));
      try {
        await busyWhile(f, () => handler(values, f));
      } catch (err) {
        showError(f, err);
      }
    });
  }

  // confirmed asks before an action that removes something: question,
  // and yes, the button that goes ahead. Answers whether it was pressed.
  function confirmed(question, yes) {
    const d = $('confirm');
    $('confirm-text').textContent = question;
    $('confirm-yes').textContent = yes;
    d.returnValue = '';
    return new Promise((resolve) => {
      d.addEventListener('close', () => resolve(d.returnValue === 'yes'), { once: true });
      d.showModal();
      // Enter on a dialog that just opened must not remove anything.
      $('confirm-no').focus();
    });
  }

  // removal is act for an action that removes something: fn runs once
  // the question (or what the function question answers) is confirmed;
  // a cancel says nothing changed. A button in a table whose row went
  // with what it removed leaves the focus in the table (keepFocusIn).
  function removal(question, yes, fn) {
    const run = act(async () => {
      if (!(await confirmed(typeof question === 'function' ? question() : question, yes))) {
        say('Nothing changed.');
        return;
      }
      await fn();
    });
    return async (ev) => {
      const pressed = ev && ev.currentTarget;
      const table = pressed && pressed.closest('table');
      const controls = () => [...table.querySelectorAll('button, select, a[href]')];
      const at = table ? controls().indexOf(pressed) : -1;
      await run(ev);
      if (table && !pressed.isConnected && table.isConnected) keepFocusIn(table, controls(), at);
    };
  }

  // keepFocusIn moves the focus, lost with a removed row, to the control
  // now at the pressed one's place in table (the next row's, or the last
  // row's), or to the table itself when it has none: the keyboard goes on
  // from where it was, not from the page's start.
  function keepFocusIn(table, controls, at) {
    const next = controls[Math.min(at, controls.length - 1)];
    if (next) {
      next.focus();
      return;
    }
    table.tabIndex = -1;
    table.focus();
  }

  // act runs a button's action, its error on the message line.
  // The pressed button (or changed control) is busy meanwhile.
  function act(fn) {
    return async (ev) => {
      try {
        await busyWhile(ev && ev.currentTarget, fn);
      } catch (err) {
        sayError(err);
      }
    };
  }

  // undone sends a removal, taking its 404 with one of codes (nothing
  // left to remove: someone else removed it first, or a press whose
  // answer was lost did) as done; answers ' (already done)' then, else ''.
  async function undone(request, ...codes) {
    try {
      await request();
      return '';
    } catch (err) {
      if (err.status !== 404 || !codes.includes(err.code)) throw err;
      return ' (already done)';
    }
  }

  // ---- Tables and paging ----

  const when = (ts) => (ts ? new Date(ts).toLocaleString() : '—');

  // word is the console's one wording of an enum value of the API, the
  // same wherever it shows (the forms' options say it so too): loggedin
  // is "logged in", role_granted "role granted".
  const words = { loggedin: 'logged in' };
  const word = (v) => words[v] || String(v).replaceAll('_', ' ');

  function cell(content) {
    const td = document.createElement('td');
    if (content instanceof Node) td.append(content);
    else td.textContent = content === undefined || content === null ? '' : String(content);
    return td;
  }

  function row(...cells) {
    const tr = document.createElement('tr');
    tr.append(...cells.map(cell));
    return tr;
  }

  function link(text, hash) {
    const a = document.createElement('a');
    a.href = hash;
    a.textContent = text;
    return a;
  }

  function button(text, onClick, label) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    if (label) b.setAttribute('aria-label', label);
    b.addEventListener('click', act(onClick));
    return b;
  }

  // removeButton is a button whose action removes something, once the
  // question is answered with yes (removal).
  function removeButton(text, question, yes, onClick, label) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    if (label) b.setAttribute('aria-label', label);
    b.addEventListener('click', removal(question, yes, onClick));
    return b;
  }

  function fill(tableId, rows, empty) {
    const body = $(tableId).tBodies[0];
    if (rows.length === 0 && empty) {
      const tr = row(empty);
      tr.className = 'empty';
      tr.firstChild.colSpan = $(tableId).tHead.rows[0].cells.length;
      body.replaceChildren(tr);
      return;
    }
    body.replaceChildren(...rows);
  }

  // Every action says its outcome on the message line last, once the lists
  // it changes are shown again.

  // Pager pages through one list: next by the page's nextCursor, back
  // through the cursors it came by (kept, so going back reads the same
  // pages again). fetchPage(cursor) answers a page; render(items) shows it.
  // A pager's label says the page and which rows it shows ("page 2 ·
  // 11–20"): a count a list can say without counting the whole list.
  // address, when given, is told each page shown (its cursor and number),
  // to keep it in the address bar; at opens a page a link named.
  class Pager {
    constructor(name, fetchPage, render, { address } = {}) {
      this.fetchPage = fetchPage;
      this.render = render;
      this.address = address;
      this.cursors = [''];
      // offset: pages before the first cursor kept (a link to page 5
      // knows its cursor, not the four before it).
      this.offset = 0;
      this.next = '';
      this.loaded = false;
      // seq counts the loads begun: only the last one's page is shown.
      this.seq = 0;
      const el = document.querySelector('[data-pager="' + name + '"]');
      el.setAttribute('role', 'group');
      el.setAttribute('aria-label', 'Pages of ' + name.replace('-', ' '));
      this.prevButton = button('Previous', () => this.back());
      this.prevButton.dataset.action = 'previous';
      this.nextButton = button('Next', () => this.forward());
      this.nextButton.dataset.action = 'next';
      this.label = document.createElement('span');
      this.label.className = 'page-number';
      el.replaceChildren(this.prevButton, this.label, this.nextButton);
    }

    async first() {
      await this.load([''], 0);
    }

    // at opens page number n at cursor (a link's); Previous from there
    // goes to the first page.
    async at(cursor, n) {
      await this.load(cursor ? ['', cursor] : [''], cursor ? Math.max(0, (Number(n) || 2) - 2) : 0);
    }

    async reload() {
      await this.load();
    }

    async forward() {
      if (!this.next) return;
      await this.load([...this.cursors, this.next]);
    }

    async back() {
      if (this.cursors.length < 2) return;
      const cursors = this.cursors.slice(0, -1);
      await this.load(cursors, cursors.length === 1 ? 0 : this.offset);
    }

    // load shows the page at the last of cursors; the pager takes cursors
    // (and offset) only once that page came, so a refused Next or Previous
    // leaves it on the page shown, counted as before. A page whose read a
    // later load overtook (a Next still out when the order is changed, an
    // item's members still out when another item is opened) is dropped:
    // the later one is what the user asked for last.
    async load(cursors = this.cursors, offset = this.offset) {
      const cursor = cursors[cursors.length - 1];
      const seq = ++this.seq;
      const page = await this.fetchPage(cursor);
      if (seq !== this.seq) return;
      this.cursors = cursors;
      this.offset = offset;
      this.next = page.nextCursor || '';
      await this.render(page.items);
      // data-off: the press that loaded this page leaves them so (busyWhile).
      this.prevButton.toggleAttribute('data-off', this.cursors.length < 2);
      this.nextButton.toggleAttribute('data-off', !this.next);
      this.prevButton.disabled = this.cursors.length < 2;
      this.nextButton.disabled = !this.next;
      const n = this.cursors.length + this.offset;
      const from = (n - 1) * pageSize + 1;
      // The last page knows the count: no list is counted before it (a
      // count would read the whole list on every page).
      const to = from + page.items.length - 1;
      this.label.textContent = 'page ' + n + (page.items.length ? ' · ' + from + '\u2013' + to + (this.next ? '' : ' of ' + to) : '');
      this.loaded = true;
      if (this.address) this.address(cursor, n);
    }
  }

  // firstOf reads the list at path, 100 a page, until decide answers for
  // an entry (undefined: read on), and answers that; fallback when the
  // list ends first. The callers' lists are ordered so that they stop
  // early (roleIn, inMyLibrary).
  async function firstOf(path, decide, fallback) {
    let cursor = '';
    for (;;) {
      const q = new URLSearchParams({ limit: '100' });
      if (cursor) q.set('cursor', cursor);
      const page = await api('GET', path + '?' + q.toString());
      for (const e of page.items) {
        const found = decide(e);
        if (found !== undefined) return found;
      }
      if (!page.nextCursor) return fallback;
      cursor = page.nextCursor;
    }
  }

  function query(params) {
    const q = new URLSearchParams({ limit: String(pageSize) });
    for (const [k, v] of Object.entries(params || {})) if (v) q.set(k, v);
    return '?' + q.toString();
  }

  // ---- My library ----

  // libraryRows are the rows of a library page, each item's name a link
  // to its page (which shows what the caller may do with it).
  function libraryRows(items) {
    return items.map((e) => {
      const tr = row(link(e.name, '#/item/' + enc(e.id)), word(e.visibility), when(e.lastModified));
      tr.dataset.id = e.id;
      if (e.id === state.moved) tr.className = 'moved';
      return tr;
    });
  }

  // The library's order and page are in the address (#/library?order=
  // oldest&cursor=...&page=2): a reload, or a link, shows the same page.
  // shownOrder is the order of the page shown (its cursors are that
  // order's).
  let shownOrder = 'newest';
  const myLibrary = new Pager('my-library',
    (cursor) => api('GET', '/v1/users/' + state.me.id + '/library' + query({ order: $('library-order').value, cursor })),
    (items) => fill('my-library', libraryRows(items), 'Nothing here yet: create an item below.'),
    { address: (cursor, n) => {
      shownOrder = $('library-order').value;
      if (!location.hash.startsWith('#/library')) return;
      const q = new URLSearchParams();
      if ($('library-order').value !== 'newest') q.set('order', $('library-order').value);
      if (cursor) q.set('cursor', cursor);
      if (cursor) q.set('page', String(n));
      replaceRoute('/library' + (q.toString() ? '?' + q.toString() : ''));
    } });

  // A refused change of order leaves the list as it is shown, and the
  // select saying so (Next then reads on in that order).
  $('library-order').addEventListener('change', act(async () => {
    try {
      await myLibrary.first();
    } catch (err) {
      $('library-order').value = shownOrder;
      throw err;
    }
  }));

  // showLibrary opens the library at the order and page the address names.
  async function showLibrary() {
    const order = state.params.get('order');
    $('library-order').value = order === 'oldest' ? 'oldest' : 'newest';
    await myLibrary.at(state.params.get('cursor') || '', state.params.get('page'));
  }

  form('create', async (v, f) => {
    const body = { name: v.name, visibility: v.visibility };
    if (v.description) body.description = v.description;
    if (v.link) body.link = v.link;
    const c = await api('POST', '/v1/content', body);
    f.reset();
    state.moved = c.id;
    await changed('Created ' + c.name + '.', () => myLibrary.first());
  });

  // ---- One item ----

  // item is the item shown; manages: whether the caller may change it
  // (its members list answers managers and admins, and is 403 to anyone
  // else, who sees the read view); mine: whether it is in the caller's
  // own library (a member in their own name, who may take it out).
  const item = { current: null, manages: false, mine: false };
  // lastManager says whether the caller is the item's last manager, as the
  // members list last said (its counts and the caller's own role).
  const lastManager = () => Boolean(item.counts && item.counts.yourRole === 'manager' && item.counts.managerCount === 1);

  // leaveOffered shows "take it out of my library" to a member of its own
  // who may leave, and to the last manager what to do instead.
  function leaveOffered() {
    $('leave-item').hidden = !item.mine || lastManager();
    $('last-manager').hidden = !(item.mine && lastManager());
  }

  const itemMembers = new Pager('item-members',
    async (cursor) => {
      const page = await api('GET', '/v1/content/' + enc(item.current.id) + '/members' + query({ cursor }));
      item.counts = page;
      $('item-members-caption').textContent = 'Who has it: ' + page.memberCount + (page.memberCount === 1 ? ' member, ' : ' members, ') +
        page.managerCount + (page.managerCount === 1 ? ' manager' : ' managers');
      leaveOffered();
      return page;
    },
    async (items) => {
      const rows = await Promise.all(items.map(async (m) => {
        const who = await nameOf(m.principalId);
        const isGroup = m.principalId.startsWith('g_');
        const self = m.principalId === state.me.id;
        const what = item.current.name;
        const tr = row(isGroup ? link(who, '#/groups/' + enc(who)) : who, isGroup ? 'group' : 'user', word(m.role),
          self && lastManager() ? 'the last manager'
          : self ? leaveItemButton('Leave', 'Leave ' + what)
            : removeButton('Remove', 'Take ' + what + ' away from ' + who + '? ' + (isGroup ? 'It leaves the group\'s library.' : 'It leaves their library.'),
              'Yes, remove ' + who, async () => {
                const already = await undone(() => api('DELETE', '/v1/content/' + enc(item.current.id) + '/members/' + enc(m.principalId)), 'not_found');
                await changed(who + ' no longer has ' + what + already + '.', () => itemMembers.reload());
              }, 'Remove ' + who));
        tr.dataset.member = who;
        return tr;
      }));
      fill('item-members', rows, 'Nobody.');
    });

  // managesItem shows the item's members to its managers and admins and
  // answers whether the caller is one.
  async function managesItem() {
    try {
      await itemMembers.first();
      return true;
    } catch (err) {
      if (err.status === 403) return false;
      throw err;
    }
  }

  // inMyLibrary answers whether item c is in the caller's own library,
  // read newest first, 100 a page, up to the first entry older than the
  // item: entries carry the item's lastModified, so the pages past it
  // cannot hold it.
  function inMyLibrary(c) {
    const since = Date.parse(c.lastModified);
    return firstOf('/v1/users/' + state.me.id + '/library', (e) => {
      if (e.id === c.id) return true;
      return Date.parse(e.lastModified) < since ? false : undefined;
    }, false);
  }

  // webLink is url as a link when it is an http or https URL, else as
  // plain text: nothing else a user typed becomes something to click.
  function webLink(url) {
    let parsed = null;
    try {
      parsed = new URL(url);
    } catch (err) {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) return document.createTextNode(url);
    const a = document.createElement('a');
    a.href = parsed.href;
    a.textContent = url;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    return a;
  }

  async function showItem(id) {
    $('item-manage').hidden = true;
    $('leave-item').hidden = true;
    $('last-manager').hidden = true;
    item.counts = null;
    item.mine = false;
    $('delete-item').hidden = true;
    $('item-back').hidden = !state.me;
    $('item-visitor').hidden = Boolean(state.me);
    $('item-visitor-login').href = loginHref();
    // Nothing of the item shown before stays while this one loads, nor
    // when it is refused.
    item.current = null;
    $('item-title').textContent = 'Item';
    $('item-view').hidden = true;
    const still = stillShown();
    let c;
    try {
      c = await api('GET', '/v1/content/' + enc(id));
    } catch (err) {
      if (!state.me && [401, 403, 404].includes(err.status)) {
        throw new ApiError(err.status, 'This item is not public, or there is no such item: log in to see the items shared with you.', [], err.code);
      }
      throw err;
    }
    if (!still()) return;
    $('item-view').hidden = false;
    item.current = c;
    $('item-title').textContent = c.name;
    $('item-visibility').textContent = word(c.visibility);
    $('item-description').textContent = c.description || '—';
    $('item-link').replaceChildren(c.link ? webLink(c.link) : '—');
    const creator = await nameOf(c.createdBy);
    if (!still()) return;
    $('item-creator').replaceChildren(creator === c.createdBy ? 'an account since deleted' : link(creator, '#/browse/user/' + enc(creator)));
    $('item-modified').textContent = when(c.lastModified);
    // A visitor manages nothing and has no library.
    const [manages, mine] = state.me ? await Promise.all([managesItem(), inMyLibrary(c)]) : [false, false];
    if (!still()) return;
    item.manages = manages;
    item.mine = mine;
    if (manages) {
      const f = $('edit');
      clearErrors(f);
      f.elements.name.value = c.name;
      f.elements.visibility.value = c.visibility;
      f.elements.description.value = c.description || '';
      f.elements.link.value = c.link || '';
      clearErrors($('share'));
      $('my-group-names').replaceChildren();
      item.groupsOffered = false;
      shareKind();
    }
    $('item-manage').hidden = !manages;
    $('delete-item').hidden = !manages;
    leaveOffered();
  }

  // leaveItem takes the item shown out of the caller's own library
  // (their own membership ends), once confirmed; the last manager is
  // told to delete it or hand it on instead.
  async function leaveItem() {
    const c = item.current;
    try {
      await api('DELETE', '/v1/content/' + enc(c.id) + '/members/' + enc(state.me.id));
    } catch (err) {
      if (err.code === 'last_manager') {
        throw new ApiError(err.status, 'You are the last manager of ' + c.name + ': delete it, or make someone else a manager first.', [], err.code);
      }
      if (err.status !== 404) throw err;
    }
    carry('Took ' + c.name + ' out of your library.');
    go('#/library');
  }

  const leaveQuestion = () => 'Take ' + item.current.name + ' out of your library? '
    + (item.current.visibility === 'private' ? 'You can no longer open it, unless it is shared with you again.'
      : 'It stays ' + word(item.current.visibility) + ': you can still find it in its other libraries.');

  const leaveItemButton = (text, label) => removeButton(text, leaveQuestion, 'Yes, take it out', leaveItem, label);
  $('leave-item').addEventListener('click', removal(leaveQuestion, 'Yes, take it out', leaveItem));

  $('delete-item').addEventListener('click', removal(() => 'Delete ' + item.current.name
    + ' for good? It leaves every library it is in, for everyone who has it.', 'Yes, delete it', async () => {
    const c = item.current;
    try {
      await api('DELETE', '/v1/content/' + enc(c.id));
    } catch (err) {
      // A repeat after a lost answer, or someone else deleted it first.
      if (err.status !== 404) throw err;
    }
    carry('Deleted ' + c.name + '.');
    go('#/library');
  }));

  form('edit', async (v) => {
    const c = item.current;
    const patch = {};
    for (const k of ['name', 'visibility', 'description', 'link']) {
      if ((v[k] || '') !== (c[k] || '')) patch[k] = v[k] || '';
    }
    if (Object.keys(patch).length === 0) {
      say('Nothing to change.');
      return;
    }
    const saved = await api('PATCH', '/v1/content/' + enc(c.id), patch);
    state.moved = saved.id;
    if (!item.mine) {
      // A manager through a group, or an admin: the item stays shown.
      carry('Saved ' + saved.name + '.');
      go('#/item/' + enc(saved.id));
      return;
    }
    carry('Saved ' + saved.name + ': it is now at the top of your library.');
    $('library-order').value = 'newest';
    go('#/library');
  });

  // offerGroups fills the list of the caller's groups offered as a group's
  // name is typed (sharing with a group, browsing a group's library): the
  // first 100 in the API's order (by group id), each by its name with its
  // display name. A failure leaves the list empty: the name can still be
  // typed.
  async function offerGroups() {
    const list = $('my-group-names');
    list.replaceChildren();
    try {
      const page = await api('GET', '/v1/users/' + state.me.id + '/groups' + query({ limit: 100 }));
      for (const m of page.items) {
        const o = document.createElement('option');
        o.value = m.group.name;
        if (m.group.displayName !== m.group.name) o.label = m.group.displayName;
        list.append(o);
      }
    } catch (err) {
      list.replaceChildren();
    }
  }
  // The list is offered only when sharing with a group, and read then,
  // once per item shown (not on every item page a manager opens).
  function shareKind() {
    const f = $('share');
    if (f.elements.kind.value !== 'group') {
      f.elements.principal.setAttribute('list', 'people-names');
      return;
    }
    f.elements.principal.setAttribute('list', 'my-group-names');
    if (!item.groupsOffered && state.me) {
      item.groupsOffered = true;
      offerGroups();
    }
  }
  $('share').elements.kind.addEventListener('change', shareKind);
  shareKind();

  // ---- People by the start of their username ----

  // offerPeople makes input offer the usernames that start with what is
  // typed in it (GET /v1/people?prefix=, logged in only,
  // docs/design/people-search.md): asked once typing pauses, from two
  // characters, in the list #people-names, each with its display name.
  // An answer overtaken by later typing is dropped; a refusal (the
  // address's limit) leaves the list as it was: the name can be typed.
  const people = { asked: '', seq: 0 };
  function offerPeople(input, offered) {
    let timer;
    input.addEventListener('input', () => {
      clearTimeout(timer);
      if (!offered()) return;
      timer = setTimeout(async () => {
        const prefix = input.value.trim();
        // 2-32 of a username's characters, as the api takes them (a
        // username has at most 32): anything else it refuses, each
        // refusal spent from the address's search limit.
        if (!state.me || !/^[A-Za-z0-9._-]{2,32}$/.test(prefix) || prefix === people.asked) return;
        people.asked = prefix;
        const seq = ++people.seq;
        try {
          const page = await api('GET', '/v1/people' + query({ prefix, limit: 10 }));
          if (seq !== people.seq) return;
          $('people-names').replaceChildren(...page.items.map((u) => {
            const o = document.createElement('option');
            o.value = u.username;
            if (u.displayName && u.displayName !== u.username) o.label = u.displayName;
            return o;
          }));
        } catch (err) {
          if (seq === people.seq) people.asked = '';
        }
      }, 300);
    });
  }
  offerPeople($('share').elements.principal, () => $('share').elements.kind.value === 'user');
  offerPeople($('view').elements.who, () => $('view').elements.kind.value === 'user');
  // The browse form offers people for a user and your groups for a group,
  // read when the kind is switched to group (not on every library shown).
  function browseKind(switched) {
    const f = $('view');
    const group = f.elements.kind.value === 'group';
    f.elements.who.setAttribute('list', group ? 'my-group-names' : 'people-names');
    if (group && switched === true && state.me) offerGroups();
  }
  $('view').elements.kind.addEventListener('change', () => browseKind(true));

  form('share', async (v, f) => {
    const p = await named(v.kind, v.principal, 'principal');
    const shown = v.kind === 'group' ? p.name : p.username;
    await api('PUT', '/v1/content/' + enc(item.current.id) + '/members/' + enc(p.id), { role: v.role });
    f.elements.principal.value = '';
    await changed('Shared ' + item.current.name + ' with ' + shown + ' as ' + v.role + '.', () => itemMembers.first());
  });

  // ---- Someone's library ----

  const browse = { path: '' };
  const otherLibrary = new Pager('other-library',
    (cursor) => api('GET', browse.path + query({ cursor })),
    (items) => fill('other-library', libraryRows(items), 'Nothing you may see.'));

  async function showBrowse(kind, who) {
    const f = $('view');
    clearErrors(f);
    $('browse-moderation').hidden = true;
    $('browse-visitor').hidden = Boolean(state.me);
    $('browse-visitor-login').href = loginHref();
    // The library shown before goes first: a refused name shows none.
    fill('other-library', []);
    $('other-library-caption').textContent = 'Items you may see';
    if (!who) return;
    f.elements.kind.value = kind === 'group' ? 'group' : 'user';
    f.elements.who.value = who;
    browseKind();
    const still = stillShown();
    let shown = '';
    try {
      if (kind === 'group') {
        const g = await groupNamed(who, 'who');
        if (!still()) return;
        browse.path = '/v1/groups/' + enc(g.id) + '/library';
        $('other-library-caption').textContent = 'The group ' + g.name + "'s library: the items you may see";
        shown = 'The library of the group ' + g.name + '.';
      } else {
        const u = await userNamed(who, 'who');
        if (!still()) return;
        browse.path = '/v1/users/' + enc(u.id) + '/library';
        $('other-library-caption').textContent = u.username + "'s library: the items you may see";
        shown = 'The library of ' + u.username + '.';
        // Admins go on from a user to their suspension and history.
        $('browse-moderation-link').href = '#/moderation/' + enc(u.username);
        $('browse-moderation-link').textContent = u.username + "'s suspension and moderation history";
        $('browse-moderation').hidden = !isAdmin();
      }
    } catch (err) {
      if (still()) showError(f, err);
      return;
    }
    await otherLibrary.first();
    if (still()) say(shown);
  }

  form('view', async (v) => {
    go('#/browse/' + (v.kind === 'group' ? 'group' : 'user') + '/' + enc(v.who));
  });

  // ---- Groups ----

  const capacity = (g) => g.memberCount + (g.maxMembers ? ' of ' + g.maxMembers : '') + ' member' + (g.memberCount === 1 && !g.maxMembers ? '' : 's');

  const myGroups = new Pager('my-groups',
    (cursor) => api('GET', '/v1/users/' + state.me.id + '/groups' + query({ cursor })),
    (items) => fill('my-groups', items.map((m) => {
      names.set(m.group.id, m.group.name);
      const label = m.group.displayName !== m.group.name ? m.group.displayName + ' (' + m.group.name + ')' : m.group.name;
      const tr = row(link(label, '#/groups/' + enc(m.group.name)), m.role, capacity(m.group));
      tr.dataset.group = m.group.name;
      return tr;
    }), 'You are in no group yet: create one below.'));

  form('create-group', async (v, f) => {
    const body = { name: v.name };
    if (v.displayName) body.displayName = v.displayName;
    if (v.maxMembers) body.maxMembers = Number(v.maxMembers);
    const g = await api('POST', '/v1/groups', body);
    f.reset();
    carry('Created the group ' + g.name + '; you manage it.');
    go('#/groups/' + enc(g.name));
  });

  // group is the group shown and the caller's role in it (roleIn): its
  // managers change roles, add and remove members; a member sees the
  // roles and may leave.
  const group = { current: null, role: '' };
  const groupMembers = new Pager('group-members',
    (cursor) => api('GET', '/v1/groups/' + enc(group.current.id) + '/members' + query({ cursor })),
    async (items) => {
      const manages = group.role === 'manager';
      const rows = await Promise.all(items.map(async (m) => {
        const who = await nameOf(m.principalId);
        const self = m.principalId === state.me.id;
        const g = group.current;
        if (!manages) {
          const tr = row(who, word(m.role), self ? leaveGroupButton(g) : '');
          tr.dataset.member = who;
          return tr;
        }
        const role = document.createElement('select');
        role.setAttribute('aria-label', 'Role of ' + who);
        for (const r of ['member', 'manager']) role.add(new Option(r, r, false, r === m.role));
        // A row drawn again (a reload of the list) while its promotion is
        // asked keeps showing it chosen, and Cancel puts this one back.
        if (grant.pending && grant.pending.group.id === g.id && grant.pending.userId === m.principalId && m.role === 'member') {
          role.value = 'manager';
          grant.pending.select = role;
        }
        role.addEventListener('change', act(async () => {
          // Making a manager asks the password first (askGrant); choosing
          // member again while it is asked takes the question back.
          if (role.value === 'manager') {
            askGrant({ select: role, who, userId: m.principalId, group: g });
            return;
          }
          if (grant.pending && grant.pending.select === role) {
            cancelGrant();
            return;
          }
          try {
            // The row's own group (g), not the one shown now: a row left
            // from the page before must never add its member elsewhere.
            await api('PUT', '/v1/groups/' + enc(g.id) + '/members/' + enc(m.principalId), { role: role.value });
          } catch (err) {
            // A refusal shows the roles as they are; a Log out, nothing.
            if (!(err instanceof Dropped)) await refreshGroup();
            throw err;
          }
          await changed(who + ' is now a ' + role.value + ' of ' + g.name + '.', refreshGroup);
        }));
        const tr = row(who, role, self
          ? leaveGroupButton(g)
          : removeButton('Remove', 'Remove ' + who + ' from ' + g.name + '? The items shared through the group leave their reach.',
            'Yes, remove ' + who, async () => {
              const already = await undone(() => api('DELETE', '/v1/groups/' + enc(g.id) + '/members/' + enc(m.principalId)), 'not_member');
              await changed(who + ' is no longer in ' + g.name + already + '.', refreshGroup);
            }, 'Remove ' + who));
        tr.dataset.member = who;
        return tr;
      }));
      fill('group-members', rows, 'No members you may see.');
    });

  // grant is the promotion the grant-manager form asks about (pending:
  // the row's select, who, the user's id and the row's own group), or
  // none. One form serves every row: choosing manager in another row asks
  // about that one instead, the first row's select put back to member.
  const grant = { pending: null };

  // askGrant opens the grant-manager form for a member chosen as manager:
  // nothing is sent until it is confirmed with the current password (and
  // a code where the account has a factor, read now if no page read them
  // yet; a failed read leaves the form as it is, the send reads them
  // again and a refusal names the field).
  function askGrant(p) {
    if (grant.pending && grant.pending.select !== p.select) grant.pending.select.value = 'member';
    grant.pending = p;
    const f = $('grant-manager');
    clearErrors(f);
    f.reset();
    $('grant-manager-question').textContent = 'Make ' + p.who + ' a manager of ' + p.group.name
      + '? A manager can add and remove members and close the group.';
    $('grant-manager-yes').textContent = 'Yes, make ' + p.who + ' a manager';
    f.hidden = false;
    f.elements.currentPassword.focus();
    knownFactors().catch(() => {});
  }

  // hideGrant closes the grant-manager form and forgets what it asked and
  // what was typed in it.
  function hideGrant() {
    grant.pending = null;
    const f = $('grant-manager');
    f.hidden = true;
    f.reset();
    clearErrors(f);
    $('grant-manager-question').textContent = '';
  }

  // cancelGrant takes the question back: the row's select shows member
  // again, and the line says nothing changed.
  function cancelGrant() {
    const p = grant.pending;
    if (!p) return;
    hideGrant();
    p.select.value = 'member';
    if (p.select.isConnected) p.select.focus();
    say('Nothing changed: ' + p.who + ' stays a member of ' + p.group.name + '.');
  }

  $('grant-manager-cancel').addEventListener('click', cancelGrant);

  form('grant-manager', async (v, f) => {
    const p = grant.pending;
    if (!p) return;
    if (!v.currentPassword) throw fieldError('currentPassword', 'Give your current password to make ' + p.who + ' a manager.');
    try {
      // The row's own group (p.group), not the one shown now.
      await api('PUT', '/v1/groups/' + enc(p.group.id) + '/members/' + enc(p.userId),
        await withCode({ role: 'manager', currentPassword: v.currentPassword }, v));
    } catch (err) {
      // A refused password or code (or a limit) is fixed in the form,
      // still open; any other refusal closes it and shows the roles as
      // they are; a Log out, nothing.
      const fixable = err.status === 429 || (err.fields || []).some((e) => ['currentPassword', 'code', 'recoveryCode', 'passkey'].includes(e.field))
        || ['invalid_credentials', 'invalid_code', 'invalid_passkey'].includes(err.code);
      if (!fixable && !(err instanceof Dropped) && grant.pending === p) {
        hideGrant();
        await refreshGroup().catch(() => {});
      }
      throw err;
    }
    if (grant.pending === p) hideGrant();
    else f.elements.currentPassword.value = '';
    await changed(p.who + ' is now a manager of ' + p.group.name + '.', refreshGroup);
    // The form went with its question: the keyboard goes on from the
    // member's row, drawn again with the new role.
    const tr = [...$('group-members').tBodies[0].rows].find((r) => r.dataset.member === p.who);
    const select = tr && tr.querySelector('select');
    if (select) select.focus();
  });

  function leaveGroupButton(g) {
    return removeButton('Leave', 'Leave ' + g.name + '? The items shared through it leave your reach, and only a manager can add you again.',
      'Yes, leave it', async () => {
        await api('DELETE', '/v1/groups/' + enc(g.id) + '/members/' + enc(state.me.id));
        carry('You left ' + g.name + '.');
        go('#/groups');
      }, 'Leave ' + g.name);
  }

  // refreshGroup shows the group again after a change, the caller's own
  // role too (a manager may have made themself a member, who may no
  // longer add members or close the group).
  async function refreshGroup() {
    group.current = await api('GET', '/v1/groups/' + enc(group.current.id));
    group.role = await roleIn(group.current.id);
    $('group-capacity').textContent = capacity(group.current);
    $('add-member').hidden = group.role !== 'manager';
    // A manager no more (made a member) asks nobody's promotion.
    if (group.role !== 'manager') hideGrant();
    showClosing();
    await groupMembers.reload();
  }

  // showClosing shows Close group to the group's managers and admins
  // (others see no button), and asks a manager for the current password:
  // an admin closes by role.
  function showClosing() {
    $('close-group-area').hidden = !(isAdmin() || group.role === 'manager');
    // An admin who manages the group is asked too: a session without a
    // second factor, where one is required, has no admin power, and she
    // closes as its manager.
    $('close-group-proof').hidden = isAdmin() && group.role !== 'manager';
  }

  // roleIn answers the caller's role in the group (or '' when not a
  // member), from the caller's own list of groups: it is ordered by group
  // id, so the pages past the id are not read (docs/decisions/0046-the-console-shows-close-group-only-to.md).
  function roleIn(groupId) {
    return firstOf('/v1/users/' + state.me.id + '/groups', (m) => {
      if (m.group.id === groupId) return m.role;
      return m.group.id > groupId ? '' : undefined;
    }, '');
  }

  async function showGroup(name) {
    $('close-group-area').hidden = true;
    $('close-group-confirm').hidden = true;
    hideGrant();
    $('add-member').elements.currentPassword.value = '';
    $('add-member').elements.code.value = '';
    showAddProof();
    // The group shown before leaves with its members' rows: none stays
    // under this group's name while (or if not) its own are read.
    $('group-members').tBodies[0].replaceChildren();
    const still = stillShown();
    const g = await groupNamed(name, 'name');
    if (!still()) return;
    group.current = g;
    $('group-title').textContent = g.displayName !== g.name ? g.displayName + ' (' + g.name + ')' : g.name;
    $('group-capacity').textContent = capacity(g);
    clearErrors($('add-member'));
    const role = await roleIn(g.id);
    if (!still()) return;
    group.role = role;
    $('add-member').hidden = group.role !== 'manager';
    await groupMembers.first();
    if (!still()) return;
    $('close-group-name').textContent = g.name;
    showClosing();
  }

  // The question opens on Cancel, as the confirm dialog does: an Enter
  // held on Close group (a key's repeat) must not close the group.
  // A manager's proof: the code field shows where the account has a
  // factor, read now if no page read them yet (a failed read leaves the
  // form as it is: the closing reads them again, and a refusal names the
  // field).
  $('close-group').addEventListener('click', () => {
    $('close-group-confirm').hidden = false;
    $('close-group-cancel').focus();
    if (!$('close-group-proof').hidden) knownFactors().catch(() => {});
  });
  $('close-group-cancel').addEventListener('click', () => {
    $('close-group-confirm').hidden = true;
    say(group.current.name + ' stays open.');
  });

  form('close-group-confirm', async (v, f) => {
    const g = group.current;
    let job = null;
    if (!isAdmin() && !v.currentPassword) throw fieldError('currentPassword', 'Give your current password to close the group.');
    try {
      job = isAdmin() && !v.currentPassword ? await api('DELETE', '/v1/groups/' + enc(g.id))
        : await api('POST', '/v1/groups/' + enc(g.id) + '/closing', await withCode({ currentPassword: v.currentPassword }, v));
      f.elements.currentPassword.value = '';
    } catch (err) {
      // A repeat by whoever closed it, or by an admin, answers its job
      // again; to another manager a closed or closing group is 404
      // (another manager or an admin closed it).
      if (err.status !== 404) throw err;
    }
    names.delete(g.id);
    if (!job) {
      carry('The group ' + g.name + ' is already closed.');
      go('#/groups');
      return;
    }
    // The group is gone for everyone already; the job ends the shares
    // and memberships, then frees the name.
    carry('Closing the group ' + g.name + '...');
    go('#/groups');
    followJob(job, {
      busy: (j) => 'Closing the group ' + g.name + ': it is gone for everyone already; ending its shares and memberships' + jobProgress(j) + '. Its name is free once this is done.',
      done: () => 'Closed the group ' + g.name + ': its memberships and shares have ended, and its name is free.',
    });
  });

  // showAddProof shows the add-member form's proof (the current password,
  // and a code where the account has a factor) while its role is manager:
  // adding a manager asks it, adding a member does not.
  function showAddProof() {
    const manager = $('add-member').elements.role.value === 'manager';
    $('add-member-proof').hidden = !manager;
    return manager;
  }
  $('add-member').elements.role.addEventListener('change', () => {
    if (showAddProof()) knownFactors().catch(() => {});
  });

  form('add-member', async (v, f) => {
    const g = group.current;
    const manager = v.role === 'manager';
    if (manager && !v.currentPassword) throw fieldError('currentPassword', 'Give your current password to add a manager.');
    const u = await userNamed(v.username, 'username');
    const body = manager ? await withCode({ role: 'manager', currentPassword: v.currentPassword }, v) : { role: 'member' };
    await api('PUT', '/v1/groups/' + enc(g.id) + '/members/' + enc(u.id), body);
    // The password is not kept once it did its work (nor the code, used once).
    f.elements.currentPassword.value = '';
    f.elements.code.value = '';
    f.elements.username.value = '';
    await changed('Added ' + u.username + ' to ' + g.name + ' as ' + v.role + '.', refreshGroup);
  });

  // ---- Moderation (admins) ----

  const suspended = new Pager('suspended',
    (cursor) => api('GET', '/v1/suspensions' + query({ cursor })),
    async (items) => {
      const rows = await Promise.all(items.map(async (s) => {
        // A suspension shows the username it took effect with; a rename
        // since changes it nowhere, and the old name may be someone
        // else's now: the links and buttons go by the name the account
        // has now (one read per user a page shows, once per page load).
        const now = await nameOf(s.userId);
        const shown = now === s.username ? now : s.username + ' (now ' + now + ')';
        const actions = document.createElement('span');
        actions.append(
          removeButton('Unsuspend', unsuspendQuestion(now), 'Yes, unsuspend', () => unsuspend(s.userId, now), 'Unsuspend ' + now),
          ' ', link('Library', '#/browse/user/' + enc(now)));
        // The name goes on to the user: their suspension, history and audit.
        const tr = row(link(shown, '#/moderation/' + enc(now)), s.reason, await nameOf(s.suspendedBy), when(s.suspendedAt),
          s.until ? when(s.until) : 'until lifted', actions);
        tr.dataset.user = now;
        return tr;
      }));
      fill('suspended', rows, 'Nobody is suspended.');
    });

  const unsuspendQuestion = (username) => 'Lift the suspension of ' + username + '? They can log in again at once.';

  // unsuspend lifts a suspension and shows the lists it changes again.
  async function unsuspend(userId, username) {
    const already = await undone(() => api('DELETE', '/v1/users/' + enc(userId) + '/suspension'), 'not_suspended');
    moderated();
    await changed(username + ' is no longer suspended' + already + '.', async () => {
      await suspended.reload();
      if (modHistory.user && modHistory.user.id === userId) await showModUser(userId);
    });
  }

  // moderated tells the page's other parts (the user search) that a
  // user's status changed, so that none of them shows the old one.
  function moderated() {
    window.dispatchEvent(new CustomEvent('shelf:moderated'));
  }

  // A suspension lasts until lifted, a preset number of days, or until a
  // time in the moderator's own zone (named beside the field).
  $('suspend-zone').textContent = 'your time (' + Intl.DateTimeFormat().resolvedOptions().timeZone + ')';
  form('suspend', async (v, f) => {
    if (v.for && v.until) throw fieldError('until', 'Choose a length or a time, not both.');
    const u = await userNamed(v.username, 'username');
    const body = { reason: v.reason };
    if (v.for) body.until = new Date(Date.now() + Number(v.for) * 86400000).toISOString();
    if (v.until) {
      const until = new Date(v.until);
      if (Number.isNaN(until.getTime())) throw fieldError('until', 'Give a date and time.');
      body.until = until.toISOString();
    }
    await api('POST', '/v1/users/' + enc(u.id) + '/suspension', body);
    f.reset();
    moderated();
    await changed('Suspended ' + u.username + (body.until ? ' until ' + when(body.until) : '') + '.', async () => {
      await suspended.first();
      if (modHistory.user && modHistory.user.id === u.id) await showModUser(u.id);
    });
  });

  const modHistory = { user: null };
  modHistory.pager = new Pager('history',
    (cursor) => api('GET', '/v1/users/' + enc(modHistory.user.id) + '/moderation-history' + query({ cursor })),
    async (items) => {
      const rows = await Promise.all(items.map(async (e) => row(word(e.kind), when(e.at),
        e.actor ? await nameOf(e.actor) : 'nobody (it ended)', e.reason, when(e.suspendedAt), e.until ? when(e.until) : 'until lifted')));
      fill('history', rows, 'Nothing was ever done to this account.');
    });
  modHistory.first = () => modHistory.pager.first();

  // The audit of admin actions on the same account
  // (docs/design/account-audit.md): who did
  // what, when, from where.
  const auditLog = new Pager('audit',
    (cursor) => api('GET', '/v1/users/' + enc(modHistory.user.id) + '/audit' + query({ cursor })),
    async (items) => {
      const rows = await Promise.all(items.map(async (e) => {
        const c = await auditCells(e);
        return row(c.what, c.when, c.by, c.from, c.change);
      }));
      fill('audit', rows, 'No admin ever acted on this account.');
    });

  // auditCells are an audit entry's cells, in words.
  async function auditCells(e) {
    return {
      what: word(e.action), when: when(e.at), by: e.actor ? await nameOf(e.actor) : 'the command line',
      from: e.via === 'cli' ? 'a server' : [e.clientIp, e.userAgent].filter(Boolean).join(', ') || 'unknown',
      change: e.old !== undefined || e.new !== undefined ? (e.old || '') + ' \u2192 ' + (e.new || '') : (e.reason || ''),
    };
  }

  // ---- The audit of every account ----
  // Its filters are in the address (#/audit?by=<username>&action=...),
  // so a filtered view can be shared and reloaded.
  const allAudit = { actor: '', action: '' };
  allAudit.pager = new Pager('all-audit',
    (cursor) => api('GET', '/v1/audit' + query({ cursor, actor: allAudit.actor, action: allAudit.action })),
    async (items) => {
      const rows = await Promise.all(items.map(async (e) => {
        const c = await auditCells(e);
        const account = await nameOf(e.userId);
        return row(c.when, account === e.userId ? account : link(account, '#/moderation/' + enc(account)), c.what, c.by, c.from, c.change);
      }));
      // A page reads a month of days at most: an empty one with a next
      // page means nothing in those days, not nothing at all.
      fill('all-audit', rows, allAudit.pager.next ? 'Nothing in these days: Next looks further back.' : 'No entry matches.');
    });

  async function showAudit() {
    const f = $('audit-filter');
    clearErrors(f);
    const by = state.params.get('by') || '';
    const action = state.params.get('action') || '';
    f.elements.by.value = by;
    f.elements.action.value = action;
    allAudit.actor = '';
    allAudit.action = action;
    fill('all-audit', [], 'Loading…');
    const still = stillShown();
    let actor = '';
    try {
      if (by) actor = (await userNamed(by, 'by')).id;
    } catch (err) {
      if (still()) showError(f, err);
      return;
    }
    if (!still()) return;
    allAudit.actor = actor;
    $('all-audit-caption').textContent = (action ? word(action) : 'Every admin action') + (by ? ' by ' + by : '') + ', newest first';
    await allAudit.pager.first();
  }

  form('audit-filter', async (v) => {
    const q = new URLSearchParams();
    if (v.by) q.set('by', v.by);
    if (v.action) q.set('action', v.action);
    go('#/audit' + (q.toString() ? '?' + q.toString() : ''));
  });

  // showModUser shows the user of the moderation page (by id, read
  // afresh): suspended or not (and why, by whom, until when), a link to
  // their library, their history and the audit of admin actions on them.
  async function showModUser(userId) {
    const still = stillShown();
    const u = await api('GET', '/v1/users/' + enc(userId));
    if (!still()) return;
    modHistory.user = u;
    names.set(u.id, u.username);
    $('mod-user-title').textContent = u.username + (u.displayName !== u.username ? ' (' + u.displayName + ')' : '');
    let status = u.username + ' is not suspended.';
    let suspendedNow = false;
    if (u.status === 'suspended') {
      try {
        const s = await api('GET', '/v1/users/' + enc(u.id) + '/suspension');
        // The name it took effect with, if the user was renamed since.
        status = 'Suspended' + (s.username !== u.username ? ' as ' + s.username : '') + ' since ' + when(s.suspendedAt) + ' by ' + await nameOf(s.suspendedBy) + ' (' + s.reason + '), '
          + (s.until ? 'until ' + when(s.until) : 'until lifted') + '.';
        suspendedNow = true;
      } catch (err) {
        // Lifted between the two reads (by another admin, or its end).
        if (err.status !== 404) throw err;
      }
    }
    $('mod-user-status').textContent = status;
    // Another's factors are read only when asked for: each list is an
    // entry in their audit (factors_listed), not a page view's.
    $('mod-user-factors').textContent = '';
    $('mod-factors').hidden = true;
    $('mod-show-factors').hidden = false;
    $('mod-unsuspend').hidden = !suspendedNow;
    $('mod-user-library').href = '#/browse/user/' + enc(u.username);
    $('mod-user-library').textContent = u.username + "'s library";
    $('mod-user').hidden = false;
    $('history-caption').textContent = 'History of ' + u.username + ', newest first';
    $('audit-caption').textContent = 'Admin actions on ' + u.username + ', newest first';
    await Promise.all([modHistory.first(), auditLog.first()]);
  }

  // showModFactors says whether the user has a second factor (never its
  // secret) and offers to remove each, audited: the way back in for a
  // user who lost both the phone and the recovery codes. Another admin's
  // factors are not an admin's to remove (the API says so).
  async function showModFactors(u) {
    const list = $('mod-factors');
    let f;
    try {
      f = await api('GET', '/v1/users/' + enc(u.id) + '/factors');
    } catch (err) {
      if (err.code !== 'factors_off') throw err;
      $('mod-user-factors').textContent = 'Second factors are off on this server.';
      list.hidden = true;
      return;
    }
    $('mod-user-factors').textContent = f.items.length
      ? u.username + ' logs in with a second factor (' + f.recoveryCodesLeft + ' recovery codes left):'
      : u.username + ' has no second factor.';
    list.replaceChildren(...f.items.map((x) => {
      const li = document.createElement('li');
      li.append(x.name + (x.kind === 'passkey' ? ' (passkey)' : ' (authenticator app)') + ', added ' + when(x.createdAt) + (x.lastUsedAt ? ', used ' + ago(x.lastUsedAt) : '') + ' ',
        removeButton('Remove', 'Remove ' + u.username + "'s " + x.name + '? Only when you are sure it is ' + u.username
          + ' who lost it: logging in then takes the password alone. This is recorded in the audit.', 'Yes, remove it', async () => {
          await api('POST', '/v1/users/' + enc(u.id) + '/factors/' + enc(x.id) + '/removal', {});
          await changed(u.username + "'s " + x.name + ' is removed, and the audit says so.', () => Promise.all([showModFactors(u), auditLog.first()]));
        }, 'Remove ' + u.username + "'s " + x.name));
      return li;
    }));
    list.hidden = f.items.length === 0;
  }

  $('mod-show-factors').addEventListener('click', act(async () => {
    const u = modHistory.user;
    const still = stillShown();
    await showModFactors(u);
    if (!still() || modHistory.user !== u) return;
    $('mod-show-factors').hidden = true;
    await auditLog.first();
  }));

  $('mod-unsuspend').addEventListener('click', removal(() => unsuspendQuestion(modHistory.user.username), 'Yes, unsuspend',
    () => unsuspend(modHistory.user.id, modHistory.user.username)));

  async function showModeration(username) {
    const still = stillShown();
    // Looking up a user keeps the suspended list on the page it was.
    if (suspended.loaded) await suspended.reload();
    else await suspended.first();
    if (!still()) return;
    const f = $('history-of');
    clearErrors(f);
    f.elements.username.value = username || '';
    modHistory.user = null;
    $('mod-user').hidden = true;
    for (const t of ['history', 'audit']) {
      $(t).hidden = !username;
      document.querySelector('[data-pager="' + t + '"]').hidden = !username;
    }
    if (!username) return;
    let u;
    try {
      u = await userNamed(username, 'username');
    } catch (err) {
      if (!still()) return;
      $('history').hidden = true;
      $('audit').hidden = true;
      showError(f, err);
      return;
    }
    if (!still()) return;
    await showModUser(u.id);
  }

  form('history-of', async (v) => {
    go('#/moderation/' + enc(v.username));
  });

  // ---- My account ----

  // device names a session's browser and system as people say them
  // ("Safari on iOS", "Firefox on Linux") from its User-Agent; a program
  // (curl, an SDK) by its own name. A rough reading, enough to tell one's
  // devices apart: the string itself stays in the cell's title.
  function device(ua) {
    if (!ua) return 'unknown';
    const browser = /Edg\//.test(ua) ? 'Edge' : /OPR\//.test(ua) ? 'Opera' : /Firefox\/|FxiOS\//.test(ua) ? 'Firefox'
      : /Chrome\/|CriOS\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) && /Version\//.test(ua) ? 'Safari' : '';
    const system = /iPhone|iPod/.test(ua) ? 'iOS' : /iPad/.test(ua) ? 'iPadOS' : /Android/.test(ua) ? 'Android'
      : /Windows/.test(ua) ? 'Windows' : /CrOS/.test(ua) ? 'ChromeOS' : /Mac OS X|Macintosh/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : '';
    if (browser) return browser + (system ? ' on ' + system : '');
    return ua.split(/[\s(/]/)[0] || ua;
  }

  // ago is how long before now ts was, in words; past a day, the date.
  function ago(ts) {
    if (!ts) return '—';
    const s = (Date.now() - Date.parse(ts)) / 1000;
    if (s < 60) return 'just now';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ago';
    return when(ts);
  }

  // The session of this tab comes first on its page.
  const sessions = new Pager('sessions',
    (cursor) => api('GET', '/v1/users/' + state.me.id + '/sessions' + query({ cursor })),
    (items) => fill('sessions', [...items].sort((a, b) => Number(Boolean(b.current)) - Number(Boolean(a.current))).map((s) => {
      const browser = document.createElement('span');
      browser.textContent = device(s.userAgent);
      if (s.userAgent) browser.title = s.userAgent;
      const tr = row(when(s.createdAt), 'active ' + ago(s.lastSeenAt || s.createdAt), browser, s.clientIp || 'unknown', madeWith(s.madeWith),
        s.current ? 'this session' : removeButton('Sign out', 'Sign out the session logged in ' + when(s.createdAt)
          + (s.userAgent ? ' (' + device(s.userAgent) + ')' : '') + '? Whoever uses it must log in again.', 'Yes, sign it out', async () => {
          const already = await undone(() => api('DELETE', '/v1/users/' + state.me.id + '/sessions/' + enc(s.id)), 'not_found');
          await changed('That session is signed out' + already + '.', () => sessions.reload());
        }, 'Sign out the session of ' + when(s.createdAt)));
      tr.dataset.session = s.id;
      if (s.current) tr.className = 'current';
      return tr;
    }), 'No sessions.'));

  // madeWith says what a session's login proved: "password and
  // authenticator app" (nothing for a session from before it was kept).
  const proofWords = { password: 'password', reset: 'password reset', totp: 'authenticator app', recovery_code: 'recovery code' };
  const madeWith = (m) => (m || []).map((p) => proofWords[p] || word(p)).join(' and ');

  // showEmailStatus says whether the account's email is verified and
  // which new address waits for its link, and offers to mail the link
  // again while one waits.
  function showEmailStatus() {
    const verified = state.me.emailVerified === true;
    const pending = state.me.pendingEmail;
    const status = $('email-status');
    status.textContent = (verified
      ? state.me.email + ' is verified.'
      : state.me.email + ' is not verified yet: open the link in the mail we sent to it.')
      + (pending ? ' You asked to change it to ' + pending + ': open the link we mailed there.' : '');
    status.className = verified && !pending ? 'verified' : 'unverified';
    $('resend-verification').hidden = verified && !pending;
    $('cancel-email-change').hidden = !pending;
  }

  // Cancel the change: the account's own address sent again, with the
  // current password (and second proof) typed in the profile form, as any
  // change of the email takes.
  $('cancel-email-change').addEventListener('click', async () => {
    const f = $('profile');
    if (f.getAttribute('aria-busy') === 'true') return;
    clearErrors(f);
    const v = { currentPassword: f.elements.currentPassword.value, code: f.elements.code ? f.elements.code.value : '' };
    try {
      await busyWhile(f, async () => {
        if (!v.currentPassword) throw fieldError('currentPassword', 'Give your current password to cancel the change of your email.');
        const pending = state.me.pendingEmail;
        state.me = await api('PATCH', '/v1/users/' + state.me.id, await withCode({ email: state.me.email, currentPassword: v.currentPassword }, v));
        f.elements.currentPassword.value = '';
        if (f.elements.code) f.elements.code.value = '';
        showEmailStatus();
        say('Cancelled the change to ' + pending + ': your account keeps ' + state.me.email + ', and that link no longer works.');
      });
    } catch (err) {
      showError(f, err);
    }
  });

  // The link goes to the address waiting for one: the new address asked
  // for, or the account's own while it is not verified. The second factor
  // section offers it too (a factor takes a verified address).
  const resendVerification = act(async () => {
    const to = state.me.pendingEmail || state.me.email;
    await api('POST', '/v1/email-verifications', { email: to });
    say('A new verification mail is on its way to ' + to + ' (a few an hour at most).');
  });
  $('resend-verification').addEventListener('click', resendVerification);
  $('factors-verify').addEventListener('click', resendVerification);

  // accountSections are the account page's parts, each shown (and
  // refreshed) by its function, in order, with their forms in the page.
  const accountSections = [
    {
      // The account as it is now (its email may have been verified in
      // another tab since this one read it).
      id: 'me', show: async () => {
        state.me = await api('GET', '/v1/me');
        names.set(state.me.id, state.me.username);
        showWho();
      },
    },
    {
      id: 'profile', show: () => {
        const f = $('profile');
        clearErrors(f);
        f.elements.username.value = state.me.username;
        f.elements.displayName.value = state.me.displayName;
        f.elements.email.value = state.me.email || '';
        f.elements.currentPassword.value = '';
      },
    },
    { id: 'account-email', show: () => showEmailStatus() },
    { id: 'password', show: () => { $('password').reset(); clearErrors($('password')); } },
    { id: 'account-factors', show: () => showFactors({ fresh: true }) },
    { id: 'account-sessions', show: () => sessions.first() },
    {
      id: 'delete-account', show: () => {
        $('delete-account').reset();
        clearErrors($('delete-account'));
        return showDeletionGroups();
      },
    },
  ];

  async function showAccount() {
    for (const s of accountSections) await s.show();
  }

  form('profile', async (v, f) => {
    const patch = {};
    for (const k of ['username', 'displayName', 'email']) {
      if (v[k] !== (state.me[k] || '')) patch[k] = v[k];
    }
    if (Object.keys(patch).length === 0) {
      say('Nothing to change.');
      return;
    }
    // A new username or email takes the current password (a stolen
    // session alone must not take the account).
    if (patch.username !== undefined || patch.email !== undefined) {
      if (!v.currentPassword) throw fieldError('currentPassword', 'Give your current password to change your username or email.');
      patch.currentPassword = v.currentPassword;
      await withCode(patch, v);
    }
    const before = state.me.username;
    state.me = await api('PATCH', '/v1/users/' + state.me.id, patch);
    f.elements.currentPassword.value = '';
    f.elements.email.value = state.me.email || '';
    names.set(state.me.id, state.me.username);
    showWho();
    showEmailStatus();
    // A new email is only asked for; the server mails it a link after
    // answering, and the account's address a notice.
    const emailAsked = Boolean(state.me.pendingEmail && patch.email !== undefined);
    // A rename is told to the account's address; the name it left, or
    // an earlier one still held, stays the account's a while (the answer
    // says which, and until when).
    const held = state.me.heldUsername
      ? ' Nobody else may take ' + state.me.heldUsername + ' before ' + when(state.me.heldUsernameUntil) + ', should you change back.' : '';
    const renamed = before.toLowerCase() !== state.me.username.toLowerCase() ? ' Your email address was told.' + held : '';
    await changed(!emailAsked ? 'Saved your profile.' + renamed
      : 'Saved your profile.' + renamed + ' A confirmation mail is on its way to ' + state.me.pendingEmail + ': your account keeps '
        + state.me.email + ' until you open its link. Your other sessions are signed out.', async () => {
      // Asking for a new email ended the other sessions: the list says so.
      if (emailAsked) await sessions.first();
    });
  });

  form('password', async (v, f) => {
    await api('PUT', '/v1/users/' + state.me.id + '/password', await withCode({ currentPassword: v.currentPassword, newPassword: v.newPassword }, v));
    f.reset();
    await changed('Password changed: your other sessions are signed out, and your email address was told (with a link to reset the password, should someone else have changed it).',
      () => sessions.first());
  });

  $('sign-out-others').addEventListener('click', removal('Sign out every other session of yours? Each must log in again.', 'Yes, sign them out', async () => {
    await api('DELETE', '/v1/users/' + state.me.id + '/sessions?keep=current');
    await changed('Signed out everywhere else.', () => sessions.first());
  }));

  // ---- Second factors ----

  // withCode adds the owner's second proof to body: the code a form's
  // `code` field holds (an authenticator's digits as code, anything else
  // as a recovery code), or, left empty on an account with a passkey, the
  // passkey's answer to a proof's challenge (the browser asks for it).
  // An account without a factor sends none.
  // The factors are read first where no page read them yet in this
  // session (a group's closing, asked before My account was opened): a
  // passkey was otherwise never asked for, and the closing refused for a
  // code the account does not have, again and again.
  async function withCode(body, v) {
    const c = (v.code || '').trim();
    if (c) body[/^[0-9 ]{6,8}$/.test(c) ? 'code' : 'recoveryCode'] = c.replaceAll(' ', '');
    else if ((await knownFactors()).some((f) => f.kind === 'passkey')) {
      const ch = await api('POST', '/v1/users/' + state.me.id + '/passkey-challenges');
      say('Your browser asks for your passkey…');
      body.passkey = { challenge: ch.challenge, credential: await passkeyGet(ch.options) };
    }
    return body;
  }

  // appCode is an authenticator's code as typed, without the spaces apps
  // show it with ("123 456"): the api compares the digits exactly, and
  // takes a code with a space for a wrong one (counted against the
  // account). Anything else is answered as typed.
  function appCode(typed) {
    const c = (typed || '').trim();
    return /^[0-9 ]{6,8}$/.test(c) ? c.replaceAll(' ', '') : c;
  }

  // knownFactors answers the account's second factors as last read
  // (state.factors), reading them when no page has yet in this session,
  // and shows the proof forms' code fields and passkey hints to match
  // (factorFields). Second factors off: none.
  async function knownFactors() {
    if (state.factors) return state.factors;
    let items = [];
    try {
      items = (await api('GET', '/v1/users/' + state.me.id + '/factors')).items;
    } catch (err) {
      if (err.code !== 'factors_off') throw err;
    }
    state.factors = items;
    factorFields(items);
    return items;
  }

  // factorFields shows the code field of each form that asks the owner's
  // proof where the account has a second factor, and the passkey hint
  // where it has a passkey.
  function factorFields(items) {
    const any = items.length > 0;
    const passkeys = items.some((f) => f.kind === 'passkey');
    document.querySelectorAll('.factor-code').forEach((l) => { l.hidden = !any; });
    document.querySelectorAll('.passkey-hint').forEach((l) => { l.hidden = !passkeys; });
  }

  // ---- Passkeys (WebAuthn) ----
  // The server's options are JSON with binary fields in base64url; the
  // browser's own parsers and toJSON() are used where it has them.
  const b64u = {
    dec: (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (ch) => ch.charCodeAt(0)).buffer,
    enc: (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
  };
  const passkeysHere = () => typeof PublicKeyCredential !== 'undefined' && !!navigator.credentials;
  function credentialJSON(c) {
    if (typeof c.toJSON === 'function') return c.toJSON();
    const r = c.response;
    const response = { clientDataJSON: b64u.enc(r.clientDataJSON) };
    if (r.attestationObject) Object.assign(response, { attestationObject: b64u.enc(r.attestationObject), transports: r.getTransports ? r.getTransports() : [] });
    else Object.assign(response, { authenticatorData: b64u.enc(r.authenticatorData), signature: b64u.enc(r.signature), userHandle: r.userHandle ? b64u.enc(r.userHandle) : undefined });
    return { id: c.id, rawId: b64u.enc(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment || undefined,
      clientExtensionResults: c.getClientExtensionResults(), response };
  }
  // passkeyCall runs one browser ceremony, saying what a refusal means.
  async function passkeyCall(what, run) {
    if (!passkeysHere()) throw new ApiError(0, 'This browser has no passkeys (or this page is not on https or localhost); use a code instead.');
    try {
      return credentialJSON(await run());
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError(0, what + ' did not finish (' + (err.name || 'an error') + ': cancelled, timed out, or no passkey for this site); try again, or use a code.');
    }
  }
  function passkeyCreate(options) {
    const pk = options.publicKey;
    return passkeyCall('Creating the passkey', () => navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON
      ? PublicKeyCredential.parseCreationOptionsFromJSON(pk)
      : { ...pk, challenge: b64u.dec(pk.challenge), user: { ...pk.user, id: b64u.dec(pk.user.id) },
        excludeCredentials: (pk.excludeCredentials || []).map((d) => ({ ...d, id: b64u.dec(d.id) })) } }));
  }
  function passkeyGet(options) {
    const pk = options.publicKey;
    return passkeyCall('Signing in with the passkey', () => navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON
      ? PublicKeyCredential.parseRequestOptionsFromJSON(pk)
      : { ...pk, challenge: b64u.dec(pk.challenge), allowCredentials: (pk.allowCredentials || []).map((d) => ({ ...d, id: b64u.dec(d.id) })) } }));
  }

  // showFactors lists the account's second factors (authenticator apps
  // and passkeys), shows the code fields of the forms that ask one where
  // it has any (and the passkey hints where it has a passkey), and
  // (fresh: the page was opened) closes what an earlier visit left open.
  async function showFactors({ fresh } = {}) {
    if (fresh) {
      for (const id of ['factor-setup', 'recovery-shown', 'factor-remove']) $(id).hidden = true;
      for (const id of ['factor-add', 'passkey-add', 'factor-confirm', 'factor-remove', 'recovery-new']) {
        $(id).reset();
        clearErrors($(id));
      }
    }
    let list;
    try {
      list = await api('GET', '/v1/users/' + state.me.id + '/factors');
    } catch (err) {
      if (err.code !== 'factors_off') throw err;
      $('factors-status').textContent = 'This service has no second factors.';
      for (const id of ['factors', 'factor-add', 'passkey-add', 'recovery-new']) $(id).hidden = true;
      return;
    }
    state.factors = list.items;
    const any = list.items.length > 0;
    factorFields(list.items);
    // A factor (or new recovery codes) takes a verified address: the api
    // refuses them before (403 email_not_verified), so the forms give way
    // to saying so, with the verification mail to send again.
    const unverified = state.me.emailVerified !== true;
    const verifyFirst = unverified ? 'Verify your email first to add a second factor: open the link we mailed to ' + state.me.email + '.' : '';
    $('factors-status').textContent = any
      ? 'Logging in takes your password and a second factor (a code from your app, or your passkey). Recovery codes left: ' + list.recoveryCodesLeft + '.' + (verifyFirst && ' ' + verifyFirst)
      : verifyFirst || 'None: your password alone logs you in. Add an authenticator app or a passkey, so that a stolen password opens nothing.';
    $('factors-verify').hidden = !unverified;
    $('factor-add').hidden = unverified;
    $('passkey-add').hidden = unverified;
    $('factors').hidden = !any;
    $('recovery-new').hidden = !any || unverified;
    $('factor-add').querySelector('h4').textContent = any ? 'Add another authenticator app' : 'Add an authenticator app';
    fill('factors', list.items.map((f) => {
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.textContent = 'Remove';
      remove.setAttribute('aria-label', 'Remove ' + f.name);
      remove.addEventListener('click', () => {
        const form = $('factor-remove');
        form.reset();
        clearErrors(form);
        form.elements.factorId.value = f.id;
        $('factor-remove-title').textContent = 'Remove ' + f.name;
        form.hidden = false;
        form.elements.currentPassword.focus();
      });
      return row(f.name, f.kind === 'passkey' ? 'Passkey' : 'Authenticator app', when(f.createdAt), f.lastUsedAt ? ago(f.lastUsedAt) : 'never', remove);
    }));
  }

  // showRecoveryCodes shows new recovery codes, once.
  function showRecoveryCodes(codes) {
    $('recovery-codes').replaceChildren(...codes.map((c) => {
      const li = document.createElement('li');
      li.textContent = c;
      return li;
    }));
    $('recovery-shown').hidden = false;
  }

  let enrolling = '';
  let enrollingName = '';
  form('factor-add', async (v, f) => {
    const e = await api('POST', '/v1/users/' + state.me.id + '/factors',
      await withCode({ name: v.name, currentPassword: v.currentPassword }, v));
    enrolling = e.factor.id;
    enrollingName = e.factor.name;
    f.reset();
    $('factor-qr').src = e.qrCode;
    $('factor-secret').textContent = e.secret;
    $('recovery-shown').hidden = true;
    $('factor-setup').hidden = false;
    $('factor-confirm').elements.code.focus();
    say('Scan the code with your app, then give the code it shows.');
  });

  // A passkey: the server's options, the browser's ceremony, its answer
  // registered; a first factor's recovery codes shown once.
  form('passkey-add', async (v, f) => {
    const e = await api('POST', '/v1/users/' + state.me.id + '/passkeys',
      await withCode({ name: v.name, currentPassword: v.currentPassword }, v));
    say('Your browser asks you to create the passkey…');
    const credential = await passkeyCreate(e.options);
    const c = await api('POST', '/v1/users/' + state.me.id + '/passkeys/' + enc(e.factor.id) + '/registration', { credential })
      .catch((err) => enrolmentGone(err, e.factor, 'delete the passkey your browser just made, if it lists one, and add it again'));
    f.reset();
    // The codes show whatever the read after: they are shown only now.
    if (c.recoveryCodes) showRecoveryCodes(c.recoveryCodes);
    await changed(c.factor.name + ' is added: logging in now asks for your passkey (or a code of an app you have).'
      + (c.recoveryCodes ? ' Keep the recovery codes below somewhere safe: they are shown only now.' : ''), () => showFactors());
  });

  // enrolmentGone throws err, a refusal of a factor's confirmation, in
  // words. An enrolment gone (404 not_found: forgotten after its ten
  // minutes; 409 enrolment_expired: expired, confirmed already by a try
  // whose answer was lost, or the account moved to another address while
  // it ran) sets up nothing more: its key shown goes, the account and its
  // factors are read afresh (its address may be another, not verified),
  // and the message says whether the factor works (listed) or what to do
  // (again: a new enrolment, to the account's address as it is now),
  // not the API's paths.
  async function enrolmentGone(err, factor, again) {
    if (!(err.code === 'enrolment_expired' || (err.status === 404 && err.code === 'not_found'))) throw err;
    if (factor.id === enrolling) forgetSecrets();
    try {
      state.me = await api('GET', '/v1/me');
      showWho();
      showEmailStatus();
      await showFactors();
    } catch (read) {
      if (read instanceof Dropped || !state.token) throw read;
      throw new ApiError(err.status, 'This setup of ' + factor.name + ' has ended (it expired, was confirmed already, or your account\'s address changed meanwhile), '
        + 'and reading your factors afresh failed: ' + read.message + (/[.!?]$/.test(read.message) ? '' : '.')
        + ' Reload the page: if ' + factor.name + ' is not listed, ' + again + '.', [], err.code);
    }
    if ((state.factors || []).some((x) => x.id === factor.id)) {
      throw new ApiError(err.status, factor.name + ' was added already (an earlier try did it): it works. If you did not see its recovery codes, make new ones below.', [], err.code);
    }
    throw new ApiError(err.status, factor.name + ' is not added: its setup expired, or your account\'s address changed while it ran. Begin again: '
      + again + '.', [], err.code);
  }

  form('factor-confirm', async (v, f) => {
    const factor = { id: enrolling, name: enrollingName };
    const c = await api('POST', '/v1/users/' + state.me.id + '/factors/' + enc(enrolling) + '/confirmation', { code: appCode(v.code) })
      .catch((err) => enrolmentGone(err, factor, 'remove it from your authenticator app and add it again above, then scan the new code'));
    f.reset();
    // The app holds the key now: the page keeps none of it.
    forgetSecrets();
    if (c.recoveryCodes) showRecoveryCodes(c.recoveryCodes);
    await changed(c.factor.name + ' is added: logging in now asks for its code.'
      + (c.recoveryCodes ? ' Keep the recovery codes below somewhere safe: they are shown only now.' : ''), () => showFactors());
  });

  $('factor-remove-cancel').addEventListener('click', () => { $('factor-remove').hidden = true; });
  form('factor-remove', async (v, f) => {
    await api('POST', '/v1/users/' + state.me.id + '/factors/' + enc(v.factorId) + '/removal',
      await withCode({ currentPassword: v.currentPassword }, v));
    f.hidden = true;
    // The list as read after the removal, or, when that read failed, as before it.
    await changed(() => (state.factors.some((x) => x.id !== v.factorId) ? 'Removed. Your other apps still work.' : 'Removed: your password alone logs you in again.'),
      () => showFactors());
  });

  form('recovery-new', async (v, f) => {
    const r = await api('POST', '/v1/users/' + state.me.id + '/recovery-codes', await withCode({ currentPassword: v.currentPassword }, v));
    f.reset();
    showRecoveryCodes(r.recoveryCodes);
    await changed('New recovery codes below: the old ones no longer work. They are shown only now.', () => showFactors());
  });

  // showDeletionGroups lists, before a deletion is asked, the groups
  // with other members the user manages (among the first 100 of the
  // user's groups): one the user is still the only manager of when the
  // account is deleted gets another member as its manager (decision 79).
  // Without an answer the list stays hidden: the deletion needs none.
  async function showDeletionGroups() {
    const box = $('delete-groups');
    const list = box.querySelector('ul');
    box.hidden = true;
    list.replaceChildren();
    let page;
    try {
      page = await api('GET', '/v1/users/' + enc(state.me.id) + '/groups' + query({ limit: 100 }));
    } catch (err) {
      return;
    }
    for (const m of page.items.filter((m) => m.role === 'manager' && m.group.memberCount > 1)) {
      names.set(m.group.id, m.group.name);
      const li = document.createElement('li');
      li.append(link(m.group.name, '#/groups/' + enc(m.group.name)), ' (' + capacity(m.group) + ')');
      list.append(li);
    }
    if (page.nextCursor) {
      const li = document.createElement('li');
      li.append(link('and perhaps more among your groups', '#/groups'));
      list.append(li);
    }
    box.hidden = list.children.length === 0;
  }

  form('delete-account', async (v) => {
    const me = state.me;
    if ((v.confirm || '').trim().toLowerCase() !== me.username.toLowerCase()) {
      throw fieldError('confirm', 'Type your username, ' + me.username + ', to delete this account.');
    }
    const job = await api('POST', '/v1/users/' + enc(me.id) + '/deletion', await withCode({ currentPassword: v.currentPassword }, v));
    // The account is gone for everyone already: this session works for
    // nothing but the deletion itself, and the job ends it. The job does
    // the rest; its progress shows here until it is done.
    forget();
    replaceRoute('/');
    await start();
    followJob(job, {
      busy: (j) => 'Your account ' + me.username + ' is being deleted: it is gone for everyone already; removing its items and groups' + jobProgress(j) + '. Its username and email are free once this is done.',
      done: () => 'Your account ' + me.username + ' is deleted, and its username and email are free again.',
    });
  });

  // ---- Mailed links: verify an email, reset a forgotten password ----

  // tokenRefusals say, per page, why a mailed link's token was refused
  // (400 invalid_token, by the code of its token field).
  const tokenRefusals = {
    verify: {
      unknown: 'This link is not one shelf mailed, or it has run out. Ask for a new mail below.',
      expired: 'This link has expired. Ask for a new mail below.',
      used: 'This link was used already: if you opened it before, your address is verified.',
      stale: 'This link was mailed to an address your account no longer has. Ask for a mail to its current address below.',
    },
    revertFactor: {
      unknown: 'This link is not one shelf mailed, or it has run out.',
      expired: 'This link has expired: if the factor is not yours, ask for a password reset link for your address and ask an admin to remove the factor.',
      used: 'This link was used already: the factor is removed.',
      stale: 'Your account no longer has the address this link was mailed to.',
    },
    refuseEmail: {
      unknown: 'This link is not one shelf mailed, or it has run out.',
      expired: 'This link has expired, and so has the request it answers: the address is free again.',
      used: 'This link was used already: the request is cancelled and the account may not ask for this address again.',
      stale: 'This address was confirmed for the account, or the account is gone: there is nothing to refuse.',
    },
    revertEmail: {
      unknown: 'This link is not one shelf mailed, or it has run out.',
      expired: 'This link has expired: the change can no longer be undone this way. Ask for a password reset link for your address.',
      used: 'This link was used already: the change is undone.',
      stale: 'Your account no longer has or holds the address this link was mailed to.',
    },
    reset: {
      unknown: 'This link is not one shelf mailed, or it has run out: ask for a new one.',
      expired: 'This link has expired: ask for a new one.',
      used: 'This link was used already (a link sets one password, once): ask for a new one if you need it.',
      stale: 'Your password was reset, or your email changed, since this link was mailed: ask for a new one.',
    },
  };

  // linkPost sends a mailed link's token (a verification, a reset, a
  // revert, a "not me") without the tab's session: the token is the
  // credential, and a session sent along must be live or the api answers
  // 401 before reading the token. The tab may hold one that ended since
  // it was opened, as when a thief with the password signs out every
  // other session while the owner holds the revert link open: her press
  // logged the tab out to a login she cannot pass, and forgot the link.
  const linkPost = (path, body) => api('POST', path, body, { bare: true });

  // tokenRefusal is the readable reason err refused a mailed link on
  // page, or '' when err is not about the token.
  function tokenRefusal(err, page) {
    const f = err.code === 'invalid_token' && err.fields.find((e) => e.field === 'token');
    if (!f) return '';
    return tokenRefusals[page][f.code] || f.message;
  }

  // linkTokens: the token each mailed link's page was opened with, kept
  // here once it is out of the address bar.
  const linkTokens = {};

  // linkToken answers the token of the mailed link page was opened with,
  // and takes it out of the address bar at once (history.replaceState:
  // no history entry, nothing shown or bookmarked keeps it); the page
  // keeps it until the tab's session is forgotten (forget).
  function linkToken(page) {
    const token = state.params.get('token');
    if (token) {
      linkTokens[page] = token;
      state.params.delete('token');
      const rest = state.params.toString();
      replaceRoute('/' + page + (rest ? '?' + rest : ''));
    }
    return linkTokens[page] || '';
  }

  // Verifying stays automatic on load: the token proves only that the
  // mail reached the address, which whoever (or whatever) opens the link
  // shows by opening it; it ends no session and changes nothing else.
  async function showVerify() {
    const token = linkToken('verify');
    const result = $('verify-result');
    const again = $('verify-again');
    clearErrors(again);
    again.elements.email.value = state.me ? state.me.email || '' : state.params.get('email') || '';
    again.hidden = true;
    $('verify-retry').hidden = true;
    result.className = '';
    if (!token) {
      result.textContent = 'Give the address of your account and we mail it a new link.';
      again.hidden = false;
      return;
    }
    result.textContent = 'Confirming your email address...';
    try {
      await linkPost('/v1/email-verifications/confirm', { token });
    } catch (err) {
      if (err instanceof Dropped) throw err;
      const reason = tokenRefusal(err, 'verify');
      result.textContent = reason || err.message;
      result.className = 'error';
      again.hidden = !reason;
      // A refusal that is not the link's (the api unavailable, a limit,
      // no answer) is tried again here: the address bar no longer holds
      // the token, and a reload would find none.
      $('verify-retry').hidden = Boolean(reason);
      say(reason ? 'This link cannot confirm an address.' : err.message, true);
      return;
    }
    // The outcome's line is said first, then the result beside the link:
    // a retry's earlier refusal ("try again") must not stay on the line
    // once the page says verified.
    await changed('Email address verified. Thank you.', async () => {
      if (!state.me) return;
      state.me = await api('GET', '/v1/me');
      showWho();
    });
    result.textContent = 'Your email address is verified.';
    result.className = 'ok';
  }

  $('verify-retry').addEventListener('click', act(() => showVerify()));

  // revertPage is a page of a link mailed to an account's address that
  // undoes what someone signed in to it did (an email change, an app
  // added), or to the address an email change asks for ("not me"): it
  // shows what the link does, and does nothing until its button is
  // pressed (a mail scanner that fetches the link, or an owner who only
  // reads it, must not sign every session out). The button is busy
  // meanwhile, and the outcome is said beside it and focused. A link that
  // ends every session of its account forgets this tab's (signsOut); the
  // "not me" link ends none, and the tab may hold its reader's own.
  function revertPage({ page, path, refusals, what, working, done, said, signsOut = true }) {
    const result = $(page + '-result');
    const go = $(page + '-go');
    async function revert() {
      const token = linkTokens[page] || '';
      go.disabled = true;
      go.setAttribute('aria-busy', 'true');
      result.className = '';
      result.textContent = working;
      try {
        await linkPost(path, { token });
      } catch (err) {
        // The page shows afresh when opened again (show).
        if (err instanceof Dropped) return;
        const reason = tokenRefusal(err, refusals);
        result.textContent = reason || err.message;
        result.className = 'error';
        // A refused link stays refused; anything else may be tried again.
        go.hidden = Boolean(reason);
        go.disabled = false;
        go.removeAttribute('aria-busy');
        result.focus();
        say(reason ? 'This link cannot ' + what + '.' : err.message, true);
        return;
      }
      delete linkTokens[page];
      if (signsOut) {
        forget();
        showWho();
        $('logout').hidden = true;
        $('nav').hidden = true;
      }
      go.hidden = true;
      go.removeAttribute('aria-busy');
      $(page + '-ask').hidden = true;
      result.textContent = done;
      result.className = 'ok';
      $(page + '-next').hidden = false;
      result.focus();
      say(said);
    }
    go.addEventListener('click', () => revert().catch(sayError));
    return function show() {
      const token = linkToken(page);
      $(page + '-next').hidden = true;
      $(page + '-ask').hidden = !token;
      go.hidden = !token;
      go.disabled = false;
      go.removeAttribute('aria-busy');
      result.className = '';
      result.textContent = token ? '' : 'This page needs the link from the mail.';
    };
  }

  const showRevertEmail = revertPage({
    page: 'revert-email', path: '/v1/email-changes/revert', refusals: 'revertEmail', what: 'undo the change',
    working: 'Undoing the change...',
    done: 'The change is undone: your account has its email address back, every session of it is signed out, and any second factor added since the change is removed.',
    said: 'Email change undone. Choose a new password now.',
  });
  const showRefuseEmail = revertPage({
    page: 'refuse-email', path: '/v1/email-changes/refusal', refusals: 'refuseEmail', what: 'refuse the address',
    working: 'Refusing the address...',
    done: 'The request is cancelled and your address is free: that account may not ask for it again.',
    said: 'Address refused. Nothing more to do.',
    signsOut: false,
  });
  const showRevertFactor = revertPage({
    page: 'revert-factor', path: '/v1/factor-additions/revert', refusals: 'revertFactor', what: 'remove the factor',
    working: 'Removing the factor...',
    done: 'The factor is removed, and every session of your account is signed out.',
    said: 'Second factor removed. Choose a new password now.',
  });

  form('verify-again', async (v, f) => {
    await api('POST', '/v1/email-verifications', { email: v.email });
    f.reset();
    say('If an account with this address is not verified yet, a mail is on its way to it.');
  });

  form('forgot', async (v, f) => {
    await api('POST', '/v1/password-resets', { email: v.email });
    f.reset();
    // The same for every address: whether it has an account is nobody's business.
    say('If an account has this address, a mail is on its way to it with a link to choose a new password.');
  });

  function showReset() {
    const f = $('reset');
    f.reset();
    clearErrors(f);
    f.elements.token.value = linkToken('reset');
    if (!f.elements.token.value) {
      showError(f, fieldError('token', 'This page needs the link from the mail: ask for a new one.'));
    }
  }

  form('reset', async (v) => {
    let s;
    try {
      s = await linkPost('/v1/password-resets/confirm', { token: v.token, newPassword: v.newPassword });
    } catch (err) {
      const reason = tokenRefusal(err, 'reset');
      if (reason) err.fields.find((e) => e.field === 'token').message = reason;
      throw err;
    }
    delete linkTokens.reset;
    // Every session of the account ended, this tab's too if it was one;
    // the answer is a new session, as a login's (none when the account
    // may not log in now, a suspended one).
    forget();
    if (s && s.challenge) {
      // The account has a second factor, which a reset keeps.
      replaceRoute('/auth');
      await start();
      return askCode(s.challenge, s);
    }
    if (s) signIn(s);
    replaceRoute('/');
    if (s) carry('Your new password is set, every other session of your account has ended, and you are logged in as ' + s.user.username + '.');
    await start();
    if (!s) say('Your new password is set and every session of your account has ended: log in with it.');
  });

  // ---- Log in and out ----

  // A new account is logged in at once, told where its address's link
  // went; where logins wait for a verified address
  // (SHELF_REQUIRE_VERIFIED_EMAIL) it is told to open that link first.
  form('signup', async (v, f) => {
    const u = await api('POST', '/v1/users', { username: v.username, email: v.email, password: v.password });
    f.reset();
    const mailed = 'A link to confirm ' + v.email + ' is on its way there';
    let s = null;
    try {
      s = await api('POST', '/v1/sessions', { login: u.username, password: v.password });
    } catch (err) {
      $('login').elements.login.value = u.username;
      if (err.code === 'email_not_verified') unverified(v.email);
      say('Signed up as ' + u.username + '. ' + mailed + ': open it, then log in.');
      return;
    }
    signIn(s);
    carry('Welcome, ' + u.username + ': you are signed up and logged in. ' + mailed + '.');
    replaceRoute('/library');
    await start();
  });

  // unverified points a login refused for its unverified address to the
  // page that mails the link again (address filled in when known).
  function unverified(address) {
    $('login-verify-link').href = '#/verify' + (address.includes('@') ? '?email=' + enc(address) : '');
    $('login-unverified').hidden = false;
  }

  form('login', async (v, f) => {
    $('login-unverified').hidden = true;
    $('login-recovered').hidden = true;
    let s;
    try {
      s = await api('POST', '/v1/sessions', { login: v.login, password: v.password });
    } catch (err) {
      // SHELF_REQUIRE_VERIFIED_EMAIL: point to the page that mails the
      // link again (the address filled in when it was typed to log in).
      if (err.code === 'email_not_verified') unverified(v.login);
      // A revert (of an email change or of a new factor): the right
      // password opens nothing until a reset sets a new one.
      if (err.code === 'password_reset_required') $('login-recovered').hidden = false;
      // A suspended account is told since and until when.
      if (err.code === 'suspended' && err.problem.suspendedAt) {
        throw new ApiError(err.status, 'This account is suspended since ' + when(err.problem.suspendedAt)
          + (err.problem.until ? ', until ' + when(err.problem.until) : ', until a moderator lifts it')
          + (err.problem.reason ? '. The reason given: ' + err.problem.reason + '.' : '.'), [], err.code, err.problem);
      }
      throw err;
    }
    f.reset();
    if (s.challenge) return askCode(s.challenge, s);
    await welcome(s);
  });

  // askCode shows the second step of a login whose password was right,
  // for an account with a second factor (the 202's challenge).
  // With a passkey among the account's factors (the 202's methods and
  // options), a button asks the browser for it.
  let challenge = '';
  let passkeyOptions = null;
  function askCode(c, s = {}) {
    challenge = c;
    passkeyOptions = s.passkey || null;
    const apps = !s.methods || s.methods.includes('totp');
    $('login').hidden = true;
    $('login-code').hidden = false;
    $('login-passkey').hidden = !passkeyOptions;
    $('login-code').querySelector('input[name=code]').closest('label').hidden = !apps;
    $('login-code-hint').textContent = 'The password is right. This account also asks for '
      + (passkeyOptions && apps ? 'your passkey or a code from your authenticator app'
        : passkeyOptions ? 'your passkey' : 'a code: open your authenticator app')
      + ', or one of your recovery codes.';
    (passkeyOptions ? $('login-passkey') : $('login-code').querySelector('input[name=code]')).focus();
    say(passkeyOptions ? 'The password is right; now your passkey.' : 'The password is right; now the code from your authenticator app.');
  }
  $('login-passkey').addEventListener('click', async () => {
    const f = $('login-code');
    clearErrors(f);
    try {
      await busyWhile(f, async () => {
        say('Your browser asks for your passkey…');
        const passkey = await passkeyGet(passkeyOptions);
        await secondStep({ challenge, passkey });
      });
    } catch (err) {
      showError(f, err);
    }
  });
  function endCode() {
    challenge = '';
    passkeyOptions = null;
    $('login-code').reset();
    $('login-code').hidden = true;
    $('login').hidden = false;
  }
  $('login-code-restart').addEventListener('click', endCode);

  form('login-code', async (v) => {
    const body = { challenge };
    if (v.recoveryCode) body.recoveryCode = v.recoveryCode; else body.code = appCode(v.code);
    await secondStep(body);
  });
  // secondStep sends a login's second step, back to the password when
  // the challenge no longer works.
  async function secondStep(body) {
    let s;
    try {
      s = await api('POST', '/v1/sessions/second-factor', body);
    } catch (err) {
      // A used, expired or stale challenge: back to the password, where
      // the keyboard goes on (the code form it was in is hidden).
      if (err.code === 'invalid_challenge') {
        endCode();
        $('login').elements.login.focus();
      }
      throw err;
    }
    endCode();
    await welcome(s);
  }

  // welcome keeps a login's session and goes on: from the login page to
  // the page the visitor came from (a hash route of this console only),
  // else the library.
  async function welcome(s) {
    signIn(s);
    carry('Welcome, ' + s.user.displayName + '.');
    if (location.hash.startsWith('#/auth')) {
      const next = state.params.get('next') || '';
      replaceRoute(next.startsWith('/') ? next : '/library');
    }
    await start();
  }

  // loginHref is the login page's route, coming back here after it.
  const loginHref = () => '#/auth?next=' + enc(location.hash.replace(/^#/, '') || '/');

  // signIn keeps a new session (a login's, a reset's) as this tab's.
  function signIn(s) {
    state.token = s.token;
    sessionStorage.setItem('shelf.token', s.token);
  }

  // forget drops this tab's session, and the tokens of the mailed links
  // opened in it: a reset link opened and not used (its owner logged in
  // with her password instead) must not wait behind #/reset, or the Back
  // button, for whoever uses the tab after her Log out.
  function forget() {
    signedOut++;
    state.token = null;
    state.me = null;
    sessionStorage.removeItem('shelf.token');
    names.clear();
    for (const page of Object.keys(linkTokens)) delete linkTokens[page];
    // The user search (search.js) lets go of its matches too.
    window.dispatchEvent(new CustomEvent('shelf:logged-out'));
    $('reset').elements.token.value = '';
    forgetSecrets();
    forgetPages();
  }

  // forgetPages empties what the session's pages showed: a page shows
  // what it last held until its own reads come (and for good when they
  // are refused), so after a Log out the next user of the tab met the
  // last one's library, profile and email, sessions (addresses, devices),
  // second factors, groups and moderation views on their own pages, and
  // what the last one typed in their forms.
  function forgetPages() {
    state.factors = null;
    people.asked = '';
    item.groupsOffered = false;
    document.querySelectorAll('main form').forEach((f) => f.reset());
    document.querySelectorAll('main tbody, main datalist, #mod-factors, #delete-groups ul').forEach((el) => el.replaceChildren());
    document.querySelectorAll('main .page-number').forEach((el) => { el.textContent = ''; });
    for (const id of ['email-status', 'factors-status', 'mod-user-title', 'mod-user-status', 'mod-user-factors', 'group-capacity']) $(id).textContent = '';
    $('group-title').textContent = 'Group';
    hideGrant();
    $('add-member-proof').hidden = true;
    $('delete-groups').hidden = true;
  }

  // forgetSecrets takes out of the page an authenticator's key (and its
  // QR code) and the recovery codes shown once: hidden is not gone, and
  // the next user of the tab must not read them from the page.
  function forgetSecrets() {
    enrolling = '';
    $('factor-setup').hidden = true;
    $('recovery-shown').hidden = true;
    $('factor-secret').textContent = '';
    $('factor-qr').removeAttribute('src');
    $('recovery-codes').replaceChildren();
  }

  // Menu (under 600 px) opens and folds the pages' links; going to a page
  // folds them again.
  $('menu').addEventListener('click', () => menu(!document.querySelector('header').classList.contains('open')));
  function menu(open) {
    document.querySelector('header').classList.toggle('open', open);
    $('menu').setAttribute('aria-expanded', String(open));
  }

  // labelCells names each table cell after its column (data-label), which
  // a phone's stylesheet shows when the rows become cards, and marks the
  // cells with buttons as the row's actions (shown first there). It runs
  // whenever rows change.
  function labelCells() {
    document.querySelectorAll('main table').forEach((table) => {
      const heads = [...table.querySelectorAll('thead th')].map((th) => (th.querySelector('.visually-hidden') ? '' : th.textContent.trim()));
      table.querySelectorAll('tbody tr:not(.empty)').forEach((tr) => {
        [...tr.cells].forEach((td, i) => {
          if (heads[i] && !td.dataset.label) td.dataset.label = heads[i];
          if (td.querySelector('button')) td.classList.add('actions');
        });
      });
    });
  }
  new MutationObserver(labelCells).observe(document.querySelector('main'), { childList: true, subtree: true });

  // Log out ends the session on the server first. Only a 401 (the
  // session had ended already) logs the tab out without it: a tab that
  // forgot a session the server could not end would say "Logged out"
  // while the token still works for whoever holds it.
  $('logout').addEventListener('click', act(async () => {
    try {
      await api('DELETE', '/v1/sessions/current', undefined, { quiet: true });
    } catch (err) {
      if (err.status !== 401) {
        say('Not logged out: ' + err.message + ' The session still works; press Log out again.', true);
        return;
      }
    }
    forget();
    carry('Logged out.');
    // The login page, not the page left as a visitor would see it.
    replaceRoute('/auth');
    await start();
  }));

  function showWho() {
    const me = state.me;
    $('who').textContent = me ? 'logged in as ' + me.username + (me.displayName !== me.username ? ' (' + me.displayName + ')' : '') : 'not logged in';
  }

  // showSession shows who is logged in and what they may open.
  function showSession() {
    showWho();
    $('logout').hidden = !state.me;
    $('nav').hidden = !state.me;
    $('menu').hidden = !state.me;
    $('nav-moderation').hidden = !isAdmin();
    $('nav-audit').hidden = !isAdmin();
  }

  // sessionEnded logs the tab out after the API refused its session, and
  // goes to the login page saying why.
  function sessionEnded() {
    forget();
    showSession();
    carry(endedText);
    go('#/auth');
  }

  // ---- Pages and routes ----

  const isAdmin = () => Boolean(state.me && state.me.roles.includes('admin'));

  // pages: name -> how the page shows from its route's parts. public pages
  // show without a session; admin pages only to admins.
  const pages = {
    // The login page shows nothing of a refusal said before (a recovered
    // account's hint, a field's reason), to whoever opens it next.
    auth: { public: true, show: async () => {
      $('login-unverified').hidden = true;
      $('login-recovered').hidden = true;
      clearErrors($('login'));
      clearErrors($('signup'));
    } },
    forgot: { public: true, show: async () => clearErrors($('forgot')) },
    reset: { public: true, show: async () => showReset() },
    verify: { public: true, show: () => showVerify() },
    'revert-email': { public: true, show: () => showRevertEmail() },
    'refuse-email': { public: true, show: () => showRefuseEmail() },
    'revert-factor': { public: true, show: () => showRevertFactor() },
    library: { show: () => showLibrary() },
    // A shared link to an item or a library opens for visitors too: the
    // API serves public items to anyone.
    item: { public: true, show: (id) => showItem(id) },
    browse: { public: true, show: (kind, who) => showBrowse(kind, who) },
    groups: { section: (name) => (name ? 'group' : 'groups'), show: (name) => (name ? showGroup(name) : myGroups.first()) },
    // A user's moderation view is far down its page: the focus (and the
    // window) go to it.
    moderation: { admin: true, show: (username) => showModeration(username), focus: (username) => (username ? 'mod-user-title' : '') },
    account: { show: () => showAccount() },
    audit: { admin: true, show: () => showAudit() },
  };

  // replaceRoute puts route (#<route>) in the address bar in place of the
  // current one, without showing it (start or route shows it next).
  function replaceRoute(route) {
    history.replaceState(null, '', location.pathname + location.search + '#' + route);
  }

  // go shows the page at hash. The page is no longer ready from here on:
  // the hash changes now, the route runs on the event after, and a reader
  // of data-ready in between would take the old page for the new one.
  function go(hash) {
    document.body.dataset.ready = '';
    const before = location.hash;
    location.hash = hash;
    // An unchanged hash (as the browser writes it) fires no event: route now.
    if (location.hash === before) route().catch(sayError);
  }

  // routed counts the pages asked for (route); stillShown answers a
  // check that no other page was asked for since it was made: a page
  // whose reads land after the user went on (item A still loading when
  // item B is opened) must not show itself under the address of the
  // next, nor say its refusal there.
  let routed = 0;
  function stillShown() {
    const at = routed;
    return () => at === routed;
  }

  async function route() {
    const seq = ++routed;
    const raw = location.hash.replace(/^#\/?/, '');
    const [path, search] = raw.split('?');
    state.params = new URLSearchParams(search || '');
    const parts = path.split('/').filter(Boolean).map((p) => {
      try {
        return decodeURIComponent(p);
      } catch (err) {
        return p;
      }
    });
    let name = parts[0] || (state.me ? 'library' : 'auth');
    let page = pages[name];
    if (!page || (!page.public && !state.me) || (page.admin && !isAdmin())) {
      name = state.me ? 'library' : 'auth';
      page = pages[name];
    }
    const section = page.section ? page.section(...parts.slice(1)) : name;
    // A message belongs to the page it was said on, or to the one an
    // action went on to (carry), where it stays beside a failure of the
    // page's read (readFailed).
    const carried = state.carried && $('message').className !== 'error' ? $('message').textContent : '';
    if (!state.carried) say('');
    state.carried = false;
    document.body.dataset.ready = '';
    menu(false);
    document.querySelectorAll('main > section').forEach((s) => { s.hidden = s.dataset.page !== section; });
    document.querySelectorAll('#nav a').forEach((a) => {
      if (a.dataset.nav === name) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    });
    try {
      await page.show(...parts.slice(1));
    } catch (err) {
      // A later page (a Log out's too) says its own.
      if (seq !== routed) return;
      if (!carried || err instanceof Dropped || !state.token) throw err;
      say(readFailed(carried, err), true);
    } finally {
      if (seq === routed) {
        landed(section, page.focus ? page.focus(...parts.slice(1)) : '');
        document.body.dataset.ready = section;
      }
    }
  }

  // landed names the page shown in the window's title and moves the
  // focus to its heading, where a screen reader and the keyboard go on
  // from (the focus would otherwise stay on what was pressed, now hidden).
  // focus: the id of a heading further down the page that the page is
  // about (it names the title and takes the focus, when shown).
  function landed(section, focus) {
    const shown = document.querySelector(`main > section[data-page="${section}"]`);
    const own = focus && document.getElementById(focus);
    const heading = own && own.offsetParent !== null ? own : shown && document.getElementById(shown.getAttribute('aria-labelledby'));
    if (!heading) return;
    document.title = heading.textContent.trim() + ' · shelf';
    heading.tabIndex = -1;
    heading.focus();
  }

  // start reads who is logged in, then shows the page the address names.
  async function start() {
    state.me = null;
    if (state.token) {
      try {
        state.me = await api('GET', '/v1/me', undefined, { quiet: true });
        names.set(state.me.id, state.me.username);
      } catch (err) {
        // Only a 401 says the session ended; a refusal of another kind (a
        // 503, no answer at all) says nothing of it, and the tab keeps it.
        if (err instanceof Dropped) throw err;
        if (err.status === 401) {
          forget();
          carry(endedText);
        } else {
          carry('This tab could not check its session: ' + err.message + ' It is still logged in: reload the page to go on.', true);
        }
      }
    }
    showSession();
    await route();
  }

  window.addEventListener('hashchange', () => route().catch(sayError));
  // The user search (search.js) found the tab's session refused: the tab
  // logs out as it does when its own request is.
  window.addEventListener('shelf:session-ended', () => {
    if (state.token) sessionEnded();
  });
  start().catch(sayError);
})();
