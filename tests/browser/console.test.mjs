// The console's main story and the API reference in headless Chromium.
// Run by scripts/test-browser.sh (make test-browser). Fails on any console
// error or page error. Prints the plain "N passed, N failed" line.
import { createRequire } from 'node:module';
import { execSync } from 'node:child_process';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require(path.join(process.env.NODE_PATH, 'playwright-core'));
const base = process.env.BASE_URL;
const shots = process.env.SCREENSHOTS;
const run = Date.now().toString(36);

let passed = 0;
let failed = 0;
const errors = [];

async function step(name, fn) {
  try {
    await fn();
    passed++;
    console.log('ok   ' + name);
  } catch (err) {
    failed++;
    console.log('FAIL ' + name + ': ' + err.message);
  }
}

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext();
context.on('page', (page) => watch(page));
const page = await context.newPage();
watch(page);

function watch(p) {
  p.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
  p.on('pageerror', (err) => errors.push(err.message));
}

async function submit(formId, values) {
  for (const [name, value] of Object.entries(values)) {
    const field = page.locator(`#${formId} [name="${name}"]`);
    if ((await field.evaluate((el) => el.tagName)) === 'SELECT') await field.selectOption(value);
    else await field.fill(value);
  }
  await page.locator(`#${formId} button`).click();
}

async function message() {
  await page.waitForFunction(() => document.getElementById('message').textContent !== '');
  return page.locator('#message').textContent();
}

const alice = 'alice' + run;
const bob = 'bob' + run;
const admin = 'admin' + run;
const pw = 'correct horse battery';

await step('the API reference lists every route', async () => {
  await page.goto(base + '/docs');
  await page.waitForSelector('.opblock', { timeout: 30000 });
  const spec = await (await fetch(base + '/openapi.yaml')).text();
  const operations = (spec.match(/operationId:/g) || []).length;
  const shown = await page.locator('.opblock').count();
  await page.screenshot({ path: `${shots}/docs.png`, fullPage: false });
  expect(shown === operations, `docs show ${shown} operations, the contract has ${operations}`);
});

await step('sign up and log in', async () => {
  await page.goto(base + '/');
  for (const u of [alice, bob, admin]) {
    await page.evaluate(() => { document.getElementById('message').textContent = ''; });
    await submit('signup', { username: u, email: `${u}@example.org`, password: pw });
    expect((await message()).includes('Signed up as ' + u), 'signup of ' + u);
  }
  execSync(`${process.env.GRANT} ${admin}`, { env: process.env, stdio: 'ignore' });
  await submit('login', { login: alice, password: pw });
  await page.waitForSelector('#mine:not([hidden])');
  expect((await page.locator('#who').textContent()).includes(alice), 'logged in as alice');
});

await step('create items and see them in my library, newest first', async () => {
  for (const [name, vis] of [['Notes', 'private'], ['Hello world', 'public']]) {
    await page.evaluate(() => { document.getElementById('message').textContent = ''; });
    await submit('create', { name, visibility: vis });
    expect((await message()).includes('Created ' + name), 'created ' + name);
  }
  await page.waitForFunction(() => document.querySelectorAll('#my-library li').length === 2);
  const names = await page.locator('#my-library li').allTextContents();
  expect(names[0].startsWith('Hello world') && names[1].startsWith('Notes'), 'order: ' + names.join(' | '));
  await page.screenshot({ path: `${shots}/library.png` });
});

await step('share an item and view another library', async () => {
  const notes = await page.locator('#my-library li', { hasText: 'Notes' }).getAttribute('data-id');
  const bobUser = await (await fetch(base + '/v1/users/by-username/' + bob)).json();
  await page.evaluate(() => { document.getElementById('message').textContent = ''; });
  await submit('share', { content: notes, principal: bobUser.id, role: 'viewer' });
  expect((await message()) === 'Shared.', 'shared');
  await page.evaluate(() => { document.getElementById('message').textContent = ''; });
  await submit('view', { who: bob });
  await message();
  // Alice is another logged-in user for Bob's library: a private item does not show there.
  expect(await page.locator('#other-library li').count() === 0, 'private item hidden in bob\'s library');
  await page.evaluate(() => { document.getElementById('message').textContent = ''; });
  await submit('view', { who: alice });
  await message();
  expect(await page.locator('#other-library li').count() === 2, 'own library through the viewer');
});

await step('an admin suspends and unsuspends', async () => {
  await page.locator('#logout').click();
  await page.waitForSelector('#auth:not([hidden])');
  await submit('login', { login: admin, password: pw });
  await page.waitForSelector('#admin:not([hidden])');
  const bobUser = await (await fetch(base + '/v1/users/by-username/' + bob)).json();
  await submit('suspend', { user: bobUser.id, reason: 'spam' });
  await page.waitForSelector(`#suspended li[data-user="${bobUser.id}"]`);
  await page.screenshot({ path: `${shots}/suspended.png` });
  await page.locator(`#suspended li[data-user="${bobUser.id}"] button`).click();
  await page.waitForFunction((id) => !document.querySelector(`#suspended li[data-user="${id}"]`), bobUser.id);
});

await step('no console or page errors', async () => {
  expect(errors.length === 0, errors.join(' | '));
});

await browser.close();
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
