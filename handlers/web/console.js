// The shelf console: a small page over the public API only. The session
// token lives in sessionStorage (gone with the tab).
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const state = { token: sessionStorage.getItem('shelf.token'), me: null, myCursor: '' };

  function say(text, isError) {
    $('message').textContent = text;
    $('message').className = isError ? 'error' : '';
  }

  async function api(method, path, body) {
    const headers = {};
    if (state.token) headers.Authorization = 'Bearer ' + state.token;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const data = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const fields = (data && data.errors || []).map((e) => e.field + ': ' + e.message).join('; ');
      const err = new Error((data && data.detail || res.statusText) + (fields ? ' (' + fields + ')' : ''));
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function form(id, handler) {
    $(id).addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const values = Object.fromEntries(new FormData(ev.target));
      try {
        await handler(values, ev.target);
      } catch (err) {
        say(err.message, true);
      }
    });
  }

  function item(entry) {
    const li = document.createElement('li');
    li.textContent = entry.name;
    const vis = document.createElement('span');
    vis.className = 'vis';
    vis.textContent = entry.visibility + ' · ' + new Date(entry.lastModified).toLocaleString();
    const id = document.createElement('code');
    id.textContent = ' ' + entry.id;
    li.append(vis, id);
    li.dataset.id = entry.id;
    return li;
  }

  async function loadMyLibrary(more) {
    if (!more) {
      $('my-library').replaceChildren();
      state.myCursor = '';
    }
    const q = '?limit=10' + (state.myCursor ? '&cursor=' + encodeURIComponent(state.myCursor) : '');
    const page = await api('GET', '/v1/users/' + state.me.id + '/library' + q);
    page.items.forEach((e) => $('my-library').append(item(e)));
    state.myCursor = page.nextCursor || '';
    $('my-more').hidden = !page.nextCursor;
  }

  async function loadSuspended() {
    const page = await api('GET', '/v1/suspensions?limit=100');
    $('suspended').replaceChildren(...page.items.map((s) => {
      const li = document.createElement('li');
      li.textContent = s.username + ' — ' + s.reason + ' (since ' + new Date(s.suspendedAt).toLocaleString() + ') ';
      const lift = document.createElement('button');
      lift.textContent = 'Unsuspend';
      lift.addEventListener('click', async () => {
        try {
          await api('DELETE', '/v1/users/' + s.userId + '/suspension');
          say(s.username + ' is no longer suspended.');
          await loadSuspended();
        } catch (err) {
          say(err.message, true);
        }
      });
      li.append(lift);
      li.dataset.user = s.userId;
      return li;
    }));
  }

  async function show() {
    const loggedIn = Boolean(state.token);
    state.me = null;
    if (loggedIn) {
      try {
        state.me = await api('GET', '/v1/me');
      } catch (err) {
        state.token = null;
        sessionStorage.removeItem('shelf.token');
      }
    }
    const me = state.me;
    $('who').textContent = me ? 'logged in as ' + me.username + ' (' + me.id + ')' : 'not logged in';
    $('logout').hidden = !me;
    $('auth').hidden = Boolean(me);
    $('mine').hidden = !me;
    const admin = Boolean(me && me.roles.includes('admin'));
    $('admin').hidden = !admin;
    if (me) await loadMyLibrary(false);
    if (admin) await loadSuspended();
  }

  form('signup', async (v, f) => {
    const u = await api('POST', '/v1/users', { username: v.username, email: v.email, password: v.password });
    f.reset();
    say('Signed up as ' + u.username + ' (' + u.id + '). Now log in.');
  });
  form('login', async (v, f) => {
    const s = await api('POST', '/v1/sessions', { login: v.login, password: v.password });
    state.token = s.token;
    sessionStorage.setItem('shelf.token', s.token);
    f.reset();
    say('Welcome, ' + s.user.displayName + '.');
    await show();
  });
  $('logout').addEventListener('click', async () => {
    try {
      await api('DELETE', '/v1/sessions/current');
    } catch (err) {
      // The session may already be gone; log out locally anyway.
    }
    state.token = null;
    sessionStorage.removeItem('shelf.token');
    say('Logged out.');
    await show();
  });
  $('my-more').addEventListener('click', () => loadMyLibrary(true).catch((err) => say(err.message, true)));
  form('create', async (v, f) => {
    const c = await api('POST', '/v1/content', { name: v.name, visibility: v.visibility });
    f.reset();
    say('Created ' + c.name + ' (' + c.id + ').');
    await loadMyLibrary(false);
  });
  form('share', async (v, f) => {
    await api('PUT', '/v1/content/' + encodeURIComponent(v.content) + '/members/' + encodeURIComponent(v.principal), { role: v.role });
    f.reset();
    say('Shared.');
  });
  form('view', async (v) => {
    let path;
    if (v.who.startsWith('g_')) {
      path = '/v1/groups/' + encodeURIComponent(v.who) + '/library?limit=50';
    } else {
      const u = await api('GET', '/v1/users/by-username/' + encodeURIComponent(v.who));
      path = '/v1/users/' + u.id + '/library?limit=50';
    }
    const page = await api('GET', path);
    $('other-library').replaceChildren(...page.items.map(item));
    say(page.items.length + ' item(s) you may see.');
  });
  form('suspend', async (v, f) => {
    await api('POST', '/v1/users/' + encodeURIComponent(v.user) + '/suspension', { reason: v.reason });
    f.reset();
    say('Suspended.');
    await loadSuspended();
  });

  show().catch((err) => say(err.message, true));
})();
