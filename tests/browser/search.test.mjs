// The moderator's user search (handlers/web/search.js) in headless
// Chromium, against the api tests/browser/test-browser.sh serves for
// console.test.mjs (same BASE_URL, CHROMIUM, NODE_PATH, GRANT): a
// non-admin never sees it; a query too short is refused beside its
// field; a search by part of a username or email, in any case, pages
// through every match; each match leads to its history, its library, the
// suspend form, and an unsuspension that asks first; a search with a
// session ended elsewhere logs the tab out as the console does, and a
// Log out takes the matches with it; at 375 px it stays within the
// screen. Fails on any console or page error (a refused request a step
// expects is allowed once, by its status). Prints "N passed, N failed";
// screenshots go to SCREENSHOTS (and README_SHOTS when set).
import { execSync } from 'node:child_process';
import { api, base, expect, finish, launch, refused, run, saveShot, step } from './walk.mjs';

const pw = 'correct horse battery staple';
const { browser, page } = await launch();

async function shot(name) {
  await saveShot(page, name, false); // checked by axe; docs/console.md describes the search in words
}

// as opens the console at hash as the holder of token, and waits until
// its page has shown.
async function as(token, hash, section) {
  await page.goto('about:blank');
  await page.goto(base + '/');
  await page.evaluate((t) => sessionStorage.setItem('shelf.token', t), token);
  await page.goto('about:blank');
  await page.goto(base + '/' + hash);
  await page.waitForSelector(`body[data-ready="${section}"]`);
}

// find searches for q and waits for the answer: the table's rows, or the
// status line's error.
async function find(q) {
  await page.evaluate(() => { document.getElementById('user-search-status').textContent = 'searching'; });
  await page.fill('#user-search-form [name="q"]', q);
  await page.click('#user-search-form button');
  await page.waitForFunction(() => document.getElementById('user-search-status').textContent !== 'searching');
}

async function usersShown() {
  return page.locator('#user-search-results tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.user || ''));
}

async function pageNumber(n) {
  await page.waitForFunction((n) => document.querySelector('[data-pager="user-search-results"] .page-number').textContent === 'page ' + n, n);
}

// The people: an admin, someone else, and four users the search finds,
// three by their usernames and one by the domain of their email; one of
// them suspended.
const tag = 'zqx' + run;
const admin = 'mod' + run;
const plain = 'plain' + run;
const targets = [tag + 'ann', tag + 'bob', 'Carol' + tag.toUpperCase()];
const byEmail = 'dave' + run;
for (const u of [admin, plain, ...targets]) {
  await api('POST', '/v1/users', null, { username: u, email: u.toLowerCase() + '@example.org', password: pw });
}
await api('POST', '/v1/users', null, { username: byEmail, email: 'dave@' + tag + '.example', password: pw });
execSync(`${process.env.GRANT} ${admin}`, { env: process.env, stdio: 'ignore' });
const login = async (who) => (await api('POST', '/v1/sessions', null, { login: who, password: pw })).token;
const adminToken = await login(admin);
const plainToken = await login(plain);
const suspendedOne = await api('GET', '/v1/users/by-username/' + targets[1], adminToken);
await api('POST', '/v1/users/' + suspendedOne.id + '/suspension', adminToken, { reason: 'spam' });
const everyone = [...targets, byEmail].sort();

await step('a non-admin never reaches the search', async () => {
  await as(plainToken, '#/moderation', 'library');
  expect(!(await page.locator('#user-search').isVisible()), 'the search shows to a non-admin');
});

await step('a query too short is refused beside its field', async () => {
  await as(adminToken, '#/moderation', 'moderation');
  expect(await page.locator('#user-search-form').isVisible(), 'no search box for the admin');
  await refused(400, () => find('ab'));
  const note = await page.locator('#user-search-q-error').textContent();
  expect(note.includes('3'), 'field error: ' + note);
  expect((await page.locator('#user-search-form [name="q"]').getAttribute('aria-invalid')) === 'true', 'the field is not marked');
  expect((await page.locator('#user-search-status').getAttribute('class')) === 'error', 'the status line is no error');
});

await step('finds users by part of a username or email, in any case, a page at a time', async () => {
  await find(tag.toUpperCase());
  await pageNumber(1);
  expect(await page.locator('#user-search-q-error').count() === 0, 'the old field error stays');
  const first = await usersShown();
  expect(first.length === 2, 'page 1: ' + first);
  await page.click('[data-pager="user-search-results"] [data-action="next"]');
  await pageNumber(2);
  const second = await usersShown();
  expect(second.length === 2, 'page 2: ' + second);
  const all = [...first, ...second].sort();
  expect(all.join() === everyone.join(), `found ${all}, want ${everyone}`);
  expect(await page.locator('[data-pager="user-search-results"] [data-action="next"]').isDisabled(), 'Next on the last page');
  await page.click('[data-pager="user-search-results"] [data-action="previous"]');
  await pageNumber(1);
  expect((await usersShown()).join() === first.join(), 'page 1 again differs');
  const emails = await page.locator('#user-search-results tbody td:nth-child(2)').allTextContents();
  expect(emails.every((e) => e.includes('@')), 'emails: ' + emails);
  await shot('moderation-search');
});

await step('a Next the api refuses, or a search the network drops, is said; the pages stay counted', async () => {
  await find(tag);
  await pageNumber(1);
  const first = await usersShown();
  const next = '[data-pager="user-search-results"] [data-action="next"]';
  // The next page's read answers 503, once.
  const nextPage = (url) => url.pathname === '/v1/users' && url.searchParams.has('cursor');
  await page.route(nextPage, async (route) => {
    await route.fulfill({ status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '1' },
      body: JSON.stringify({ type: 'urn:shelf:problem:unavailable', title: 'Service Unavailable', status: 503,
        code: 'unavailable', detail: 'The database could not answer in time; try again.' }) });
    await page.unroute(nextPage);
  });
  await refused(503, async () => {
    await page.click(next);
    await page.waitForFunction(() => document.getElementById('user-search-status').className === 'error');
  });
  await pageNumber(1);
  expect((await usersShown()).join() === first.join(), 'the refused Next changed the page shown');
  await page.click(next);
  await pageNumber(2);
  await page.click('[data-pager="user-search-results"] [data-action="previous"]');
  await pageNumber(1);
  expect((await usersShown()).join() === first.join(), 'Previous goes back to page 1');
  // A search whose request gets no answer at all: fetch throws, with no
  // fields to name.
  const anySearch = (url) => url.pathname === '/v1/users';
  await page.route(anySearch, (route) => route.abort('connectionrefused'));
  try {
    await refused('net::ERR_CONNECTION_REFUSED', () => find(tag + 'x'));
  } finally {
    await page.unroute(anySearch);
  }
  expect((await page.locator('#user-search-status').getAttribute('class')) === 'error', 'the failed search is not said');
  // ... in words that say what happened and what to do, not the browser's "Failed to fetch".
  const said = await page.locator('#user-search-status').textContent();
  expect(said.includes('did not answer') && said.includes('try again'), 'said: ' + said);
});

// row is the locator of a user's row in the results.
const row = (username) => page.locator(`#user-search-results tbody tr[data-user="${username}"]`);

// findAll searches for the tag and pages until username's row shows.
async function findAll(username) {
  await find(tag);
  for (let n = 1; !(await row(username).count()); n++) {
    expect(!(await page.locator('[data-pager="user-search-results"] [data-action="next"]').isDisabled()), username + ' not found');
    await page.click('[data-pager="user-search-results"] [data-action="next"]');
    await pageNumber(n + 1);
  }
}

await step('a match leads to its history and its library', async () => {
  await findAll(targets[1]);
  await row(targets[1]).locator('a', { hasText: 'History' }).click();
  await page.waitForFunction((u) => document.getElementById('history-caption').textContent.includes(u), targets[1]);
  expect(await page.locator('#history').isVisible(), 'no history');
  // The caption comes before the rows: wait for the suspension's.
  await page.waitForFunction(() => document.querySelector('#history tbody').innerText.includes('spam'));
  await row(targets[1]).locator('a', { hasText: 'Library' }).click();
  await page.waitForSelector('body[data-ready="browse"]');
  expect(page.url().endsWith('#/browse/user/' + targets[1]), 'library at ' + page.url());
});

await step('unsuspending asks first; Cancel keeps the suspension', async () => {
  await as(adminToken, '#/moderation', 'moderation');
  await findAll(targets[1]);
  const r = row(targets[1]);
  expect((await r.locator('td:nth-child(3)').textContent()) === 'suspended', 'not shown suspended');
  await r.locator('[data-action="unsuspend"]').click();
  expect(await r.locator('[data-action="confirm-unsuspend"]').isVisible(), 'no confirmation');
  await r.locator('[data-action="cancel"]').click();
  expect(await r.locator('[data-action="unsuspend"]').isVisible(), 'Cancel did not go back');
  await api('GET', '/v1/users/' + suspendedOne.id + '/suspension', adminToken);
  await r.locator('[data-action="unsuspend"]').click();
  await r.locator('[data-action="confirm-unsuspend"]').click();
  await page.waitForFunction(() => document.getElementById('user-search-status').textContent.includes('no longer suspended'));
  expect((await r.locator('td:nth-child(3)').textContent()) === 'active', 'still shown suspended');
  const res = await fetch(base + '/v1/users/' + suspendedOne.id + '/suspension', { headers: { Authorization: 'Bearer ' + adminToken } });
  expect(res.status === 404, 'the suspension is still there: ' + res.status);
  // The console's suspended list on the page read again.
  await page.waitForFunction((u) => !document.querySelector(`#suspended tr[data-user="${u}"]`), targets[1]);
});

await step('Suspend hands the user to the suspend form', async () => {
  await row(targets[1]).locator('[data-action="suspend"]').click();
  expect((await page.locator('#suspend [name="username"]').inputValue()) === targets[1], 'the form does not name the user');
  expect(await page.locator('#suspend [name="reason"]').evaluate((el) => el === document.activeElement), 'the reason is not focused');
  // Once suspended there, the match says so too (and offers Unsuspend).
  await page.locator('#suspend [name="reason"]').fill('spam');
  await page.locator('#suspend button:not([type="button"])').click();
  await row(targets[1]).locator('[data-action="unsuspend"]').waitFor();
  expect((await row(targets[1]).textContent()).includes('suspended'), 'the match still says ' + await row(targets[1]).textContent());
});

await step('Yes, unsuspend is busy until its answer: a double press lifts once, and says so', async () => {
  const r = row(targets[1]);
  await r.locator('[data-action="unsuspend"]').click();
  // The lift's answer is held until the test has looked at the button.
  const lift = (url) => url.pathname === '/v1/users/' + suspendedOne.id + '/suspension';
  let deletes = 0;
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route(lift, async (route) => {
    if (route.request().method() !== 'DELETE') return route.continue();
    deletes++;
    await held;
    await route.continue().catch(() => {});
  });
  try {
    const yes = r.locator('[data-action="confirm-unsuspend"]');
    await yes.dblclick();
    expect((await yes.getAttribute('aria-busy')) === 'true' && await yes.isDisabled(), 'Yes is not busy while its answer is awaited');
    release();
    await page.waitForFunction(() => document.getElementById('user-search-status').textContent.includes('no longer suspended'));
    await page.waitForTimeout(300);
  } finally {
    release();
    await page.unroute(lift);
  }
  expect(deletes === 1, deletes + ' lifts sent');
  expect((await page.locator('#user-search-status').getAttribute('class')) !== 'error', 'said: ' + await page.locator('#user-search-status').textContent());
  expect((await row(targets[1]).locator('td:nth-child(3)').textContent()) === 'active', 'still shown suspended');
});

await step('a search after the session ended elsewhere logs the tab out, says why on the login page and leaves no match behind', async () => {
  const token = await login(admin);
  await as(token, '#/moderation', 'moderation');
  await find(tag);
  await pageNumber(1);
  await api('DELETE', '/v1/sessions/current', token);
  await refused(401, async () => {
    await page.fill('#user-search-form [name="q"]', tag);
    await page.click('#user-search-form button');
    await page.waitForSelector('body[data-ready="auth"]');
  });
  const said = await page.locator('#message').textContent();
  expect(said.includes('session has ended'), 'says: ' + said);
  expect((await page.locator('#who').textContent()) === 'not logged in', 'the tab is still logged in');
  expect(await page.evaluate(() => sessionStorage.getItem('shelf.token')) === null, 'the token stays');
  expect((await page.locator('#user-search-status').getAttribute('class')) !== 'error', 'the search said a refusal: ' + await page.locator('#user-search-status').textContent());
  expect(await page.locator('#user-search-results tbody tr').count() === 0, 'the matches stay for the next to log in');
});

await step('a Log out takes the matches with it', async () => {
  const token = await login(admin);
  await as(token, '#/moderation', 'moderation');
  await find(tag);
  await pageNumber(1);
  expect(await page.locator('#user-search-results tbody tr').count() > 0, 'nothing found to forget');
  await page.click('#logout');
  await page.waitForSelector('body[data-ready="auth"]');
  expect(await page.locator('#user-search-results tbody tr').count() === 0, 'the matches stay for the next to log in');
  expect((await page.locator('#user-search-form [name="q"]').inputValue()) === '', 'the query stays');
});

await step('at 375 px the search stays within the screen', async () => {
  await page.setViewportSize({ width: 375, height: 740 });
  await as(adminToken, '#/moderation', 'moderation');
  await find(tag);
  await pageNumber(1);
  const right = await page.locator('#user-search').evaluate((el) => el.getBoundingClientRect().right);
  expect(right <= 375, 'the search reaches ' + right + ' px');
  const box = await page.locator('#user-search-box').evaluate((el) => el.getBoundingClientRect().right);
  expect(box <= 375, 'the results reach ' + box + ' px');
  await shot('moderation-search-phone');
  await page.setViewportSize({ width: 1100, height: 750 });
});

await finish(browser, 'search');
