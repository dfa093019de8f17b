// The moderator's user search on the console's moderation page:
// a box that finds users by part of a username or email (GET
// /v1/users?q=, admins only; docs/design/user-search.md), a page of
// matches at a time, each leading to the user's suspension, moderation
// history and library. It lives beside console.js, not in it: it builds
// its own form and table in #user-search, reads the session the console
// keeps (sessionStorage shelf.token), says its outcomes on its own status
// line, and reaches the console only through the page's addresses
// (#/moderation/<username>, #/browse/user/<username>), the console's
// suspend form, which it fills in, and window events: the console's
// shelf:moderated, on which it reads its matches again; a hashchange it
// sends after an unsuspension, on which the console shows its page again;
// shelf:session-ended, sent when the API refuses the tab's session, on
// which the console logs the tab out as for its own requests; and the
// console's shelf:logged-out, on which it forgets its matches and drops
// the answers still out.
(function () {
  'use strict';
  const root = document.getElementById('user-search');
  if (!root) return;
  const enc = encodeURIComponent;
  // The console's rows per page (the browser test pages with 2).
  const pageSize = Math.min(100, Math.max(1, Number(sessionStorage.getItem('shelf.pageSize')) || 10));

  // el makes an element with text, attributes and children.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    e.append(...children);
    return e;
  }

  // ---- What it shows ----

  const form = el('form', { id: 'user-search-form', novalidate: '', role: 'search' },
    el('h3', { id: 'user-search-title', text: 'Find a user' }),
    el('label', {}, 'Part of a username or email',
      el('input', { name: 'q', type: 'search', required: '', minlength: '3', maxlength: '254', autocomplete: 'off' })),
    el('button', { text: 'Search' }));
  const status = el('p', { id: 'user-search-status', role: 'status', 'aria-live': 'polite' });
  const table = el('table', { id: 'user-search-results', hidden: '' },
    el('caption', { id: 'user-search-caption', text: 'Users found' }),
    el('thead', {}, el('tr', {},
      el('th', { scope: 'col', text: 'User' }), el('th', { scope: 'col', text: 'Email' }),
      el('th', { scope: 'col', text: 'Status' }), el('th', { scope: 'col' }, el('span', { class: 'visually-hidden', text: 'Actions' })))),
    el('tbody'));
  // A narrow screen scrolls the table inside its box, never the page;
  // long names and addresses wrap.
  const box = el('div', { id: 'user-search-box' }, table);
  box.style.overflowX = 'auto';
  box.style.maxWidth = '100%';
  const prev = el('button', { type: 'button', 'data-action': 'previous', text: 'Previous' });
  const next = el('button', { type: 'button', 'data-action': 'next', text: 'Next' });
  const pageNumber = el('span', { class: 'page-number' });
  const pager = el('div', { class: 'pager', 'data-pager': 'user-search-results', role: 'group', 'aria-label': 'Pages of users found', hidden: '' },
    prev, pageNumber, next);
  root.append(form, status, box, pager);

  function say(text, isError) {
    status.textContent = text;
    status.className = isError ? 'error' : '';
    status.style.color = isError ? '#a00' : '';
  }

  // fail says why a request was refused; a session that ended says
  // nothing here (the console has logged the tab out and says so on its
  // login page) and the matches go, so none stays for whoever logs in
  // next in this tab; a request answered after a Log out (dropped) says
  // nothing at all.
  function fail(err) {
    if (err.dropped) return;
    if (!err.ended) {
      say(err.message, true);
      return;
    }
    clear();
  }

  // clear forgets the search and its matches.
  function clear() {
    say('');
    search.seq++;
    search.q = '';
    search.cursors = [''];
    search.next = '';
    table.tBodies[0].replaceChildren();
    table.hidden = true;
    pager.hidden = true;
    form.reset();
  }

  // ---- The API ----

  // signedOut counts the console's Log outs (shelf:logged-out): a request
  // sent before one and answered after it is dropped, whatever its
  // answer, so that nothing of the last session's (matches, an outcome, a
  // refusal) shows afterwards, nor ends what the next user searched.
  let signedOut = 0;

  async function api(method, path) {
    const at = signedOut;
    const token = sessionStorage.getItem('shelf.token');
    let res;
    let text;
    try {
      res = await fetch(path, { method, headers: token ? { Authorization: 'Bearer ' + token } : {} });
      text = await res.text();
    } catch (err) {
      if (at !== signedOut) throw dropped();
      // No answer came (the network, or shelf itself, is down).
      const e = new Error('shelf did not answer (the network or the server is down)'
        + (method === 'GET' ? ': check your connection and try again.' : ', so this may or may not have been done: search again to see.'));
      e.fields = [];
      throw e;
    }
    if (at !== signedOut) throw dropped();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (err) {
      data = null;
    }
    if (res.status === 401 && token && (!data || data.code === 'unauthorized')) {
      // The tab's session is gone (ended elsewhere, expired, the account
      // suspended): the console logs the tab out and says so, as it does
      // for its own requests; the search says nothing more.
      window.dispatchEvent(new CustomEvent('shelf:session-ended'));
      const err = new Error('');
      err.fields = [];
      err.ended = true;
      throw err;
    }
    if (!res.ok) {
      const err = new Error((data && (data.detail || data.title)) || res.statusText);
      err.fields = (data && data.errors) || [];
      throw err;
    }
    return data;
  }

  function dropped() {
    const err = new Error('');
    err.fields = [];
    err.dropped = true;
    return err;
  }

  // ---- Searching and paging ----

  // search is the query shown and the cursors of the pages it came by.
  // seq counts the reads begun (and clear): a page whose read a later
  // one, or a Log out, overtook is dropped, so neither an older page nor
  // the last session's matches replace what was asked for last.
  const search = { q: '', cursors: [''], next: '', seq: 0 };

  function clearFieldError() {
    const input = form.elements.q;
    form.querySelectorAll('.field-error').forEach((e) => e.remove());
    input.removeAttribute('aria-invalid');
    input.removeAttribute('aria-describedby');
  }

  // load shows the page of q at the last of cursors; the search takes q
  // and cursors only once that page came, so a refused Next, Previous or
  // new search leaves it on the page shown, counted as before.
  async function load(q = search.q, cursors = search.cursors) {
    const params = new URLSearchParams({ q, limit: String(pageSize) });
    const cursor = cursors[cursors.length - 1];
    if (cursor) params.set('cursor', cursor);
    const seq = ++search.seq;
    const page = await api('GET', '/v1/users?' + params.toString());
    if (seq !== search.seq) return;
    search.q = q;
    search.cursors = cursors;
    search.next = page.nextCursor || '';
    render(page.items);
    table.hidden = false;
    pager.hidden = false;
    prev.disabled = search.cursors.length < 2;
    next.disabled = !search.next;
    pageNumber.textContent = 'page ' + search.cursors.length;
    document.getElementById('user-search-caption').textContent = 'Users whose username or email holds \u201c' + search.q + '\u201d';
  }

  function render(users) {
    const body = table.tBodies[0];
    if (users.length === 0) {
      const td = el('td', { text: search.cursors.length > 1 ? 'No more users on this page.' : 'Nobody\u2019s username or email holds that.' });
      td.colSpan = 4;
      body.replaceChildren(el('tr', { class: 'empty' }, td));
      return;
    }
    body.replaceChildren(...users.map(userRow));
  }

  // userRow is one user: who, their address and status, and where to go.
  function userRow(u) {
    const who = el('td', {}, el('strong', { text: u.username }));
    if (u.displayName && u.displayName !== u.username) who.append(el('br'), u.displayName);
    const email = el('td', { text: u.email || '' });
    for (const c of [who, email]) c.style.overflowWrap = 'anywhere';
    const actions = el('td', { class: 'user-search-actions' },
      el('a', { href: '#/moderation/' + enc(u.username), text: 'History', 'aria-label': 'History of ' + u.username }), ' ',
      el('a', { href: '#/browse/user/' + enc(u.username), text: 'Library', 'aria-label': 'Library of ' + u.username }), ' ',
      u.status === 'suspended' ? unsuspendButton(u) : suspendButton(u));
    const tr = el('tr', {}, who, email, el('td', { text: u.status }), actions);
    tr.dataset.user = u.username;
    return tr;
  }

  // suspendButton hands the user to the console's suspend form, which
  // asks for the reason.
  function suspendButton(u) {
    const b = el('button', { type: 'button', 'data-action': 'suspend', text: 'Suspend\u2026', 'aria-label': 'Suspend ' + u.username });
    b.addEventListener('click', () => {
      const f = document.getElementById('suspend');
      if (!f) return;
      f.elements.username.value = u.username;
      f.elements.reason.focus();
      say('Give a reason to suspend ' + u.username + ' in the form below.');
    });
    return b;
  }

  // unsuspendButton lifts a suspension once the moderator confirmed it.
  function unsuspendButton(u) {
    const cell = el('span');
    const start = el('button', { type: 'button', 'data-action': 'unsuspend', text: 'Unsuspend', 'aria-label': 'Unsuspend ' + u.username });
    const question = el('span', { class: 'confirm', role: 'group', 'aria-label': 'Confirm unsuspending ' + u.username, hidden: '' },
      'Lift ' + u.username + '\u2019s suspension? ');
    const yes = el('button', { type: 'button', 'data-action': 'confirm-unsuspend', class: 'danger', text: 'Yes, unsuspend' });
    const no = el('button', { type: 'button', 'data-action': 'cancel', text: 'Cancel' });
    question.append(yes, ' ', no);
    start.addEventListener('click', () => { start.hidden = true; question.hidden = false; no.focus(); });
    no.addEventListener('click', () => { question.hidden = true; start.hidden = false; start.focus(); });
    yes.addEventListener('click', act(async () => {
      await api('DELETE', '/v1/users/' + enc(u.id) + '/suspension');
      const done = u.username + ' is no longer suspended.';
      try {
        await load();
      } catch (err) {
        if (err.dropped || err.ended) throw err;
        // The change was made: it stays said, beside the failed read.
        window.dispatchEvent(new HashChangeEvent('hashchange'));
        say(done + ' Then reading the matches failed: ' + err.message + (/[.!?]$/.test(err.message) ? '' : '.')
          + ' Search again to see them as they are now.', true);
        return;
      }
      // The console's own lists on this page read again.
      window.dispatchEvent(new HashChangeEvent('hashchange'));
      say(done);
    }));
    cell.append(start, question);
    return cell;
  }

  // busy marks el (a pressed button, or the form and its buttons) busy
  // while fn runs (aria-busy, disabled), as the console's buttons are: a
  // second press meanwhile does nothing. The pager's buttons end as the
  // page shown has them.
  async function busy(el, fn) {
    if (el.getAttribute('aria-busy') === 'true') return;
    const buttons = el.tagName === 'FORM' ? [...el.querySelectorAll('button')] : [el];
    // A disabled button loses the keyboard's focus to the page's start:
    // the pressed one takes it back, if still there and enabled.
    const focused = el.contains(document.activeElement) ? document.activeElement : null;
    el.setAttribute('aria-busy', 'true');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await fn();
    } finally {
      el.removeAttribute('aria-busy');
      buttons.forEach((b) => { b.disabled = false; });
      prev.disabled = search.cursors.length < 2;
      next.disabled = !search.next;
      const now = document.activeElement;
      if (focused && focused.isConnected && !focused.disabled && (!now || now === document.body)) focused.focus();
    }
  }

  function act(fn) {
    return async (ev) => {
      try {
        await busy(ev.currentTarget, fn);
      } catch (err) {
        fail(err);
      }
    };
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (form.getAttribute('aria-busy') === 'true') return;
    clearFieldError();
    try {
      await busy(form, () => load(form.elements.q.value.trim(), ['']));
      say('');
    } catch (err) {
      // A request that got no answer (the network) names no field.
      const mine = (err.fields || []).find((f) => f.field === 'q');
      if (mine) {
        const note = el('span', { class: 'field-error', id: 'user-search-q-error', text: mine.message });
        const input = form.elements.q;
        input.setAttribute('aria-invalid', 'true');
        input.setAttribute('aria-describedby', note.id);
        input.closest('label').after(note);
      }
      fail(err);
    }
  });
  // A suspension or its lifting elsewhere on the page: the matches shown
  // are read again, so no row keeps the old status.
  // The console's Log out (or a session that ended): the matches go with
  // the session, so none stays for whoever logs in next in this tab.
  window.addEventListener('shelf:logged-out', () => {
    signedOut++;
    clear();
  });
  window.addEventListener('shelf:moderated', () => {
    if (search.q && !table.hidden) load().catch(fail);
  });
  next.addEventListener('click', act(async () => {
    if (!search.next) return;
    await load(search.q, [...search.cursors, search.next]);
  }));
  prev.addEventListener('click', act(async () => {
    if (search.cursors.length < 2) return;
    await load(search.q, search.cursors.slice(0, -1));
  }));
})();
