// The console in headless Chromium: every page and action with three
// users and an admin, and the API reference. Run by tests/browser/test-browser.sh
// (make test-browser). Fails on any console error or page error (a request
// a step expects to be refused is allowed once, by its status, through
// refused()). Prints the plain "N passed, N failed" line.
//
// Screenshots of each page (1100x750) go to SCREENSHOTS, and with
// README_SHOTS set also there (make test-browser README_SCREENSHOTS=1
// writes docs/screenshots, which docs/console.md shows); that run has a
// keyspace of its own, so its people are simply alice, bob, carol and
// admin, and every other run adds a suffix to each name.
//
// Mail: the api logs each mail (SHELF_MAILER=log) to MAIL_LOG, one JSON
// line with its recipient, subject and text; mailed() takes the link out.
// A second api at VERIFIED_URL (same keyspace, mail in VERIFIED_MAIL_LOG)
// refuses login to accounts whose email is not verified.
import { execSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { accessible, api, base, expect, finish, launch, refused, run, saveShot, step } from './walk.mjs';

const mailLog = process.env.MAIL_LOG;
const verifiedBase = process.env.VERIFIED_URL;
const verifiedMailLog = process.env.VERIFIED_MAIL_LOG;

// page is the tab the helpers below drive; a step that needs a second
// tab points it there for a while (walk.mjs watches every tab).
const opened = await launch();
const { browser, context } = opened;
let page = opened.page;

async function shot(name) {
  await noOverflow();
  await saveShot(page, name);
}

// visit loads the console afresh at a route and waits until its page has
// shown (the tab's session stays: it is in sessionStorage); the page must
// fit the window's width.
async function visit(hash, section) {
  await page.goto('about:blank');
  await page.goto(base + '/' + hash);
  await page.waitForSelector(`body[data-ready="${section}"]`);
  await noOverflow();
}

// noOverflow fails when the page shown is wider than the window (a wide
// table scrolls inside its own box, long names wrap).
async function noOverflow() {
  const [scroll, inner, where] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth, document.body.dataset.ready]);
  expect(scroll <= inner, `the ${where} page is ${scroll} px wide in a window of ${inner}`);
  if (inner < 600) await actionsInView();
}

// actionsInView fails when a button, link, field or menu of the page
// shown lies beyond the window's left or right edge (a table's actions
// scrolled out of its box), or when the header takes more than a fifth of
// the window's height. noOverflow runs it in windows under 600 px.
async function actionsInView() {
  const [outside, header, height, where] = await page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll('main button, main a, main input, main select, main textarea, header button, header a')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || el.closest('[hidden]')) continue;
      if (r.left < 0 || r.right > window.innerWidth + 0.5) out.push((el.id || el.name || el.textContent.trim().slice(0, 30) || el.tagName) + ` (${Math.round(r.left)}-${Math.round(r.right)})`);
    }
    return [out, document.querySelector('header').getBoundingClientRect().height, window.innerHeight, document.body.dataset.ready];
  });
  expect(outside.length === 0, `on the ${where} page, outside the window: ${outside.join(', ')}`);
  expect(header <= height / 5, `on the ${where} page the header takes ${header} of ${height} px`);
}

// phone and desktop set the window's size: 375 px wide as a small phone,
// or the 1100x750 of the screenshots.
const phone375 = { width: 375, height: 740 };
const desktop = { width: 1100, height: 750 };

// confirm presses a button whose action removes something, checks the
// question asked (it includes want), and answers yes (or Cancel, with
// cancel); it answers the message line (an error there only with error).
async function confirm(selector, want, { cancel, error } = {}) {
  await page.evaluate(() => { const m = document.getElementById('message'); m.textContent = ''; m.className = ''; });
  await page.locator(selector).click();
  await page.locator('#confirm[open]').waitFor();
  // Enter on a dialog that just opened must not remove anything.
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
  expect(focused === 'confirm-no', 'the question opens on Cancel, not on ' + focused);
  const question = await page.locator('#confirm-text').textContent();
  expect(question.includes(want), 'the question: ' + question);
  await page.locator(cancel ? '#confirm-no' : '#confirm-yes').click();
  await page.locator('#confirm').waitFor({ state: 'hidden' });
  return message(error);
}

// submit fills a form's fields by name and sends it; it waits for the
// message line and answers it (an error there fails unless wanted).
async function submit(formId, values, wantError) {
  await page.evaluate(() => { const m = document.getElementById('message'); m.textContent = ''; m.className = ''; });
  for (const [name, value] of Object.entries(values)) {
    const field = page.locator(`#${formId} [name="${name}"]`);
    if ((await field.evaluate((el) => el.tagName)) === 'SELECT') await field.selectOption(value);
    else await field.fill(value);
  }
  await page.locator(`#${formId} button:not([type="button"])`).click();
  return message(wantError);
}

// click presses a button and answers the message line it leads to.
async function click(selector) {
  await page.evaluate(() => { const m = document.getElementById('message'); m.textContent = ''; m.className = ''; });
  await page.locator(selector).click();
  return message(false);
}

// finished waits until the message line says a job it followed is done
// (words in it), and no longer shows itself busy.
async function finished(words) {
  await page.waitForFunction((w) => {
    const m = document.getElementById('message');
    return m.textContent.includes(w) && m.getAttribute('aria-busy') === null;
  }, words, { timeout: 60000 });
}

async function message(wantError) {
  await page.waitForFunction(() => document.getElementById('message').textContent !== '');
  const text = await page.locator('#message').textContent();
  const isError = (await page.locator('#message').getAttribute('class')) === 'error';
  expect(isError === Boolean(wantError), (isError ? 'error: ' : 'no error: ') + text);
  return text;
}

// rows answers the text of each body row of a table.
async function rows(table) {
  return page.locator(`#${table} tbody tr`).allTextContents();
}

async function waitRows(table, n) {
  await page.waitForFunction(([t, n]) => {
    const body = document.querySelector(`#${t} tbody`);
    return body.rows.length === n && !body.querySelector('tr.empty');
  }, [table, n]);
}

// pageThrough presses Next and then Previous under a table, and checks
// the second page differs and going back shows the first again.
async function pageThrough(table) {
  const first = await rows(table);
  const pager = `[data-pager="${table}"]`;
  expect(await page.locator(`${pager} [data-action="previous"]`).isDisabled(), table + ': Previous on page 1');
  await page.locator(`${pager} [data-action="next"]`).click();
  await page.waitForFunction((p) => document.querySelector(`${p} .page-number`).textContent.startsWith('page 2 '), pager);
  const second = await rows(table);
  expect(second.length > 0 && second.join('|') !== first.join('|'), `${table}: page 2 ${second} after ${first}`);
  // The press that loaded a page leaves its buttons as the page has them:
  // no Next on the last page (its label counts the list), no Previous on
  // the first.
  const last = (await page.locator(`${pager} .page-number`).textContent()).includes(' of ');
  await page.waitForFunction((p) => document.querySelector(`${p} [data-action="next"]`).getAttribute('aria-busy') === null, pager);
  expect(await page.locator(`${pager} [data-action="next"]`).isDisabled() === last, `${table}: Next ${last ? 'on the last page' : 'off before the last page'}`);
  await page.locator(`${pager} [data-action="previous"]`).click();
  await page.waitForFunction((p) => document.querySelector(`${p} .page-number`).textContent.startsWith('page 1 '), pager);
  const again = await rows(table);
  expect(again.join('|') === first.join('|'), `${table}: back to page 1 shows ${again}, was ${first}`);
  await page.waitForFunction((p) => document.querySelector(`${p} [data-action="previous"]`).getAttribute('aria-busy') === null, pager);
  expect(await page.locator(`${pager} [data-action="previous"]`).isDisabled(), `${table}: Previous back on page 1`);
  return [first, second];
}

// noRawIds fails if the shown page names someone or something by id.
async function noRawIds() {
  const text = await page.locator('main section:not([hidden])').innerText();
  const m = text.match(/\b[ugcs]_[a-z2-7]{26}\b/);
  expect(!m, 'an id is shown: ' + (m && m[0]));
}

// mails answers the links of the mails the api logged (in log) to address
// about what ('verify', 'reset', 'revert-email' or 'revert-factor'), oldest first.
function mails(address, what, log = mailLog) {
  const links = [];
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (!line.includes('SHELF_MAILER=log')) continue;
    const m = JSON.parse(line);
    const link = m.to === address && (m.text.match(/https?:\/\/\S+#\/(verify|reset|revert-email|revert-factor)\?token=[\w%-]+/) || [])[0];
    if (link && link.includes('#/' + what + '?')) links.push(link);
  }
  return links;
}

// mailed waits for a mail to address about what beyond the first seen
// (mails(...).length before the action that sends it) and answers its link.
async function mailed(address, what, seen, log = mailLog) {
  for (let i = 0; i < 100; i++) {
    const links = mails(address, what, log);
    if (links.length > seen) return links[seen];
    await page.waitForTimeout(100);
  }
  throw new Error(`no ${what} mail to ${address} after ${seen}`);
}

async function logout() {
  // On a phone Log out is behind Menu.
  if (await page.locator('#logout').isHidden()) await page.locator('#menu').click();
  await page.locator('#logout').click();
  await page.waitForSelector('body[data-ready="auth"]');
}

async function login(who, password) {
  await visit('#/library', 'auth');
  await submit('login', { login: who, password });
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#who').textContent()).includes(who), 'logged in as ' + who);
}

const alice = 'alice' + run;
const bob = 'bob' + run;
const carol = 'carol' + run;
const admin = 'admin' + run;
const club = 'club' + run;
const pw = 'correct horse battery';
const newPw = 'battery staple horse';
// The password alice chooses with the reset a revert mailed: the one the
// change's author knew (newPw) is refused there.
const recoveredPw = 'lantern orchard pebble';
const resetPw = 'staple correct battery';
const aliceMail = `${alice}@example.org`;
const aliceHome = `${alice}.home@example.org`;
const phone = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';

await step('the accessibility check finds what it must (an image without text, a field without a label)', async () => {
  await page.goto('about:blank');
  await page.setContent('<!doctype html><html lang="en"><title>t</title><main><img src="data:,"><input></main></html>');
  let said = '';
  try {
    await accessible(page, 'a page made to fail');
  } catch (err) {
    said = err.message;
  }
  expect(said.includes('image-alt') && said.includes('label'), 'axe said: ' + (said || 'nothing'));
});

await step('the API reference lists every route', async () => {
  await page.goto(base + '/docs');
  await page.waitForSelector('.opblock', { timeout: 30000 });
  const spec = await (await fetch(base + '/openapi.yaml')).text();
  const operations = (spec.match(/operationId:/g) || []).length;
  const shown = await page.locator('.opblock').count();
  await saveShot(page, 'docs', false, false);
  expect(shown === operations, `docs show ${shown} operations, the contract has ${operations}`);
  // Try-it-out calls the page's own origin wherever the page is (the
  // document's server is relative): here 127.0.0.1 on the test's port,
  // where a fixed http://localhost:8080 failed.
  const healthz = page.locator('#operations-operations-getHealthz');
  await healthz.locator('.opblock-summary').click();
  await healthz.locator('.try-out__btn').click();
  await healthz.locator('.execute').click();
  const status = healthz.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor({ timeout: 10000 });
  const got = (await status.textContent()).trim();
  expect(got === '200', `Try-it-out of GET /healthz from ${base}/docs answered ${got}`);
});

await step('sign up four users through the page and log in', async () => {
  await visit('#/library', 'auth');
  // A password people guess is refused, the reason beside the field.
  await refused(400, async () => {
    await submit('signup', { username: alice, email: aliceMail, password: 'password1' }, true);
  });
  expect((await page.locator('#signup .field-error').textContent()).includes('most common passwords'), 'the reason beside the password');
  expect(await page.locator('#signup [name="password"][aria-invalid="true"]').count() === 1, 'password marked invalid');
  // A signup logs in at once and says where the address's link went.
  for (const u of [alice, bob, carol, admin]) {
    const said = await submit('signup', { username: u, email: `${u}@example.org`, password: pw });
    expect(said.includes('Welcome, ' + u) && said.includes(`${u}@example.org`), 'signup of ' + u + ': ' + said);
    await page.waitForSelector('body[data-ready="library"]');
    expect((await page.locator('#who').textContent()).includes(u), 'logged in as ' + u);
    await logout();
  }
  execSync(`${process.env.GRANT} ${admin}`, { env: process.env, stdio: 'ignore' });
  await login(alice, pw);
  expect(await page.locator('#nav-moderation').isHidden(), 'no moderation link for alice');
});

await step('library: create items, newest first, page forward and back, oldest first', async () => {
  for (const [name, vis] of [['Notes', 'private'], ['Hello world', 'public'], ['Recipes', 'loggedin']]) {
    expect((await submit('create', { name, visibility: vis })).includes('Created ' + name), 'created ' + name);
  }
  await waitRows('my-library', 2);
  const [first, second] = await pageThrough('my-library');
  expect(first[0].startsWith('Recipes') && first[1].startsWith('Hello world') && second[0].startsWith('Notes'),
    'newest first: ' + first.concat(second).join(' | '));
  await page.locator('#library-order').selectOption('oldest');
  await page.waitForFunction(() => document.querySelector('#my-library tbody tr').textContent.startsWith('Notes'));
  // The order and the page are in the address: a reload shows the same
  // page, counted ("page 2 · 3–3 of 3": the last page knows the count).
  await page.locator('[data-pager="my-library"] [data-action="next"]').click();
  await page.waitForFunction(() => location.hash.includes('order=oldest') && location.hash.includes('cursor=') && location.hash.includes('page=2'));
  const onPage2 = await rows('my-library');
  await page.reload();
  await page.waitForSelector('body[data-ready="library"]');
  await page.waitForFunction(() => document.querySelector('[data-pager="my-library"] .page-number').textContent === 'page 2 \u00b7 3\u20133 of 3');
  expect((await rows('my-library')).join() === onPage2.join() && await page.locator('#library-order').inputValue() === 'oldest',
    'the reload shows the same page in the same order: ' + (await rows('my-library')).join(' | '));
  await page.locator('[data-pager="my-library"] [data-action="previous"]').click();
  await page.waitForFunction(() => document.querySelector('#my-library tbody tr').textContent.startsWith('Notes') && !location.hash.includes('cursor='));
  await page.locator('#library-order').selectOption('newest');
  await page.waitForFunction(() => document.querySelector('#my-library tbody tr').textContent.startsWith('Recipes'));
  // One wording per enum: the table says what the form's option says.
  const shown = (await rows('my-library')).join(' | ');
  expect(shown.includes('logged in') && !shown.includes('loggedin'), 'visibility as the form words it: ' + shown);
  await shot('library');
  // A refused field is named beside it.
  await refused(400, async () => {
    await submit('create', { name: 'Linked', link: 'ftp://example.org/x' }, true);
  });
  expect(await page.locator('#create [name="link"][aria-invalid="true"]').count() === 1, 'link marked invalid');
  expect((await page.locator('#create .field-error').textContent()).length > 0, 'error beside link');
  await page.locator('#create [name="link"]').fill('');
  await noRawIds();
  // A message belongs to its page: going to another clears it.
  expect((await page.locator('#message').textContent()) !== '', 'the refusal is said');
  await page.locator('#nav a[data-nav="browse"]').click();
  await page.waitForSelector('body[data-ready="browse"]');
  expect((await page.locator('#message').textContent()) === '', 'no message carried to Browse');
  // The page shown names the window and holds the focus.
  const [title, focused, heading] = await page.evaluate(() => [document.title, document.activeElement.id, document.getElementById('browse-title').textContent]);
  expect(focused === 'browse-title' && title === heading.trim() + ' · shelf', `title ${title}, focus on ${focused}`);
  await page.locator('#nav a[data-nav="library"]').click();
  await page.waitForSelector('body[data-ready="library"]');
});

// unavailable is a 503 the api answers when the database does not.
const unavailable = { status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '1' },
  body: JSON.stringify({ type: 'urn:shelf:problem:unavailable', title: 'Service Unavailable', status: 503,
    code: 'unavailable', detail: 'The database could not answer in time; try again.' }) };

await step('library: a Next the api refuses is said, and the pager stays on its page, counted as before', async () => {
  const pager = '[data-pager="my-library"]';
  const label = () => page.locator(`${pager} .page-number`).textContent();
  const first = await rows('my-library');
  expect(await label() === 'page 1 \u00b7 1\u20132', 'page 1 to begin with: ' + await label());
  // The next page's read answers 503, once.
  const nextPage = (url) => url.pathname.endsWith('/library') && url.searchParams.has('cursor');
  await page.route(nextPage, async (route) => {
    await route.fulfill(unavailable);
    await page.unroute(nextPage);
  });
  await refused(503, async () => {
    await page.locator(`${pager} [data-action="next"]`).click();
    await page.waitForFunction(() => document.getElementById('message').className === 'error');
  });
  expect(await label() === 'page 1 \u00b7 1\u20132' && (await rows('my-library')).join() === first.join(),
    'after the refusal: ' + await label());
  await page.locator(`${pager} [data-action="next"]`).click();
  await page.waitForFunction((p) => document.querySelector(`${p} .page-number`).textContent === 'page 2 \u00b7 3\u20133 of 3', pager);
  expect(await page.evaluate(() => location.hash.includes('page=2')), 'the address names page 2: ' + page.url());
  await page.locator(`${pager} [data-action="previous"]`).click();
  await page.waitForFunction((p) => document.querySelector(`${p} .page-number`).textContent === 'page 1 \u00b7 1\u20132', pager);
  expect((await rows('my-library')).join() === first.join(), 'Previous goes back to page 1');
});

await step('library: an order the api refuses is said, and the select keeps the order shown (Next reads on in it)', async () => {
  const pager = '[data-pager="my-library"]';
  const label = () => page.locator(`${pager} .page-number`).textContent();
  const first = await rows('my-library');
  expect(await page.locator('#library-order').inputValue() === 'newest', 'newest first to begin with');
  // The first page oldest first answers 503, once.
  const oldest = (url) => url.pathname.endsWith('/library') && url.searchParams.get('order') === 'oldest';
  await page.route(oldest, async (route) => {
    await route.fulfill(unavailable);
    await page.unroute(oldest);
  });
  await refused(503, async () => {
    await page.evaluate(() => { const m = document.getElementById('message'); m.textContent = ''; m.className = ''; });
    await page.locator('#library-order').selectOption('oldest');
    await page.waitForFunction(() => document.getElementById('message').className === 'error');
  });
  expect(await page.locator('#library-order').inputValue() === 'newest' && (await rows('my-library')).join() === first.join(),
    'after the refusal the select says ' + await page.locator('#library-order').inputValue() + ' over ' + (await rows('my-library')).join(' | '));
  // Next reads on in the order shown (its cursor is that order's).
  await page.evaluate(() => { const m = document.getElementById('message'); m.textContent = ''; m.className = ''; });
  await page.locator(`${pager} [data-action="next"]`).click();
  await page.waitForFunction((p) => document.querySelector(`${p} .page-number`).textContent === 'page 2 \u00b7 3\u20133 of 3', pager);
  expect(await page.locator('#message').getAttribute('class') !== 'error', 'Next is refused: ' + await page.locator('#message').textContent());
  await page.locator(`${pager} [data-action="previous"]`).click();
  await page.waitForFunction((p) => document.querySelector(`${p} .page-number`).textContent === 'page 1 \u00b7 1\u20132', pager);
  expect((await rows('my-library')).join() === first.join() && await label() === 'page 1 \u00b7 1\u20132', 'Previous goes back to page 1');
});

await step('a Log out the api refuses says so, and the tab stays logged in (the session still works)', async () => {
  const who = await page.locator('#who').textContent();
  const end = (url) => url.pathname === '/v1/sessions/current';
  await page.route(end, async (route) => {
    if (route.request().method() !== 'DELETE') return route.continue();
    await route.fulfill(unavailable);
    await page.unroute(end);
  });
  await refused(503, async () => {
    if (await page.locator('#logout').isHidden()) await page.locator('#menu').click();
    await page.locator('#logout').click();
    await page.waitForFunction(() => document.getElementById('message').className === 'error');
  });
  const said = await page.locator('#message').textContent();
  expect(said.startsWith('Not logged out:') && said.includes('press Log out again'), 'the refusal is said: ' + said);
  expect(await page.locator('#who').textContent() === who, 'still ' + who);
  expect(await page.evaluate(() => !!sessionStorage.getItem('shelf.token')), 'the token is kept');
});

await step('a reload whose session check the api refuses keeps the session, says so, and the next reload goes on', async () => {
  const who = await page.locator('#who').textContent();
  // The page's first read, who is logged in, answers 503, once.
  const me = (url) => url.pathname === '/v1/me';
  await page.route(me, async (route) => {
    await route.fulfill(unavailable);
    await page.unroute(me);
  });
  await refused(503, async () => {
    await page.reload();
    await page.waitForSelector('body[data-ready="auth"]');
  });
  const said = await page.locator('#message').textContent();
  expect((await page.locator('#message').getAttribute('class')) === 'error' && said.includes('reload the page'), 'the refusal is said: ' + said);
  expect(await page.evaluate(() => !!sessionStorage.getItem('shelf.token')), 'the token is kept');
  await page.reload();
  await page.waitForSelector('body[data-ready="library"]');
  expect(await page.locator('#who').textContent() === who, 'logged in again as before: ' + await page.locator('#who').textContent());
});

await step('a page still out at Log out shows nothing when it lands, nor says its refusal: the next user of the tab meets nothing of it', async () => {
  const pager = '[data-pager="my-library"]';
  const nextPage = (url) => url.pathname.endsWith('/library') && url.searchParams.has('cursor');
  // heldPast presses Next, holds its answer (the page the api gave, or a
  // 503) until the tab has logged out, then lets it land.
  async function heldPast(refusal) {
    await visit('#/library', 'library');
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    let asked;
    const out = new Promise((resolve) => { asked = resolve; });
    await page.route(nextPage, async (route) => {
      const answer = refusal ? null : await route.fetch();
      asked();
      await held;
      await route.fulfill(answer ? { response: answer } : unavailable).catch(() => {});
    });
    const land = async () => {
      release();
      await page.waitForTimeout(500);
    };
    try {
      await page.locator(`${pager} [data-action="next"]`).click();
      await out;
      await logout();
      if (refusal) await refused(503, land);
      else await land();
    } finally {
      release();
      await page.unroute(nextPage);
    }
    expect(await page.locator('#message').textContent() === 'Logged out.', 'the message line says: ' + await page.locator('#message').textContent());
    expect((await rows('my-library')).length === 0, 'the last session\'s page in the tab: ' + (await rows('my-library')).join(' | '));
    await login(alice, pw);
  }
  await heldPast(false);
  await heldPast(true);
});

await step('a change that gets no answer says so, and what to do: not the browser\'s "Failed to fetch"', async () => {
  await visit('#/library', 'library');
  const create = (url) => url.pathname === '/v1/content';
  await page.route(create, (route) => route.abort('connectionrefused'));
  let said = '';
  try {
    await refused('net::ERR_CONNECTION_REFUSED', async () => {
      said = await submit('create', { name: 'Lost on the way', visibility: 'private' }, true);
    });
  } finally {
    await page.unroute(create);
  }
  expect(said.includes('did not answer') && said.includes('may or may not have been done'), 'said: ' + said);
  expect(await page.locator('#create [name="name"]').inputValue() === 'Lost on the way', 'the form keeps what was typed');
  expect(!(await page.locator('#create button:not([type="button"])').isDisabled()), 'the form is busy still');
});

await step('a limit whose words say "later" is told when: its Retry-After, in minutes', async () => {
  await visit('#/account', 'account');
  // The account's address had its hour's mails: the change is held back
  // (429 too_many_mails), for half an hour.
  const patch = (url) => /^\/v1\/users\/[^/]+$/.test(url.pathname);
  await page.route(patch, async (route) => {
    if (route.request().method() !== 'PATCH') return route.continue();
    await route.fulfill({ status: 429, contentType: 'application/problem+json', headers: { 'Retry-After': '1800' },
      body: JSON.stringify({ type: 'urn:shelf:problem:too_many_mails', title: 'Too Many Requests', status: 429, code: 'too_many_mails',
        detail: 'Your current email address had as many mails as it may this hour, and an email change must notify it first, so nothing changed; try again later.' }) });
  });
  let said = '';
  try {
    await refused(429, async () => {
      said = await submit('profile', { email: 'elsewhere' + run + '@example.org', currentPassword: pw }, true);
    });
  } finally {
    await page.unroute(patch);
  }
  expect(said.includes('try again later') && said.includes('You may try again in 30 minutes'), 'said: ' + said);
  // The steps after begin in the library, newest first.
  await visit('#/library', 'library');
});

await step('edit an item: rename, visibility, description, link; it moves to the top', async () => {
  await page.locator('#my-library tbody tr', { hasText: 'Recipes' }).waitFor();
  await page.locator('#library-order').selectOption('oldest');
  await page.locator('#my-library a', { hasText: 'Notes' }).first().click();
  await page.waitForSelector('body[data-ready="item"]');
  expect(await page.locator('#edit [name="visibility"]').inputValue() === 'private', 'form filled');
  const msg = await submit('edit', { name: 'Notes, revised', visibility: 'public', description: 'what I learned', link: 'https://example.org/notes' });
  expect(msg.includes('at the top'), msg);
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#message').textContent()).includes('at the top'), 'the outcome is said on the page the edit went on to');
  await page.waitForFunction(() => document.querySelector('#my-library tbody tr').textContent.startsWith('Notes, revised'));
  expect(await page.locator('#my-library tbody tr').first().getAttribute('class') === 'moved', 'the moved item is marked');
  expect(await page.locator('#library-order').inputValue() === 'newest', 'newest first after an edit');
  const item = await api('GET', '/v1/content/' + await page.locator('#my-library tbody tr').first().getAttribute('data-id'));
  expect(item.visibility === 'public' && item.description === 'what I learned' && item.link === 'https://example.org/notes', JSON.stringify(item));
});

await step('groups: create (a bad name refused beside the field), add by username, capacity, roles, remove, page', async () => {
  await visit('#/groups', 'groups');
  expect((await rows('my-groups')).join('').includes('no group'), 'no groups yet');
  await refused(400, async () => {
    await submit('create-group', { name: 'x' }, true);
  });
  expect(await page.locator('#create-group [name="name"][aria-invalid="true"]').count() === 1, 'name marked invalid');
  await submit('create-group', { name: club, displayName: 'The Club', maxMembers: '3' });
  await page.waitForSelector('body[data-ready="group"]');
  expect((await page.locator('#group-capacity').textContent()) === '1 of 3 members', 'capacity of a new group');
  for (const u of [bob, carol]) {
    expect((await submit('add-member', { username: u, role: 'member' })).includes('Added ' + u), 'added ' + u);
  }
  await page.waitForFunction(() => document.getElementById('group-capacity').textContent === '3 of 3 members');
  await waitRows('group-members', 2);
  const [first, second] = await pageThrough('group-members');
  const all = first.concat(second).join(' ');
  expect([alice, bob, carol].every((u) => all.includes(u)), 'members by name: ' + all);
  await noRawIds();
  // A full group refuses a fourth.
  await refused(409, async () => {
    expect((await submit('add-member', { username: admin, role: 'member' }, true)).includes('maxMembers'), 'full');
  });
  // carol becomes a manager, then leaves through her removal.
  let carolRow = page.locator(`#group-members tr[data-member="${carol}"]`);
  if (await carolRow.count() === 0) await page.locator('[data-pager="group-members"] [data-action="next"]').click();
  carolRow = page.locator(`#group-members tr[data-member="${carol}"]`);
  await carolRow.waitFor();
  // Making her one asks alice's password first, under the table.
  await carolRow.locator('select').selectOption('manager');
  await page.locator('#grant-manager').waitFor();
  expect((await submit('grant-manager', { currentPassword: pw })).includes('now a manager'), 'role changed');
  expect(await page.locator('#grant-manager').isHidden(), 'the question went with the promotion');
  const carolId = (await api('GET', '/v1/users/by-username/' + carol)).id;
  const gid = (await api('GET', '/v1/groups/by-name/' + club)).id;
  await shot('group');
  expect((await confirm(`#group-members tr[data-member="${carol}"] button`, carol, { cancel: true })) === 'Nothing changed.', 'cancelled');
  expect((await rows('group-members')).join(' ').includes(carol), 'carol stays after a cancel');
  expect((await confirm(`#group-members tr[data-member="${carol}"] button`, 'Remove ' + carol)).includes('no longer in'), 'carol removed');
  // Her row went with its button: the focus stays in the members' table.
  const focusedIn = await page.evaluate(() => Boolean(document.activeElement && document.activeElement.closest('#group-members')));
  expect(focusedIn, 'the focus fell back to ' + await page.evaluate(() => document.activeElement && document.activeElement.tagName));
  await page.waitForFunction(() => document.getElementById('group-capacity').textContent === '2 of 3 members');
  const groupsOfCarol = await api('POST', '/v1/sessions', null, { login: carol, password: pw })
    .then((s) => api('GET', '/v1/users/' + carolId + '/groups', s.token));
  expect(!groupsOfCarol.items.some((m) => m.group.id === gid), 'carol is out');
  await visit('#/groups', 'groups');
  const mine = await rows('my-groups');
  expect(mine.length === 1 && mine[0].includes('The Club') && mine[0].includes('manager') && mine[0].includes('2 of 3'), 'my groups: ' + mine);
  await shot('groups');
});

await step('a group page shows none of the members of the group shown before, while its own are read', async () => {
  // A manager of two groups, the first with a member the second lacks.
  const owner = 'gm' + run;
  const other = 'gx' + run;
  for (const u of [owner, other]) await api('POST', '/v1/users', null, { username: u, email: u + '@example.org', password: pw });
  const s = await api('POST', '/v1/sessions', null, { login: owner, password: pw });
  const a = await api('POST', '/v1/groups', s.token, { name: 'ga' + run, maxMembers: 5 });
  const b = await api('POST', '/v1/groups', s.token, { name: 'gb' + run, maxMembers: 5 });
  await api('PUT', '/v1/groups/' + a.id + '/members/' + (await api('GET', '/v1/users/by-username/' + other)).id, s.token, { role: 'member' });
  await logout();
  await login(owner, pw);
  await visit('#/groups/' + a.name, 'group');
  await page.locator(`#group-members tr[data-member="${other}"]`).waitFor();
  // The second group's members are held until the page has been looked at.
  const membersOfB = (url) => url.pathname === '/v1/groups/' + b.id + '/members';
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route(membersOfB, async (route) => { await held; await route.continue().catch(() => {}); });
  try {
    await page.evaluate((n) => { location.hash = '#/groups/' + n; }, b.name);
    await page.waitForFunction((n) => document.getElementById('group-title').textContent.includes(n), b.name);
    expect(await page.locator(`#group-members tr[data-member="${other}"]`).count() === 0, 'the first group\'s member shows under ' + b.name);
  } finally {
    release();
    await page.unroute(membersOfB);
  }
  await page.locator(`#group-members tr[data-member="${owner}"]`).waitFor();
  expect(await page.locator(`#group-members tr[data-member="${other}"]`).count() === 0, 'a member of the first group listed in the second');
  await logout();
  await login(alice, pw);
});

await step('share an item by username and by group name; its members by name, paged', async () => {
  await visit('#/library', 'library');
  await page.locator('#library-order').selectOption('oldest');
  await page.locator('#my-library a', { hasText: 'Hello world' }).first().click();
  await page.waitForSelector('body[data-ready="item"]');
  expect((await submit('share', { kind: 'user', principal: bob, role: 'viewer' })).includes('with ' + bob), 'shared with bob');
  // Sharing with a group offers the caller's groups by name, each with its display name.
  // Sharing with a user offers the usernames starting with what is typed (the people search).
  expect(await page.locator('#share [name="principal"]').getAttribute('list') === 'people-names', 'people offered for a user');
  // All but the last letter: the run's part of the name (the keyspace
  // keeps every earlier run's bob, whose names begin alike).
  await page.locator('#share [name="principal"]').fill(bob.slice(0, -1));
  await page.locator('#people-names option[value="' + bob + '"]').waitFor({ state: 'attached' });
  // A name longer than any username is not looked up: the api would
  // refuse the prefix (2-32 characters; the walk fails on a refusal).
  await page.locator('#share [name="principal"]').fill(bob + 'x'.repeat(33));
  await page.waitForTimeout(500);
  await page.locator('#share [name="principal"]').fill('');
  await page.locator('#share [name="kind"]').selectOption('group');
  expect(await page.locator('#share [name="principal"]').getAttribute('list') === 'my-group-names', 'the groups offered for a group');
  await page.locator('#my-group-names option').first().waitFor({ state: 'attached' });
  const offered = await page.locator('#my-group-names option').evaluateAll((os) => os.map((o) => o.value + '|' + o.label));
  expect(offered.includes(club + '|The Club'), 'my groups offered: ' + offered);
  expect((await submit('share', { kind: 'group', principal: club, role: 'viewer' })).includes('with ' + club), 'shared with the club');
  await waitRows('item-members', 2);
  const [first, second] = await pageThrough('item-members');
  const all = first.concat(second).join(' ');
  expect(all.includes(alice) && all.includes(bob) && all.includes(club) && all.includes('group'), 'item members: ' + all);
  await noRawIds();
  await shot('item');
  // A name that finds nobody is named beside the field (the lookup's 404).
  await refused(404, async () => {
    await submit('share', { kind: 'group', principal: 'nosuch' + run, role: 'viewer' }, true);
  });
  expect((await page.locator('#share .field-error').textContent()).includes('No group'), 'no such group');
});

await step('a change whose read after it fails stays said, beside the failure and what to do', async () => {
  // On the item shared with bob: sharing it with him as viewer again
  // changes nothing, and the members' read after it answers 503, once.
  const members = (url) => /^\/v1\/content\/[^/]+\/members$/.test(url.pathname);
  await page.route(members, async (route) => {
    await route.fulfill(unavailable);
    await page.unroute(members);
  });
  let said = '';
  await refused(503, async () => {
    said = await submit('share', { kind: 'user', principal: bob, role: 'viewer' }, true);
  });
  expect(said.startsWith('Shared ') && said.includes(' with ' + bob + ' as viewer. Then reading the page failed: ')
    && said.endsWith('Reload the page to see it as it is now.'), 'said: ' + said);
});

await step('browse libraries by username and by group name', async () => {
  await visit('#/browse', 'browse');
  // The username is offered as its start is typed.
  await page.locator('#view [name="who"]').fill(bob.slice(0, -1).toUpperCase());
  await page.locator('#people-names option[value="' + bob + '"]').waitFor({ state: 'attached' });
  expect(await page.locator('#view [name="who"]').getAttribute('list') === 'people-names', 'people offered to browse');
  expect((await submit('view', { kind: 'user', who: bob })).includes('library of ' + bob), 'bob\'s library');
  // Alice is another logged-in user for bob's library: bob has the public item.
  await waitRows('other-library', 1);
  expect((await rows('other-library'))[0].startsWith('Hello world'), 'bob sees the shared item');
  await visit('#/browse/group/' + club, 'browse');
  await waitRows('other-library', 1);
  expect((await rows('other-library'))[0].startsWith('Hello world'), 'the club\'s library');
  await noRawIds();
  await shot('browse');
});

// token answers the session of the tab (the user logged in there).
const token = () => page.evaluate(() => sessionStorage.getItem('shelf.token'));

// openItem follows the link of an item named name in table and waits for
// its page; to anyone but its managers and admins the members list the
// page asks for is 403 (viewer), which shows the read view.
async function openItem(table, name, viewer) {
  const go = async () => {
    await page.locator(`#${table} a`, { hasText: name }).first().click();
    await page.waitForFunction((n) => document.body.dataset.ready === 'item' && document.getElementById('item-title').textContent === n, name);
  };
  if (viewer) await refused(403, go);
  else await go();
}

// readOnly checks the item page shows no Edit, Share, members or Delete,
// and no refusal.
async function readOnly() {
  for (const sel of ['#edit', '#share', '#item-members', '[data-pager="item-members"]', '#delete-item']) {
    expect(!(await page.locator(sel).isVisible()), sel + ' is shown to a viewer');
  }
  const said = await page.locator('#message').textContent();
  expect(said === '', 'a message on a viewer\'s item: ' + said);
}

await step('a visitor: a shared link to a public item or a library opens without an account; an item for logged-in users says to log in, with nothing of the item before', async () => {
  const aliceId = await api('GET', '/v1/users/by-username/' + alice).then((u) => u.id);
  const items = (await api('GET', `/v1/users/${aliceId}/library?limit=100`, await token())).items;
  const pub = items.find((e) => e.visibility === 'public');
  const members = items.find((e) => e.visibility === 'loggedin');
  expect(pub && members, 'alice has a public item and one for logged-in users');
  const was = page;
  page = await context.newPage(); // a tab of its own: no session
  try {
    await visit('#/item/' + pub.id, 'item');
    expect((await page.locator('#item-title').textContent()) === pub.name, 'the public item is shown');
    expect(await page.locator('#item-visitor').isVisible(), 'the visitor is told how to see more');
    expect(!(await page.locator('#item-back').isVisible()) && !(await page.locator('#edit').isVisible()), 'no library of their own, nothing to manage');
    expect((await page.locator('#who').textContent()) === 'not logged in', 'not logged in');
    await visit('#/browse/user/' + alice, 'browse');
    await page.waitForFunction(() => document.querySelector('#other-library tbody tr'));
    const shown = await rows('other-library');
    expect(shown.length > 0 && shown.every((r) => r.includes('public')), 'a visitor sees the public items only: ' + shown.join(' | '));
    await page.locator('#other-library a', { hasText: pub.name }).first().click();
    await page.waitForFunction((n) => document.body.dataset.ready === 'item' && document.getElementById('item-title').textContent === n, pub.name);
    await refused(404, async () => {
      await page.evaluate((id) => { location.hash = '#/item/' + id; }, members.id);
      await page.waitForFunction(() => document.getElementById('message').textContent !== '');
    });
    const said = await page.locator('#message').textContent();
    expect(said.includes('log in'), 'says to log in: ' + said);
    expect((await page.locator('#item-title').textContent()) !== pub.name && !(await page.locator('#item-view').isVisible()), 'nothing of the item before stays');
    // Logging in from there comes back to the item, which is then shown.
    await page.locator('#item-visitor-login').click();
    await page.waitForSelector('body[data-ready="auth"]');
    await refused(403, async () => { // bob does not manage it: its members list is refused, the read view shown
      await submit('login', { login: bob, password: pw });
      await page.waitForFunction((n) => document.body.dataset.ready === 'item' && document.getElementById('item-title').textContent === n, members.name);
    });
  } finally {
    await page.close();
    page = was;
  }
});

await step('a viewer: the item read-only (no forms, members or refusal), its link a link; leave it, confirmed; items open from Browse and a group\'s library', async () => {
  const aliceToken = await token();
  const bobId = (await api('GET', '/v1/users/by-username/' + bob, aliceToken)).id;
  const url = 'https://example.org/reading?list=1';
  const list = await api('POST', '/v1/content', aliceToken, { name: 'Reading list', visibility: 'private', description: 'books to read', link: url });
  await api('PUT', `/v1/content/${list.id}/members/${bobId}`, aliceToken, { role: 'viewer' });
  await logout();
  await login(bob, pw);
  await openItem('my-library', 'Reading list', true);
  await readOnly();
  const a = page.locator('#item-link a');
  expect((await a.getAttribute('href')) === url && (await a.textContent()) === url && (await a.getAttribute('rel')).includes('noopener'), 'the link is a link');
  expect((await page.locator('#item-description').textContent()) === 'books to read', 'the description');
  expect((await page.locator('#item-visibility').textContent()) === 'private', 'the visibility');
  expect((await page.locator('#item-creator').textContent()) === alice, 'made by ' + alice);
  expect(await page.locator('#leave-item').isVisible(), 'an item in my library can be taken out');
  await noRawIds();
  await shot('item-viewer');
  expect((await confirm('#leave-item', 'Take Reading list out of your library', { cancel: true })) === 'Nothing changed.', 'cancelled');
  expect(await page.locator('#leave-item').isVisible(), 'still mine after a cancel');
  expect((await confirm('#leave-item', 'You can no longer open it')).includes('Took Reading list out of your library'), 'left');
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#message').textContent()).includes('Took Reading list'), 'said on the library');
  const mine = (await rows('my-library')).join(' | ');
  expect(!mine.includes('Reading list') && mine.includes('Hello world'), 'bob\'s library: ' + mine);
  const gone = await fetch(base + '/v1/content/' + list.id, { headers: { Authorization: 'Bearer ' + await token() } });
  expect(gone.status === 404, 'bob may no longer open it: ' + gone.status);
  // Another user's public item, from Browse: read-only, not in my library.
  await visit('#/browse/user/' + alice, 'browse');
  await openItem('other-library', 'Notes, revised', true);
  await readOnly();
  expect(await page.locator('#leave-item').isHidden(), 'nothing to take out of my library');
  expect((await page.locator('#item-link a').getAttribute('href')) === 'https://example.org/notes', 'its link');
  // From a group's library.
  await visit('#/browse/group/' + club, 'browse');
  await waitRows('other-library', 1);
  await openItem('other-library', 'Hello world', true);
  await readOnly();
  expect(await page.locator('#leave-item').isVisible(), 'shared with bob himself too: he may take it out');
  await logout();
  await login(alice, pw);
});

await step('a manager: a new item is private unless chosen and a double press creates it once; Edit, Share, members and Delete; delete an item, confirmed; the last manager may not leave it', async () => {
  await page.evaluate(() => { const m = document.getElementById('message'); m.textContent = ''; m.className = ''; });
  await page.locator('#create [name="name"]').fill('Old draft');
  await page.locator('#create button:not([type="button"])').dblclick();
  expect((await message(false)).includes('Created Old draft'), 'created');
  const aliceId = await api('GET', '/v1/users/by-username/' + alice).then((u) => u.id);
  const drafts = (await api('GET', `/v1/users/${aliceId}/library?limit=100`, await token())).items.filter((e) => e.name === 'Old draft');
  expect(drafts.length === 1, `a double press created ${drafts.length} items`);
  expect(drafts[0].visibility === 'private', 'a new item is ' + drafts[0].visibility + ' unless chosen');
  await openItem('my-library', 'Old draft', false);
  for (const sel of ['#edit', '#share', '#item-members', '#delete-item', '#last-manager']) {
    expect(await page.locator(sel).isVisible(), sel + ' is not shown to a manager');
  }
  // The last manager is offered no way out but deleting or handing on: no
  // button to take it out, no Leave in the members list; the count says why.
  expect(await page.locator('#leave-item').isHidden(), 'no leave button for the last manager');
  expect(await page.locator('#item-members button', { hasText: 'Leave' }).count() === 0, 'no Leave in the members list');
  expect((await page.locator('#item-members-caption').textContent()).includes('1 member, 1 manager'), 'the counts: ' + await page.locator('#item-members-caption').textContent());
  // Made a manager too, bob frees alice to leave.
  const bobId = await api('GET', '/v1/users/by-username/' + bob).then((u) => u.id);
  expect((await submit('share', { kind: 'user', principal: bob, role: 'manager' })).includes('with ' + bob), 'shared with bob as a manager');
  await page.waitForFunction(() => document.getElementById('item-members-caption').textContent.includes('2 members, 2 managers'));
  expect(await page.locator('#leave-item').isVisible() && await page.locator('#last-manager').isHidden(), 'alice may leave now');
  await api('DELETE', `/v1/content/${drafts[0].id}/members/${bobId}`, await token());
  expect((await confirm('#delete-item', 'Delete Old draft for good', { cancel: true })) === 'Nothing changed.', 'cancelled');
  expect((await confirm('#delete-item', 'every library')).includes('Deleted Old draft'), 'deleted');
  await page.waitForSelector('body[data-ready="library"]');
  const mine = (await rows('my-library')).join(' | ');
  expect(!mine.includes('Old draft'), 'my library: ' + mine);
  const id = await api('GET', '/v1/users/by-username/' + alice).then((u) => u.id);
  const left = await api('GET', `/v1/users/${id}/library?limit=100`, await token());
  expect(!left.items.some((e) => e.name === 'Old draft'), 'gone from the library');
});

await step('account: sessions paged, sign one out, sign out everywhere else, profile, password', async () => {
  for (let i = 0; i < 2; i++) await api('POST', '/v1/sessions', null, { login: alice, password: pw });
  await visit('#/account', 'account');
  await waitRows('sessions', 2);
  const [first, second] = await pageThrough('sessions');
  expect(first.concat(second).filter((r) => r.includes('this session')).length === 1, 'the current session is marked');
  await noRawIds();
  const other = page.locator('#sessions tbody tr:not(.current)').first();
  const id = await other.getAttribute('data-session');
  expect((await confirm(`#sessions tr[data-session="${id}"] button`, 'Sign out the session')).includes('signed out'), 'one signed out');
  await page.waitForFunction((sid) => !document.querySelector(`#sessions tr[data-session="${sid}"]`), id);
  expect((await confirm('#sign-out-others', 'every other session')).includes('everywhere else'), 'others signed out');
  await waitRows('sessions', 1);
  expect((await rows('sessions'))[0].includes('this session'), 'only this one is left');
  expect((await submit('profile', { displayName: 'Alice A.' })).includes('Saved'), 'profile saved');
  expect((await page.locator('#who').textContent()).includes('Alice A.'), 'display name shown');
  await refused(401, async () => {
    await submit('password', { currentPassword: 'wrong password', newPassword: newPw }, true);
  });
  await refused(400, async () => {
    await submit('password', { currentPassword: pw, newPassword: alice + '2024' }, true);
  });
  expect((await page.locator('#password .field-error').textContent()).includes('too close to the username'), 'the reason beside the new password');
  expect((await submit('password', { currentPassword: pw, newPassword: newPw })).includes('Password changed'), 'password changed');
  await logout();
  await login(alice, newPw);
});

await step('a session ended elsewhere: the next request, or the next visit, logs the tab out and says why on the login page', async () => {
  const said = async () => {
    const text = await page.locator('#message').textContent();
    expect(text.includes('session has ended'), 'says why: ' + text);
    expect((await page.locator('#who').textContent()) === 'not logged in', 'the tab is logged out');
    expect((await token()) === null, 'the token is gone');
  };
  await api('DELETE', '/v1/sessions/current', await token());
  await refused(401, async () => {
    await page.locator('#create [name="name"]').fill('After the end');
    await page.locator('#create button:not([type="button"])').click();
    await page.waitForSelector('body[data-ready="auth"]');
  });
  await said();
  await login(alice, newPw);
  await api('DELETE', '/v1/sessions/current', await token());
  await refused(401, () => visit('#/account', 'auth'));
  await said();
  await login(alice, newPw);
});

await step('moderation: suspend with and without an end, page, history and audit, unsuspend', async () => {
  await logout();
  await login(admin, pw);
  await visit('#/moderation', 'moderation');
  const tomorrow = new Date(Date.now() + 86400000).toISOString().slice(0, 16);
  expect((await submit('suspend', { username: bob, reason: 'spam', until: tomorrow })).includes('until'), 'bob suspended until tomorrow');
  // Bob, logging in meanwhile in a tab of his own, is told until when,
  // and why.
  const adminTab = page;
  page = await context.newPage();
  try {
    await visit('#/library', 'auth');
    await refused(403, async () => {
      const said = await submit('login', { login: bob, password: pw }, true);
      expect(said.includes('suspended since') && said.includes('until ' + await page.evaluate((t) => new Date(t).toLocaleString(), tomorrow))
        && said.includes('The reason given: spam.'), 'bob is told since, until and why: ' + said);
    });
  } finally {
    await page.close();
    page = adminTab;
  }
  // A preset length: carol for 7 days (the time field names the zone it is in).
  expect((await page.locator('#suspend-zone').textContent()).includes('UTC'), 'the zone of the time field');
  const sent = Date.now();
  expect((await submit('suspend', { username: carol, reason: 'rudeness', for: '7' })).includes('Suspended ' + carol + ' until'), 'carol suspended for 7 days');
  const carolId = await api('GET', '/v1/users/by-username/' + carol).then((u) => u.id);
  const until = Date.parse((await api('GET', `/v1/users/${carolId}/suspension`, await token())).until);
  expect(Math.abs(until - sent - 7 * 86400000) < 120000, 'carol until ' + new Date(until).toISOString());
  expect((await submit('suspend', { username: alice, reason: 'testing' })).includes('Suspended ' + alice), 'alice suspended');
  await page.locator(`#suspended tr[data-user="${alice}"]`).waitFor();
  await pageThrough('suspended');
  await page.locator('[data-pager="suspended"] [data-action="next"]').click();
  await page.locator(`#suspended tr[data-user="${bob}"]`).waitFor();
  const bobRow = await page.locator(`#suspended tr[data-user="${bob}"]`).textContent();
  expect(bobRow.includes('spam') && bobRow.includes(admin) && !bobRow.includes('until lifted'), 'bob\'s row: ' + bobRow);
  await page.locator(`#suspended tr[data-user="${bob}"] td:first-child a`).click();
  await page.waitForSelector('body[data-ready="moderation"]');
  await waitRows('history', 1);
  expect((await rows('history'))[0].startsWith('suspended'), 'history: ' + await rows('history'));
  expect((await confirm(`#suspended tr[data-user="${bob}"] button`, 'Lift the suspension of ' + bob)).includes('no longer suspended'), 'bob unsuspended');
  await waitRows('history', 2);
  expect((await submit('suspend', { username: bob, reason: 'again' })).includes('Suspended ' + bob), 'bob suspended again');
  await visit('#/moderation/' + bob, 'moderation');
  // The user's view, far down the page, has the focus and is in the window.
  const [focusedOn, top, height, title] = await page.evaluate(() => [document.activeElement.id,
    document.getElementById('mod-user-title').getBoundingClientRect().top, window.innerHeight, document.title]);
  expect(focusedOn === 'mod-user-title' && top >= 0 && top < height && title.startsWith(bob), `focus on ${focusedOn}, ${top} px down of ${height}, title ${title}`);
  await waitRows('history', 2);
  const [first, second] = await pageThrough('history');
  expect(first[0].startsWith('suspended') && first[0].includes('again') && first[1].startsWith('unsuspended') &&
    second[0].startsWith('suspended') && first.concat(second).every((r) => r.includes(admin)), 'history: ' + first.concat(second).join(' | '));
  // The audit of admin actions beside it (S6): the same three, by
  // the admin, from an address, paged.
  await waitRows('audit', 2);
  const [auditFirst, auditSecond] = await pageThrough('audit');
  const audited = auditFirst.concat(auditSecond);
  expect(auditFirst[0].startsWith('suspended') && auditFirst[0].includes('again') && auditFirst[1].startsWith('unsuspended') &&
    auditSecond[0].startsWith('suspended') && audited.every((r) => r.includes(admin) && !r.includes('unknown')), 'audit: ' + audited.join(' | '));
  await noRawIds();
  await shot('moderation');
  for (const u of [bob, carol, alice]) {
    expect((await confirm(`#suspended tr[data-user="${u}"] button`, u)).includes('no longer suspended'), u + ' unsuspended');
  }
});

await step('an Unsuspend another admin beat: said as done, and the row goes (a Remove or Sign out likewise)', async () => {
  await visit('#/moderation', 'moderation');
  expect((await submit('suspend', { username: carol, reason: 'twice' })).includes('Suspended ' + carol), 'carol suspended');
  await page.locator(`#suspended tr[data-user="${carol}"]`).waitFor();
  // Another admin lifts it while the row is shown here.
  const carolId = (await api('GET', '/v1/users/by-username/' + carol)).id;
  await api('DELETE', `/v1/users/${carolId}/suspension`, await token());
  let said = '';
  await refused(404, async () => {
    said = await confirm(`#suspended tr[data-user="${carol}"] button`, carol);
  });
  expect(said.includes('no longer suspended (already done)'), 'said: ' + said);
  await page.waitForFunction((u) => !document.querySelector(`#suspended tr[data-user="${u}"]`), carol);
});

await step('the audit of every account: its own page from the nav, each entry naming its account (a link), filtered by action and by who, the filter in the address; an unknown name refused beside its field', async () => {
  await visit('#/moderation', 'moderation');
  await page.locator('#nav-audit').click();
  await page.waitForSelector('body[data-ready="audit"]');
  expect((await page.title()).startsWith('Audit'), 'the title: ' + await page.title());
  await page.waitForSelector('#all-audit tbody tr:not(.empty)');
  const whats = await page.locator('#all-audit tbody td:nth-child(3)').allTextContents();
  expect(whats[0] === 'unsuspended', 'newest first, the last unsuspension: ' + whats.join(', '));
  const accounts = await page.locator('#all-audit tbody td:nth-child(2)').allTextContents();
  expect([alice, bob, carol].includes(accounts[0]), 'the account by name: ' + accounts[0]);
  expect(await page.locator('#all-audit tbody td:nth-child(2) a').count() > 0, 'each account a link to its moderation view');
  await pageThrough('all-audit');

  await page.locator('#audit-filter [name=action]').selectOption('suspended');
  await page.locator('#audit-filter [name=by]').fill(admin);
  await page.locator('#audit-filter button').click();
  await page.waitForFunction(() => location.hash.includes('action=suspended') && document.body.dataset.ready === 'audit');
  await page.waitForSelector('#all-audit tbody tr:not(.empty)');
  const filtered = await page.locator('#all-audit tbody td:nth-child(3)').allTextContents();
  expect(filtered.length > 0 && filtered.every((w) => w === 'suspended'), 'only suspensions: ' + filtered.join(', '));
  expect((await page.locator('#all-audit-caption').textContent()).includes('by ' + admin), 'the caption says the filter');
  await shot('audit');
  // The filter is in the address: a reload shows the same.
  await page.reload();
  await page.waitForSelector('body[data-ready="audit"]');
  expect(await page.locator('#audit-filter [name=action]').inputValue() === 'suspended', 'the filter survives a reload');
  await refused(404, async () => {
    await page.locator('#audit-filter [name=by]').fill('nobody' + run);
    await page.locator('#audit-filter button').click();
    await page.waitForSelector('#audit-filter .field-error');
  });
  expect((await page.locator('#audit-filter .field-error').textContent()).includes('No user is named'), 'an unknown name beside its field');
});

await step('a moderator: from a user to their suspension, history and library, and back; unsuspend there, confirmed', async () => {
  await visit('#/moderation', 'moderation');
  expect((await submit('suspend', { username: carol, reason: 'flooding' })).includes('Suspended ' + carol), 'carol suspended');
  const carolRow = page.locator(`#suspended tr[data-user="${carol}"]`);
  await carolRow.locator('td:first-child a').click();
  await page.waitForFunction((u) => document.body.dataset.ready === 'moderation' && document.getElementById('mod-user-title').textContent.startsWith(u), carol);
  const status = await page.locator('#mod-user-status').textContent();
  expect(status.startsWith('Suspended since') && status.includes('flooding') && status.includes(admin) && status.includes('until lifted'), 'status: ' + status);
  // Suspended, unsuspended (the walk before), suspended again: two a page.
  await waitRows('history', 2);
  expect((await rows('history'))[0].startsWith('suspended') && (await rows('history'))[0].includes('flooding'), 'history: ' + await rows('history'));
  // Their library, and from there back to their suspension.
  await page.locator('#mod-user-library').click();
  await page.waitForSelector('body[data-ready="browse"]');
  expect((await page.locator('#other-library-caption').textContent()).startsWith(carol), 'carol\'s library');
  expect(await page.locator('#browse-moderation').isVisible(), 'an admin goes on to the suspension');
  await page.locator('#browse-moderation-link').click();
  await page.waitForSelector('body[data-ready="moderation"]');
  expect((await page.locator('#mod-user-title').textContent()).startsWith(carol), 'back at carol');
  // The suspended list goes to a library too.
  await page.locator(`#suspended tr[data-user="${carol}"] a`, { hasText: 'Library' }).click();
  await page.waitForSelector('body[data-ready="browse"]');
  expect((await page.locator('#other-library-caption').textContent()).startsWith(carol), 'carol\'s library from the list');
  await visit('#/moderation/' + carol, 'moderation');
  await shot('moderation-user');
  expect((await confirm('#mod-unsuspend', 'Lift the suspension of ' + carol, { cancel: true })) === 'Nothing changed.', 'cancelled');
  expect((await confirm('#mod-unsuspend', 'Lift the suspension of ' + carol)).includes('no longer suspended'), 'unsuspended');
  expect((await page.locator('#mod-user-status').textContent()) === carol + ' is not suspended.', 'the status follows');
  expect(await page.locator('#mod-unsuspend').isHidden(), 'nothing to lift');
  await waitRows('history', 2);
  // Another user's page shows no moderation link.
  await logout();
  await login(bob, pw);
  await visit('#/browse/user/' + carol, 'browse');
  expect(await page.locator('#browse-moderation').isHidden(), 'no moderation link for bob');
  await logout();
});

await step('at 375 px, as a viewer, a manager and a moderator: no page wider than the window, long display names wrap, field errors stay under their field', async () => {
  await page.setViewportSize(phone375);
  try {
    // A viewer with a display name of one long word.
    await login(bob, pw);
    const bobId = (await api('GET', '/v1/users/by-username/' + bob)).id;
    await api('PATCH', '/v1/users/' + bobId, await token(), { displayName: 'Bartholomew'.repeat(5) });
    await visit('#/library', 'library');
    expect((await page.locator('#who').textContent()).includes('Bartholomew'), 'the long name is shown');
    // The pages' links fold behind Menu; going to a page folds them again.
    expect(await page.locator('#nav').isHidden(), 'the pages folded on a phone');
    await page.locator('#menu').click();
    expect(await page.locator('#menu').getAttribute('aria-expanded') === 'true', 'Menu says it is open');
    await page.locator('#nav a[data-nav="groups"]').click();
    await page.waitForSelector('body[data-ready="groups"]');
    expect(await page.locator('#nav').isHidden(), 'the pages folded again after going to one');
    await noOverflow();
    const aliceId = (await api('GET', '/v1/users/by-username/' + alice)).id;
    const hello = (await api('GET', `/v1/users/${aliceId}/library?limit=100`, await token())).items.find((e) => e.name === 'Hello world');
    await refused(403, () => visit('#/item/' + hello.id, 'item'));
    await readOnly();
    await noOverflow();
    await shot('phone-item-viewer');
    await visit('#/browse/user/' + alice, 'browse');
    await page.locator('#other-library a', { hasText: 'Notes, revised' }).waitFor();
    await shot('phone-browse');
    await api('PATCH', '/v1/users/' + bobId, await token(), { displayName: bob });
    await logout();
    // A field error on signup stays inside its field's label.
    await refused(400, async () => {
      await submit('signup', { username: 'zed' + run, email: `zed${run}@example.org`, password: 'password1' }, true);
    });
    expect(await page.locator('#signup label:has([name="password"]) .field-error').count() === 1, 'the error under its field');
    const [form, error] = await Promise.all([page.locator('#signup').boundingBox(), page.locator('#signup .field-error').boundingBox()]);
    expect(error.x >= form.x && error.x + error.width <= form.x + form.width, 'the error inside the form');
    await noOverflow();
    await shot('phone-signup');
    // A manager: an item with its members, a group, the account.
    await login(alice, newPw);
    await visit('#/item/' + hello.id, 'item');
    await waitRows('item-members', 2);
    await shot('phone-item');
    await visit('#/groups/' + club, 'group');
    await waitRows('group-members', 2);
    await shot('phone-group');
    await visit('#/groups', 'groups');
    await visit('#/library', 'library');
    await page.locator('#my-library tbody tr:not(.empty)').first().waitFor();
    await shot('phone-library');
    await visit('#/account', 'account');
    await page.locator('#sessions tbody tr').first().waitFor();
    await shot('phone-account');
    await logout();
    // A moderator: the suspended list, a user's history and audit.
    await login(admin, pw);
    await visit('#/moderation', 'moderation');
    expect((await submit('suspend', { username: carol, reason: 'a reason long enough to make its column wide, and then some more words' })).includes('Suspended'), 'suspended');
    await page.locator(`#suspended tr[data-user="${carol}"]`).waitFor();
    await noOverflow();
    await shot('phone-moderation');
    await visit('#/moderation/' + carol, 'moderation');
    await waitRows('history', 2);
    await shot('phone-moderation-user');
    expect((await confirm(`#suspended tr[data-user="${carol}"] button`, carol)).includes('no longer suspended'), 'unsuspended');
    await noOverflow();
  } finally {
    await page.setViewportSize(desktop);
  }
});

// open loads a mailed link afresh and waits until its page has shown;
// by then the link's token is out of the address bar.
async function open(link, section) {
  await page.goto('about:blank');
  await page.goto(link);
  await page.waitForSelector(`body[data-ready="${section}"]`);
  expect(!page.url().includes('token='), 'the address bar still holds the token: ' + page.url());
}

// works answers whether a session token is let in (GET /v1/me).
async function works(token) {
  return (await fetch(base + '/v1/me', { headers: { Authorization: 'Bearer ' + token } })).status === 200;
}

await step('email: a new account is unverified; mail again, open the link: verified, once; a new email waits for its own link', async () => {
  await logout();
  await login(alice, newPw);
  await visit('#/account', 'account');
  expect((await page.locator('#email-status').textContent()).includes(aliceMail + ' is not verified'), 'unverified after signup');
  expect(mails(aliceMail, 'verify').length === 1, 'the signup mailed a link');
  expect((await click('#resend-verification')).includes('on its way to ' + aliceMail), 'mailed again');
  const link = await mailed(aliceMail, 'verify', 1);
  // The api unable to answer the first time (503, "try again"): the
  // address bar no longer holds the token, so the page offers the link
  // again itself, and that verifies.
  await page.route('**/v1/email-verifications/confirm', (route) => route.fulfill({ status: 503, contentType: 'application/problem+json',
    headers: { 'Retry-After': '1' }, body: JSON.stringify({ code: 'unavailable', detail: 'The database could not answer in time; try again.' }) }), { times: 1 });
  await refused(503, async () => {
    await open(link, 'verify');
  });
  expect(await page.locator('#verify-retry').isVisible(), 'the link is offered again');
  expect(await page.locator('#verify-again').isHidden(), 'no new mail offered for a refusal not the link\'s');
  await page.locator('#verify-retry').click();
  await page.waitForFunction(() => document.getElementById('verify-result').className === 'ok');
  expect((await page.locator('#verify-result').textContent()).includes('is verified'), 'the link verifies');
  expect(await page.locator('#verify-retry').isHidden(), 'nothing more to try');
  expect((await message(false)).includes('verified'), 'said so');
  expect(await page.locator('#verify-again').isHidden(), 'no new mail offered');
  await visit('#/account', 'account');
  expect((await page.locator('#email-status').textContent()).includes(aliceMail + ' is verified'), 'verified on the account page');
  expect(await page.locator('#resend-verification').isHidden(), 'nothing to mail again');
  // The same link a second time is refused, and says why.
  await refused(400, async () => {
    await open(link, 'verify');
  });
  expect((await page.locator('#verify-result').textContent()).includes('used already'), 'a used link says so');
  expect(await page.locator('#verify-again').isVisible(), 'and offers a new mail');
  await message(true);
  await refused(400, async () => {
    await open(base + '/#/verify?token=made-up', 'verify');
  });
  expect((await page.locator('#verify-result').textContent()).includes('not one shelf mailed'), 'a made-up link says so');
  // Changing the email takes the current password; the new address is
  // only asked for and waits for its link; the old one gets a notice.
  await visit('#/account', 'account');
  await submit('profile', { email: aliceHome }, true);
  expect(await page.locator('#profile [name="currentPassword"][aria-invalid="true"]').count() === 1, 'the current password asked for');
  expect((await submit('profile', { email: aliceHome, currentPassword: newPw })).includes('confirmation mail is on its way to ' + aliceHome), 'a mail for the new email');
  expect((await page.locator('#email-status').textContent()).includes(aliceMail + ' is verified. You asked to change it to ' + aliceHome), 'the old email kept, the new one pending');
  expect(mails(aliceMail, 'revert-email').length === 1, 'the old address got a notice with a link to undo it');
  await open(await mailed(aliceHome, 'verify', 0), 'verify');
  expect((await page.locator('#verify-result').textContent()).includes('is verified'), 'the new email verified');
  // A change asked for and then cancelled: Cancel takes the current
  // password as the change did; then nothing waits, and the link mailed
  // to the cancelled address is refused.
  const aliceOops = `${alice}.oops@example.org`;
  await visit('#/account', 'account');
  expect((await submit('profile', { email: aliceOops, currentPassword: newPw })).includes('your account keeps ' + aliceHome), 'asked for');
  expect(await page.locator('#cancel-email-change').isVisible(), 'a pending change can be cancelled');
  await page.locator('#cancel-email-change').click();
  await page.locator('#profile [name="currentPassword"][aria-invalid="true"]').waitFor();
  await page.locator('#profile [name="currentPassword"]').fill(newPw);
  expect((await click('#cancel-email-change')).includes('Cancelled the change to ' + aliceOops), 'cancelled');
  expect(!(await page.locator('#email-status').textContent()).includes(aliceOops), 'nothing pending after the cancel');
  expect(await page.locator('#cancel-email-change').isHidden(), 'nothing left to cancel');
  await refused(400, async () => {
    await open(await mailed(aliceOops, 'verify', 0), 'verify');
  });
  expect(!(await page.locator('#verify-result').textContent()).includes('is verified'), 'the cancelled address is not verified: ' + await page.locator('#verify-result').textContent());
  // A change the owner did not make: the notice's link says what it will
  // do and does nothing on load (a mail scanner fetching it, or an owner
  // reading it, changes nothing); its button undoes the change and signs
  // out every session, this one too; the reset link mailed then sets a
  // password and logs in.
  const aliceAway = `${alice}.away@example.org`;
  await visit('#/account', 'account');
  expect((await submit('profile', { email: aliceAway, currentPassword: newPw })).includes('your account keeps ' + aliceHome), 'only asked for');
  const elsewhere = (await api('POST', '/v1/sessions', null, { login: alice, password: newPw })).token;
  const resets = mails(aliceHome, 'reset').length;
  await open(await mailed(aliceHome, 'revert-email', 0), 'revert-email');
  expect(await page.locator('#revert-email-go').isVisible(), 'a button to undo the change');
  expect((await page.locator('#revert-email-ask').textContent()).includes('signs out every session'), 'the page says what it does');
  expect(await works(elsewhere), 'loading the link undid nothing: a session from before still works');
  expect((await page.locator('#who').textContent()).includes(alice), 'this tab is still logged in');
  await noOverflow();
  await saveShot(page, 'revert-email', false);
  // The request is held until the busy button has been seen.
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route('**/v1/email-changes/revert', async (route) => {
    await held;
    await route.continue();
  });
  await page.locator('#revert-email-go').click();
  await page.locator('#revert-email-go[aria-busy="true"]').waitFor();
  expect(await page.locator('#revert-email-go').isDisabled(), 'the button is disabled while the revert runs');
  release();
  await page.waitForFunction(() => document.getElementById('revert-email-result').className === 'ok');
  await page.unroute('**/v1/email-changes/revert');
  expect((await page.locator('#revert-email-result').textContent()).includes('is undone'), 'the button undoes the change');
  expect(await page.evaluate(() => document.activeElement.id) === 'revert-email-result', 'the outcome has the focus');
  expect(await page.locator('#revert-email-go').isHidden(), 'nothing more to press');
  expect(await page.locator('#revert-email-next').isVisible(), 'and says to choose a new password');
  expect((await page.locator('#who').textContent()) === 'not logged in', 'this session is signed out too');
  expect(!(await works(elsewhere)), 'every other session is signed out');
  // The password whoever changed the email knew opens nothing now: the
  // login form says where the way back in is.
  await visit('#/library', 'auth');
  expect(await page.locator('#login-recovered').isHidden(), 'no recovery hint before a refusal');
  await refused(403, async () => {
    await submit('login', { login: alice, password: newPw }, true);
  });
  expect(await page.locator('#login-recovered').isVisible(), 'the refusal points to the reset link');
  await open(await mailed(aliceHome, 'reset', resets), 'reset');
  expect((await submit('reset', { newPassword: recoveredPw })).includes('you are logged in as ' + alice), 'the reset logs in');
  await page.waitForSelector('body[data-ready="library"]');
  await visit('#/account', 'account');
  expect(!(await page.locator('#email-status').textContent()).includes(aliceAway), 'nothing pending after the undo');
  // A second session, from a phone, for the page to show.
  await api('POST', '/v1/sessions', null, { login: alice, password: recoveredPw }, { 'User-Agent': phone });
  await visit('#/account', 'account');
  await waitRows('sessions', 2);
  // Sessions as people tell their devices apart, this one first although the phone's is newer.
  const listed = await rows('sessions');
  expect(listed[0].includes('this session') && listed[1].includes('Safari on iOS') && listed[1].includes('active just now'), 'sessions: ' + listed.join(' | '));
  expect((await page.locator('#sessions tbody tr:nth-child(2) span[title]').getAttribute('title')) === phone, 'the User-Agent itself in the title');
  expect((await page.locator('#email-status').textContent()).includes(aliceHome + ' is verified'), 'verified on the account page');
  await noRawIds();
  await shot('account');
});

await step('forgot password: one answer for any address; the mailed link sets a new password, once; the old one is refused', async () => {
  await logout();
  await page.locator('#forgot-link').click();
  await page.waitForSelector('body[data-ready="forgot"]');
  await refused(400, async () => {
    await submit('forgot', { email: 'not an address' }, true);
  });
  expect(await page.locator('#forgot [name="email"][aria-invalid="true"]').count() === 1, 'email marked invalid');
  const unknown = await submit('forgot', { email: `nobody${run}@example.org` });
  const seen = mails(aliceHome, 'reset').length;
  const known = await submit('forgot', { email: aliceHome });
  expect(known === unknown && known.includes('If an account has this address'), `answers: ${unknown} / ${known}`);
  const link = await mailed(aliceHome, 'reset', seen);
  expect(mails(`nobody${run}@example.org`, 'reset').length === 0, 'nothing mailed to an unknown address');
  await open(link, 'reset');
  expect(await page.locator('#nav').isHidden(), 'no pages to go to without a session');
  await shot('reset');
  await refused(400, async () => {
    await submit('reset', { newPassword: 'short' }, true);
  });
  expect((await page.locator('#reset .field-error').textContent()).includes('at least 8'), 'the rule beside the field');
  expect(await page.locator('#reset [name="newPassword"][aria-invalid="true"]').count() === 1, 'newPassword marked invalid');
  // The reset logs this tab in with the new password.
  expect((await submit('reset', { newPassword: resetPw })).includes('you are logged in as ' + alice), 'password set');
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#who').textContent()).includes(alice), 'logged in as ' + alice);
  await logout();
  await refused(401, async () => {
    await submit('login', { login: alice, password: recoveredPw }, true);
  });
  await login(alice, resetPw);
  // The link works once, and says so beside its token.
  await open(link, 'reset');
  await refused(400, async () => {
    await submit('reset', { newPassword: 'another password' }, true);
  });
  expect((await page.locator('#reset .field-error').textContent()).includes('used already'), 'a used link says so');
});

await step('a mailed link opened and not used is forgotten with the tab\'s Log out: whoever uses the tab next finds no link behind #/reset', async () => {
  // alice opens a reset link, remembers her password and logs in with it
  // in the same page, then logs out and leaves the tab.
  await logout();
  await open(base + '/#/reset?token=left-behind-' + run, 'reset');
  await page.evaluate(() => { location.hash = '#/auth'; });
  await page.waitForSelector('body[data-ready="auth"]');
  await submit('login', { login: alice, password: resetPw });
  await page.waitForSelector('body[data-ready="library"]');
  await logout();
  // The next user of the tab goes back to the reset page.
  await page.evaluate(() => { location.hash = '#/reset'; });
  await page.waitForSelector('body[data-ready="reset"]');
  expect(await page.locator('#reset [name="token"]').inputValue() === '', 'the logged-out tab still holds the reset link');
  expect((await page.locator('#message').textContent()).includes('needs the link from the mail'), 'the page asks for the link');
  await login(alice, resetPw);
});

await step('a mailed link is sent without the tab\'s session: one that ended after the link was opened (a thief with the password signing out every other) neither refuses it nor logs the tab out to a login', async () => {
  // alice, logged in, opens a link in her tab; her session then ends
  // elsewhere. The link is refused for its own token (made up here),
  // on its page, as without a session.
  await open(base + '/#/reset?token=made-up-' + run, 'reset');
  expect((await page.locator('#who').textContent()).includes(alice), 'the tab is logged in as ' + alice);
  const ended = await page.evaluate(async () => (await fetch('/v1/sessions/current', {
    method: 'DELETE', headers: { Authorization: 'Bearer ' + sessionStorage.getItem('shelf.token') } })).status);
  expect(ended === 204, 'the session ended: ' + ended);
  await refused(400, async () => {
    await submit('reset', { newPassword: 'a password for a made-up link' }, true);
  });
  expect(await page.locator('body[data-ready="reset"]').count() === 1, 'still on the reset page');
  expect((await page.locator('#reset .field-error').textContent()).includes('not one shelf mailed'), 'the link refused for its token');
  await page.evaluate(() => sessionStorage.removeItem('shelf.token'));
  await login(alice, resetPw);
});

await step('delete my account: confirmed by the username; the groups it manages with others listed before, and handed to another member; then gone, and the username is free', async () => {
  await visit('#/account', 'account');
  await page.waitForSelector('#delete-groups:not([hidden]) li');
  const listed = await page.locator('#delete-groups li').allTextContents();
  expect(listed.length === 1 && listed[0] === club + ' (2 of 3 members)', 'groups to hand over: ' + listed);
  expect((await page.locator('#delete-groups p').textContent()).includes('another member becomes its manager'), 'the list says what happens to them');
  await noRawIds();
  await submit('delete-account', { confirm: 'somebody else' }, true);
  expect(await page.locator('#delete-account [name="confirm"][aria-invalid="true"]').count() === 1, 'confirmation marked invalid');
  await refused(401, async () => {
    await submit('delete-account', { confirm: alice, currentPassword: 'not my password' }, true);
  });
  expect(await page.locator('#delete-account [name="currentPassword"][aria-invalid="true"]').count() === 1, 'a wrong password marked beside its field');
  // Accepted at once: the account is gone for everyone, the tab logged
  // out, and the job's progress shows, busy, until the names are free.
  const accepted = await submit('delete-account', { confirm: alice, currentPassword: resetPw });
  expect(accepted.includes('is being deleted') || accepted.includes('is deleted'), 'accepted: ' + accepted);
  await page.waitForSelector('body[data-ready="auth"]');
  await finished('is deleted, and its username and email are free again');
  expect((await page.locator('#who').textContent()) === 'not logged in', 'logged out');
  expect((await fetch(base + '/v1/users/by-username/' + alice)).status === 404, 'nobody is named ' + alice);
  const g = await api('GET', '/v1/groups/by-name/' + club);
  expect(g.memberCount === 1, 'the club has bob alone: ' + JSON.stringify(g));
  const bobToken = (await api('POST', '/v1/sessions', null, { login: bob, password: pw })).token;
  const members = await api('GET', '/v1/groups/' + g.id + '/members', bobToken);
  expect(members.items.length === 1 && members.items[0].role === 'manager', 'the club was handed to bob: ' + JSON.stringify(members));
  await refused(401, async () => {
    await submit('login', { login: alice, password: resetPw }, true);
  });
  expect((await submit('signup', { username: alice, email: aliceMail, password: pw })).includes('Welcome, ' + alice), 'the username is free');
  await page.waitForSelector('body[data-ready="library"]');
  await logout();
});

await step('making a manager asks the password (adding one, or a member\'s row, asked under the table; a demotion at once); close a group: the button for its managers and admins only, confirmed; then gone with its shares; a repeat in another tab says already closed', async () => {
  const team = 'team' + run;
  await login(bob, pw);
  await visit('#/groups', 'groups');
  await submit('create-group', { name: team });
  await page.waitForSelector('body[data-ready="group"]');
  expect(await page.locator('#close-group').isVisible(), 'its manager sees Close group');
  expect(await page.locator('#close-group-confirm').isHidden(), 'no confirmation before the button');
  await submit('add-member', { username: carol, role: 'member' });
  expect(await page.locator('#add-member-proof').isHidden(), 'adding a member asks no password');
  // Adding a manager asks bob's password: refused in the form without one,
  // the field named, before anything is sent.
  expect((await submit('add-member', { username: alice, role: 'manager' }, true)).includes('current password'), 'no manager added without the password');
  expect(await page.locator('#add-member [name="currentPassword"][aria-invalid="true"]').count() === 1, 'the password marked beside its field');
  expect((await submit('add-member', { username: alice, role: 'manager', currentPassword: pw })).includes('Added ' + alice), 'alice added as a manager');
  expect(await page.locator('#add-member [name="currentPassword"]').inputValue() === '', 'the password is not kept');
  // A promotion through a member's row asks first, under the table: no
  // request until the password is given; Cancel puts the role back.
  const bobToken = (await api('POST', '/v1/sessions', null, { login: bob, password: pw })).token;
  const gid = (await api('GET', '/v1/groups/by-name/' + team, bobToken)).id;
  const carolId = (await api('GET', '/v1/users/by-username/' + carol)).id;
  const roleOfCarol = async () => (await api('GET', `/v1/groups/${gid}/members`, bobToken)).items.find((m) => m.principalId === carolId).role;
  const carolRole = page.locator(`#group-members tr[data-member="${carol}"] select`);
  if (await carolRole.count() === 0) await page.locator('[data-pager="group-members"] [data-action="next"]').click();
  await carolRole.waitFor();
  await carolRole.selectOption('manager');
  await page.locator('#grant-manager').waitFor();
  expect(await roleOfCarol() === 'member', 'a promotion sent before its password');
  const question = await page.locator('#grant-manager-question').textContent();
  expect(question === `Make ${carol} a manager of ${team}? A manager can add and remove members and close the group.`, 'the question: ' + question);
  expect((await page.locator('#grant-manager-yes').textContent()) === 'Yes, make ' + carol + ' a manager', 'the button says what it does');
  expect((await click('#grant-manager-cancel')).includes(carol + ' stays a member'), 'cancelled');
  expect(await page.locator('#grant-manager').isHidden() && (await carolRole.inputValue()) === 'member', 'the role is back to member');
  await carolRole.selectOption('manager');
  await page.locator('#grant-manager').waitFor();
  expect((await submit('grant-manager', {}, true)).includes('current password'), 'no promotion without the password');
  await refused(401, async () => {
    await submit('grant-manager', { currentPassword: 'not the password' }, true);
  });
  expect(await page.locator('#grant-manager [name="currentPassword"][aria-invalid="true"]').count() === 1, 'a wrong password marked beside its field');
  expect(await page.locator('#grant-manager').isVisible(), 'the question stays for the right password');
  expect((await submit('grant-manager', { currentPassword: pw })).includes(carol + ' is now a manager of ' + team), 'carol promoted');
  await page.waitForFunction((c) => document.querySelector(`#group-members tr[data-member="${c}"] select`).value === 'manager', carol);
  // A demotion asks nothing: carol is a member again at once.
  await page.evaluate(() => { document.getElementById('message').textContent = ''; });
  await carolRole.selectOption('member');
  expect((await message(false)).includes(carol + ' is now a member of ' + team), 'carol a member again');
  expect(await roleOfCarol() === 'member', 'the demotion was sent at once');
  // An item of bob's shared with the group.
  const plans = await api('POST', '/v1/content', bobToken, { name: 'Team plans', visibility: 'private' });
  await api('PUT', `/v1/content/${plans.id}/members/${gid}`, bobToken, { role: 'viewer' });
  await logout();
  await login(carol, pw);
  await visit('#/groups/' + team, 'group');
  expect(await page.locator('#close-group-area').isHidden(), 'a member sees no Close group');
  // What a member may do is all a member sees: no roles to change, nobody
  // to add or remove, only Leave on their own row.
  await page.locator('#group-members tbody tr').first().waitFor();
  expect(await page.locator('#add-member').isHidden() && (await page.locator('#group-members select').count()) === 0, 'a member adds nobody and changes no role');
  const buttons = await page.locator('#group-members tbody button').allTextContents();
  expect(buttons.length <= 1 && buttons.every((b) => b === 'Leave'), 'a member\'s buttons: ' + buttons);
  expect((await rows('group-members')).some((r) => r.includes('manager')), 'the roles as words');
  await logout();
  await login(admin, pw);
  await visit('#/groups/' + team, 'group');
  expect(await page.locator('#close-group').isVisible(), 'an admin sees Close group');
  await page.locator('#close-group').click();
  expect(await page.locator('#close-group-proof').isHidden(), 'an admin closes by role, asked no password');
  await click('#close-group-cancel');
  await logout();
  // alice, a manager too, has the group's page open in another tab.
  const first = page;
  const tab = await context.newPage();
  try {
    page = tab;
    await login(alice, pw);
    await visit('#/groups/' + team, 'group');
    expect(await page.locator('#close-group').isVisible(), 'another manager sees Close group');
    page = first;
    await login(bob, pw);
    await visit('#/groups/' + team, 'group');
    await page.locator('#close-group').click();
    expect(await page.evaluate(() => document.activeElement.id) === 'close-group-cancel', 'the question opens on Cancel');
    const warning = await page.locator('#close-group-warning').textContent();
    expect(warning.includes(team) && warning.includes('every membership ends') && warning.includes('every item shared through the group') &&
      warning.includes('only the group managed are deleted'), 'the confirmation says: ' + warning);
    expect((await click('#close-group-cancel')).includes('stays open'), 'cancelled');
    expect(await page.locator('#close-group-confirm').isHidden(), 'the confirmation hides again');
    await page.locator('#close-group').click();
    expect(await page.locator('#close-group-proof').isVisible(), 'a manager is asked for the password');
    expect((await submit('close-group-confirm', {}, true)).includes('current password'), 'no closing without the password');
    await refused(401, async () => {
      await submit('close-group-confirm', { currentPassword: 'not the password' }, true);
    });
    const closing = await submit('close-group-confirm', { currentPassword: pw });
    expect(closing.includes('Closing the group ' + team) || closing.includes('Closed the group ' + team), 'accepted: ' + closing);
    await page.waitForSelector('body[data-ready="groups"]');
    await finished('Closed the group ' + team);
    const mine = (await rows('my-groups')).join(' | ');
    expect(!mine.includes(team) && mine.includes(club), 'my groups: ' + mine);
    expect((await fetch(base + '/v1/groups/' + gid, { headers: { Authorization: 'Bearer ' + bobToken } })).status === 404, 'the group is 404');
    const members = (await api('GET', `/v1/content/${plans.id}/members`, bobToken)).items.map((m) => m.principalId);
    expect(!members.includes(gid) && members.length === 1, 'the share through the group ended, bob keeps the item: ' + members);
    await refused(404, async () => {
      await visit('#/groups/' + team, 'group');
    });
    expect((await page.locator('#message').textContent()).includes('No group is named ' + team), 'its page says it is gone');
    await logout();
    // The other tab still shows the group: its close is refused as already done.
    page = tab;
    await page.locator('#close-group').click();
    await refused(404, async () => {
      expect((await submit('close-group-confirm', { currentPassword: pw })).includes('is already closed'), 'already closed');
    });
    await page.waitForSelector('body[data-ready="groups"]');
    await noRawIds();
  } finally {
    page = first;
    await tab.close();
  }
});

await step('login refused while the email is not verified (SHELF_REQUIRE_VERIFIED_EMAIL): a link to mail it again, the mailed link verifies, then login', async () => {
  const dave = 'dave' + run;
  const daveMail = `${dave}@example.org`;
  await page.goto('about:blank');
  await page.goto(verifiedBase + '/#/library');
  await page.waitForSelector('body[data-ready="auth"]');
  expect(await page.locator('#login-unverified').isHidden(), 'no link before a refusal');
  await refused(403, async () => { // the signup's own login waits for the address's link
    const said = await submit('signup', { username: dave, email: daveMail, password: pw });
    expect(said.includes('Signed up as ' + dave) && said.includes(daveMail) && said.includes('then log in'), 'signed up: ' + said);
  });
  expect(await page.locator('#login-unverified').isVisible(), 'the signup offers a new mail');
  await refused(403, async () => {
    await submit('login', { login: daveMail, password: pw }, true);
  });
  expect(await page.locator('#login-unverified').isVisible(), 'the refusal offers a new mail');
  await page.locator('#login-verify-link').click();
  await page.waitForSelector('body[data-ready="verify"]');
  expect(await page.locator('#verify-again').isVisible(), 'the form to mail again');
  expect(await page.locator('#verify-again [name="email"]').inputValue() === daveMail, 'filled with the address typed');
  const seen = mails(daveMail, 'verify', verifiedMailLog).length;
  expect(seen === 1, 'the signup mailed a link: ' + seen);
  expect((await submit('verify-again', {})).includes('a mail is on its way'), 'mailed again');
  const link = await mailed(daveMail, 'verify', seen, verifiedMailLog);
  expect(link.startsWith(verifiedBase + '/'), 'the link goes to this api: ' + link);
  await open(link, 'verify');
  expect((await page.locator('#verify-result').textContent()).includes('is verified'), 'verified');
  await page.goto('about:blank');
  await page.goto(verifiedBase + '/#/library');
  await page.waitForSelector('body[data-ready="auth"]');
  await submit('login', { login: dave, password: pw });
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#who').textContent()).includes(dave), 'logged in as ' + dave);
  await logout();
});

// totp is an authenticator app's code of a base32 secret at a time step
// (RFC 6238: HMAC-SHA-1, 6 digits), for the steps the server accepts.
function totp(secret, step) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const ch of secret.replace(/=+$/, '')) bits += alphabet.indexOf(ch).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', key).update(counter).digest();
  const at = mac[mac.length - 1] & 15;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1000000).padStart(6, '0');
}

// authenticator is an app holding a secret: each code of a step not used
// before, the step before now's first (the server takes the one before
// now's to the one after), waiting for the next step when those are spent.
function authenticator(secret) {
  let last = 0;
  return async () => {
    for (;;) {
      const now = Math.floor(Date.now() / 30000);
      const step = Math.max(last + 1, now - 1);
      if (step <= now + 1) {
        last = step;
        return totp(secret, step);
      }
      await new Promise((r) => setTimeout(r, (now + 1) * 30000 - Date.now() + 50));
    }
  };
}

await step('a second factor: the password alone opens the code form, a wrong code is refused beside it, the right one logs in', async () => {
  const dana = 'dana' + run;
  await api('POST', '/v1/users', null, { username: dana, email: `${dana}@example.org`, password: pw });
  // A factor takes a verified address: dana opens her signup's link first.
  await open(await mailed(`${dana}@example.org`, 'verify', 0), 'verify');
  const s = await api('POST', '/v1/sessions', null, { login: dana, password: pw });
  const me = (await api('GET', '/v1/me', s.token)).id;
  const e = await api('POST', `/v1/users/${me}/factors`, s.token, { name: 'phone', currentPassword: pw });
  const phoneApp = authenticator(e.secret);
  const c = await api('POST', `/v1/users/${me}/factors/${e.factor.id}/confirmation`, s.token, { code: await phoneApp() });
  expect(c.recoveryCodes.length === 10, 'ten recovery codes');
  await visit('#/library', 'auth');
  await submit('login', { login: dana, password: pw });
  await page.waitForSelector('#login-code:not([hidden])');
  expect(await page.locator('#login').isHidden(), 'the password form gives way to the code form');
  let wrong = '';
  await refused(401, async () => { wrong = await submit('login-code', { code: '000000' }, true); });
  expect(wrong.includes('code'), 'a wrong code is refused: ' + wrong);
  // Typed as the app shows it, in two halves: the console sends the digits.
  const asShown = (code) => code.slice(0, 3) + ' ' + code.slice(3);
  await submit('login-code', { code: asShown(await phoneApp()) });
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#who').textContent()).includes(dana), 'logged in as ' + dana);

  // The account page: the factor listed, a second app added (with a code
  // of the first), the password changed with a code, the first app
  // removed, new recovery codes.
  await visit('#/account', 'account');
  expect((await page.locator('#factors-status').textContent()).includes('Recovery codes left: 10'), 'ten recovery codes left');
  expect(await page.locator('#factors tbody tr', { hasText: 'phone' }).isVisible(), 'the phone is listed');
  expect(await page.locator('#password .factor-code').isVisible(), 'the password form asks a code');
  await page.locator('#sessions tr.current').waitFor();
  const made = await page.locator('#sessions tr.current').textContent();
  expect(made.includes('password and authenticator app'), 'this session says how it was made: ' + made);
  await submit('factor-add', { name: 'tablet', currentPassword: pw, code: await phoneApp() });
  await page.waitForSelector('#factor-setup:not([hidden])');
  expect((await page.locator('#factor-qr').getAttribute('src')).startsWith('data:image/png;base64,'), 'a QR code is shown');
  const tabletApp = authenticator((await page.locator('#factor-secret').textContent()).trim());
  const added = await submit('factor-confirm', { code: asShown(await tabletApp()) });
  expect(added.includes('tablet is added'), 'added: ' + added);
  expect((await page.locator('#factor-secret').textContent()) === '' && (await page.locator('#factor-qr').getAttribute('src')) === null,
    'the page keeps no key of an app once it is added');
  expect(await page.locator('#recovery-shown').isHidden(), 'a second factor shows no new recovery codes');
  let refusal = '';
  await refused(400, async () => { refusal = await submit('password', { currentPassword: pw, newPassword: newPw }, true); });
  expect(refusal.length > 0 && await page.locator('#password [name="code"][aria-invalid="true"]').count() === 1, 'a password change without a code is refused beside the code: ' + refusal);
  await submit('password', { currentPassword: pw, newPassword: newPw, code: await tabletApp() });
  await page.locator('#factors tbody tr', { hasText: 'phone' }).getByRole('button', { name: 'Remove phone' }).click();
  const removed = await submit('factor-remove', { currentPassword: newPw, code: await tabletApp() });
  expect(removed.includes('Your other apps still work'), 'removed: ' + removed);
  expect(await page.locator('#factors tbody tr').count() === 1, 'the tablet is left');
  const fresh = await submit('recovery-new', { currentPassword: newPw, code: c.recoveryCodes[1] });
  expect(fresh.includes('New recovery codes'), 'new codes: ' + fresh);
  expect(await page.locator('#recovery-codes li').count() === 10, 'ten new codes shown');
  await shot('account-factors');
  await logout();
  expect(await page.locator('#recovery-codes li').count() === 0, 'the logged-out page still holds the recovery codes');

  // An admin sees that dana has a factor (never its secret) and, dana
  // having lost it, removes it, confirmed and audited.
  await login(admin, pw);
  await visit('#/moderation/' + dana, 'moderation');
  expect((await page.locator('#mod-user-factors').textContent()) === '', 'the factors are read only when asked for (each list is audited)');
  await page.locator('#mod-show-factors').click();
  await page.waitForFunction(() => document.getElementById('mod-user-factors').textContent.includes('logs in with a second factor'));
  await page.locator('#audit tbody tr', { hasText: 'factors listed' }).waitFor();
  expect(!(await page.locator('#page-moderation').textContent()).includes(e.secret), 'never its secret');
  const gone = await confirm('#mod-factors button', 'This is recorded in the audit');
  expect(gone.includes('tablet is removed'), 'removed: ' + gone);
  await page.waitForFunction(() => document.getElementById('mod-user-factors').textContent.includes('has no second factor'));
  await page.locator('#audit tbody tr', { hasText: 'factor removed' }).waitFor();
  await logout();

  // The notice of the tablet, followed: it asks first, then (the app
  // gone already) signs out, and the password opens nothing until a
  // reset.
  await login(dana, newPw);
  const tabletNotice = mails(`${dana}@example.org`, 'revert-factor');
  expect(tabletNotice.length === 2, 'each app added mailed a notice with a link: ' + tabletNotice.length);
  await open(tabletNotice[1], 'revert-factor');
  expect((await page.locator('#revert-factor-ask').textContent()).includes('removes that factor'), 'the page says what it does');
  expect((await page.locator('#who').textContent()).includes(dana), 'loading the link signed nothing out');
  await page.locator('#revert-factor-go').click();
  await page.waitForFunction(() => document.getElementById('revert-factor-result').className === 'ok');
  expect((await page.locator('#revert-factor-result').textContent()).includes('The factor is removed'), 'removed: the outcome beside the button');
  expect(await page.locator('#revert-factor-next').isVisible(), 'and says to choose a new password');
  expect((await page.locator('#who').textContent()) === 'not logged in', 'this session is signed out too');
  await visit('#/library', 'auth');
  await refused(403, async () => {
    await submit('login', { login: dana, password: newPw }, true);
  });
  expect(await page.locator('#login-recovered').isVisible(), 'the password opens nothing until a reset');
});

// passkeyBase is the console on localhost (PASSKEY_URL): a browser
// takes no address as a passkey's relying party, so the api's is
// localhost (SHELF_WEBAUTHN_RP_ID) and this step runs there.
const passkeyBase = process.env.PASSKEY_URL;

await step('a passkey: added on the account page through the browser (a virtual authenticator), asked at login with its own button, and asked again for a new password and for closing a group from its page', async () => {
  const erin = 'erin' + run;
  const erinMail = `${erin}@example.org`;
  await api('POST', '/v1/users', null, { username: erin, email: erinMail, password: pw });
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: {
    protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true,
    automaticPresenceSimulation: true } });
  const at = async (hash, section) => {
    await page.goto('about:blank');
    await page.goto(passkeyBase + '/' + hash);
    await page.waitForSelector(`body[data-ready="${section}"]`);
  };
  await at('#/library', 'auth');
  await submit('login', { login: erin, password: pw });
  await page.waitForSelector('body[data-ready="library"]');
  // Her address not verified yet, the account page says to verify it
  // first (the api refuses a factor before), with the mail to send again.
  await at('#/account', 'account');
  expect((await page.locator('#factors-status').textContent()).includes('Verify your email first to add a second factor'), 'an unverified address is told to verify first');
  expect(await page.locator('#passkey-add').isHidden() && await page.locator('#factor-add').isHidden(), 'no form the api would refuse');
  expect((await click('#factors-verify')).includes('on its way to ' + erinMail), 'the verification mailed again');
  await open(await mailed(erinMail, 'verify', 1), 'verify');
  await at('#/account', 'account');
  expect((await page.locator('#factors-status').textContent()).includes('an authenticator app or a passkey'), 'the account page offers a passkey');
  // The message line first says the browser is asked, then the outcome.
  await submit('passkey-add', { name: 'laptop', currentPassword: pw });
  await finished('laptop is added');
  expect(await page.locator('#recovery-shown').isVisible(), 'a first factor shows its recovery codes');
  expect(await page.locator('#factors tbody tr', { hasText: 'Passkey' }).isVisible(), 'the passkey is listed as one');
  let { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  expect(credentials.length === 1, 'the authenticator holds one credential: ' + credentials.length);

  // Log out; the password now opens the second step, whose passkey
  // button logs in.
  await page.locator('#logout').click();
  await page.waitForSelector('body[data-ready="auth"]');
  const asked = await submit('login', { login: erin, password: pw });
  expect(asked.includes('now your passkey'), 'the password asks for the passkey: ' + asked);
  expect(await page.locator('#login-passkey').isVisible(), 'the passkey button is shown');
  expect(await page.locator('#login-code input[name=code]').isHidden(), 'no app code is asked of an account without an app');
  await click('#login-passkey');
  await page.waitForSelector('body[data-ready="library"]');
  expect((await page.locator('#who').textContent()).includes(erin), 'logged in as ' + erin);
  ({ credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId }));
  expect(credentials[0].signCount >= 2, 'the key signed again: count ' + credentials[0].signCount);

  // A new password with the code left empty: the browser is asked for
  // the passkey (a proof's challenge), and the change goes through.
  await at('#/account', 'account');
  expect(await page.locator('#password .passkey-hint').isVisible(), 'the form says an empty code uses the passkey');
  const asking = await submit('password', { currentPassword: pw, newPassword: 'an erin passphrase, renewed' });
  expect(asking.includes('asks for your passkey') || asking.includes('Password changed'), 'the browser is asked: ' + asking);
  await finished('Password changed');
  ({ credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId }));
  expect(credentials[0].signCount >= 3, 'the key signed the proof: count ' + credentials[0].signCount);

  // Closing a group from its page, My account not opened since the page
  // loaded: the form shows the code field and the passkey hint once
  // Close group is pressed, and the empty code asks for the passkey (the
  // factors read then), where the closing was refused for a code the
  // account does not have, again at every press.
  const erinGroup = 'erg' + run;
  await at('#/groups', 'groups');
  await submit('create-group', { name: erinGroup });
  await page.waitForSelector('body[data-ready="group"]');
  await at('#/groups/' + erinGroup, 'group');
  await page.locator('#close-group').click();
  await page.locator('#close-group-confirm .passkey-hint').waitFor({ state: 'visible' });
  await submit('close-group-confirm', { currentPassword: 'an erin passphrase, renewed' });
  await finished('Closed the group ' + erinGroup);
  ({ credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId }));
  expect(credentials[0].signCount >= 4, 'the key signed the closing: count ' + credentials[0].signCount);
  await cdp.send('WebAuthn.disable');
  await cdp.detach();
});

await step('delete an account alone in its group: the group is closed with it (404), and its name is free for a new group', async () => {
  const solo = 'solo' + run;
  const s = await api('POST', '/v1/sessions', null, { login: carol, password: pw });
  const g = await api('POST', '/v1/groups', s.token, { name: solo });
  await login(carol, pw);
  await visit('#/account', 'account');
  const hint = await page.locator('#delete-account .hint').textContent();
  expect(hint.includes('groups you are alone in are closed'), 'the confirmation says so: ' + hint);
  const accepted = await submit('delete-account', { confirm: carol, currentPassword: pw });
  expect(accepted.includes('is being deleted') || accepted.includes('is deleted'), 'accepted: ' + accepted);
  await page.waitForSelector('body[data-ready="auth"]');
  await finished('is deleted, and its username and email are free again');
  const bobToken = (await api('POST', '/v1/sessions', null, { login: bob, password: pw })).token;
  const auth = { headers: { Authorization: 'Bearer ' + bobToken } };
  expect((await fetch(base + '/v1/groups/' + g.id, auth)).status === 404, 'the group is 404');
  expect((await fetch(base + '/v1/groups/by-name/' + solo, auth)).status === 404, 'nothing is named ' + solo);
  const again = await api('POST', '/v1/groups', bobToken, { name: solo });
  expect(again.name === solo && again.id !== g.id, 'a new group takes the name: ' + JSON.stringify(again));
});

await finish(browser, 'browser');
