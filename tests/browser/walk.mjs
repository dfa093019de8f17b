// What the browser walks share (console.test.mjs, search.test.mjs): the
// steps and their count, headless Chromium with every page watched for
// console and page errors, refused() for the one error a step expects,
// the API called directly, screenshots, and the end of a walk.
//
// Environment (tests/browser/test-browser.sh sets it): BASE_URL the api,
// CHROMIUM the browser, NODE_PATH where playwright-core is, SCREENSHOTS
// and, when set, README_SHOTS where screenshots go (a README run's names
// have no suffix: it has a keyspace of its own).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require(path.join(process.env.NODE_PATH, 'playwright-core'));

export const base = process.env.BASE_URL;
const shots = process.env.SCREENSHOTS;
const readmeShots = process.env.README_SHOTS || '';
// run is the suffix that keeps one run's names apart from the last's.
export const run = readmeShots ? '' : Date.now().toString(36);

let passed = 0;
let failed = 0;
const errors = [];
// allowed: console errors a step expects (a refused request's
// "Failed to load resource ... status of N"), counted down as they come.
let allowed = null;
// watched: the pages watch listens to, each once (the first page is both
// made by launch and announced by the context).
const watched = new WeakSet();

export async function step(name, fn) {
  try {
    await fn();
    passed++;
    console.log('ok   ' + name);
  } catch (err) {
    failed++;
    console.log('FAIL ' + name + ': ' + err.message);
  }
}

export function expect(cond, what) {
  if (!cond) throw new Error(what);
}

// launch starts the browser with a 1100x750 context (the screenshots'
// size) whose every list shows two rows a page, so that every list pages
// with a few entries; every page of it is watched.
export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 750 }, locale: 'en-GB', timezoneId: 'UTC' });
  await context.addInitScript(() => {
    if (location.protocol === 'http:') sessionStorage.setItem('shelf.pageSize', '2');
  });
  context.on('page', (p) => watch(p));
  const page = await context.newPage();
  watch(page);
  return { browser, context, page };
}

function watch(p) {
  if (watched.has(p)) return;
  watched.add(p);
  p.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    if (allowed && allowed.left > 0 && text.includes(typeof allowed.status === 'number' ? 'status of ' + allowed.status : allowed.status)) {
      allowed.left--;
      return;
    }
    errors.push(text);
  });
  p.on('pageerror', (err) => errors.push(err.message));
}

// refused runs fn, during which one request is expected to answer status
// (a number), or to fail with status (a network error's text, such as
// net::ERR_CONNECTION_REFUSED).
export async function refused(status, fn) {
  allowed = { status, left: 1 };
  try {
    await fn();
    // The browser reports the refused request a moment after its answer.
    for (let i = 0; i < 50 && allowed.left > 0; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    const left = allowed.left;
    allowed = null;
    expect(left === 0, 'no request answered ' + status);
  }
}

// api calls the api directly and answers the parsed body; any status but
// 2xx throws.
export async function api(method, p, token, body, extraHeaders) {
  const headers = { 'Content-Type': 'application/json', ...extraHeaders };
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(base + p, { method, headers, body: body && JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// axeSource is axe-core (from npm, beside playwright-core): the
// accessibility checker `accessible` runs in the page.
const axeSource = fs.readFileSync(path.join(process.env.NODE_PATH, 'axe-core', 'axe.min.js'), 'utf8');

// accessible runs axe-core on what page shows (its WCAG 2 A and AA rules
// and best practices) and throws on any violation it rates serious or
// critical, naming the rule and the elements.
export async function accessible(page, where) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  expect(found.length === 0, `axe on ${where}: ${found.join('; ')}`);
}

// saveShot checks what page shows with axe-core (accessible), then saves
// it as name.png in SCREENSHOTS, and in README_SHOTS when set unless readme
// is false (a picture docs/console.md does not show): every console page
// pictured is checked. checked false is for /docs only: Swagger UI's own
// markup (its server select has no label, its operations nest buttons,
// grey on grey) is the vendor's, not shelf's.
export async function saveShot(page, name, readme = true, checked = true) {
  if (checked) await accessible(page, name);
  await page.screenshot({ path: `${shots}/${name}.png` });
  if (readme && readmeShots) await page.screenshot({ path: `${readmeShots}/${name}.png` });
}

// finish is a walk's last step: no console or page error came but those a
// step expected; then it closes the browser, prints "walk: N passed, N
// failed" and exits 1 on any failure.
export async function finish(browser, walk) {
  await step('no console or page errors', async () => {
    expect(errors.length === 0, errors.join(' | '));
  });
  await browser.close();
  console.log(`${walk}: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
