// The short story of `make test-clients`, through a TypeScript client that
// openapi-generator (typescript-fetch) made from openapi.yaml, compiled with
// `tsc --strict` and run by Node's own fetch.
//
// SHELF_URL says where the server is. Each step asserts what a user of the
// client relies on; the first failure ends the run with its reason.

import {
  AccountsApi,
  Configuration,
  ContentApi,
  ContentRole,
  LibraryItem,
  LibraryPage,
  LoginChallengeBodyFromJSON,
  OperationsApi,
  Problem,
  ProblemFromJSON,
  ResponseError,
  User,
  Visibility,
} from "./gen";

import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";

const URL = process.env.SHELF_URL ?? "";
const PASSWORD = "correct horse battery";

// verifyToken waits for the verification link the server's log mailer
// wrote to CLIENTS_MAIL_LOG for address, and answers its token (a second
// factor takes a verified address).
async function verifyToken(address: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    for (const line of readFileSync(process.env.CLIENTS_MAIL_LOG ?? "", "utf8").split("\n")) {
      if (!line.includes("SHELF_MAILER=log")) continue;
      const mail = JSON.parse(line) as { to?: string; text?: string };
      const token = mail.to === address ? /#\/verify\?token=([\w%-]+)/.exec(mail.text ?? "")?.[1] : undefined;
      if (token !== undefined) return decodeURIComponent(token);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no verification mail to ${address}`);
}

function check(ok: boolean, what: string, ...context: unknown[]): asserts ok {
  if (!ok) {
    throw new Error(`${what}: ${JSON.stringify(context)}`);
  }
}

// A configuration of its own per caller. The library reads allow anonymous
// callers (`security: [{}, bearerAuth]`), and this generator sends the
// token whenever the configuration has one: an anonymous read needs a
// configuration without accessToken.
function config(token?: string): Configuration {
  return new Configuration({ basePath: URL, accessToken: token });
}

// totp is an authenticator app's code of a base32 secret at a time step
// (RFC 6238: HMAC-SHA-1, 6 digits, 30 s).
function totp(secret: string, step: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const ch of secret.replace(/=+$/, "")) bits += alphabet.indexOf(ch).toString(2).padStart(5, "0");
  const key = Buffer.from((bits.match(/.{8}/g) ?? []).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac("sha1", key).update(counter).digest();
  const at = (mac[mac.length - 1] ?? 0) & 15;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1000000).padStart(6, "0");
}

async function signupAndLogin(name: string): Promise<[User, Configuration]> {
  const accounts = new AccountsApi(config());
  const user = await accounts.createUser({
    newUser: { username: name, email: `${name}@example.org`, password: PASSWORD },
  });
  check(user.username === name && user.id.startsWith("u_"), "signup", user);
  const session = await accounts.createSession({ login: { login: name, password: PASSWORD } });
  check(session.user.id === user.id && session.token.length > 0, "login", session);
  return [user, config(session.token)];
}

// Every item of a library, two a page, following nextCursor.
async function allPages(as: Configuration, id: string): Promise<[LibraryItem[], number]> {
  const content = new ContentApi(as);
  const items: LibraryItem[] = [];
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const page: LibraryPage = await content.getUserLibrary({ id, limit: 2, cursor });
    items.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === undefined) {
      return [items, pages];
    }
    check(pages < 50, "nextCursor never ran out");
  }
}

// The problem a refused call answered, parsed.
async function problemOf(call: Promise<unknown>): Promise<[number, Problem]> {
  try {
    await call;
  } catch (e) {
    if (e instanceof ResponseError) {
      return [e.response.status, ProblemFromJSON(await e.response.json())];
    }
    throw e;
  }
  throw new Error("the call was accepted");
}

async function main(): Promise<void> {
  const ops = new OperationsApi(config());
  check((await ops.getHealthz()).status === "ok", "healthz");
  const document = await (await ops.getOpenAPI()).text();
  check(document.startsWith("openapi: 3.1"), "openapi.yaml", document.slice(0, 40));
  check((await ops.getConsole()).toLowerCase().includes("<html"), "console");

  const run = Math.random().toString(16).slice(2, 10);
  const [alice, asAlice] = await signupAndLogin(`alice${run}`);
  const [bob, asBob] = await signupAndLogin(`bob${run}`);

  const content = new ContentApi(asAlice);
  const made: Record<Visibility, string> = { public: "", loggedin: "", private: "" };
  for (const visibility of [Visibility.Public, Visibility.Loggedin, Visibility.Private]) {
    const item = await content.createContent({ newContent: { name: `${visibility} notes`, visibility } });
    check(item.visibility === visibility && item.createdBy === alice.id, "create", item);
    made[visibility] = item.id;
  }
  const member = await content.shareContent({
    id: made.private,
    principalId: bob.id,
    contentRoleRequest: { role: ContentRole.Viewer },
  });
  check(member.principalId === bob.id && member.role === ContentRole.Viewer, "share", member);

  // Alice finds bob by the start of his username, in any case: his public
  // view, without an email.
  const people = await new AccountsApi(asAlice).searchPeople({ prefix: `BOB${run}`.slice(0, 6) });
  check(people.items.some((u) => u.id === bob.id) && people.items.every((u) => u.email === undefined), "people", people);

  // The owner pages through all three, newest first.
  const [mine, pages] = await allPages(asAlice, alice.id);
  check(
    JSON.stringify(mine.map((i) => i.id)) === JSON.stringify([made.private, made.loggedin, made.public]),
    "owner's library",
    mine,
  );
  check(pages === 2, "pages of two", pages);
  const times = mine.map((i) => i.lastModified.getTime());
  check(times.every((t, i) => i === 0 || times[i - 1] >= t), "newest first", times);

  // Anonymous callers see the public item only; bob, a session, also the
  // loggedin one, and the private one in his own library.
  const [anonymous] = await allPages(config(), alice.id);
  check(anonymous.length === 1 && anonymous[0].id === made.public, "anonymous read", anonymous);
  const [seenByBob] = await allPages(asBob, alice.id);
  check(
    seenByBob.map((i) => i.visibility).sort().join() === "loggedin,public",
    "bob reads alice's library",
    seenByBob,
  );
  const [bobs] = await allPages(asBob, bob.id);
  check(bobs.length === 1 && bobs[0].id === made.private, "bob's library", bobs);

  // A problem answer arrives parsed: status, code, the field at fault.
  const accounts = new AccountsApi(config());
  const [status, problem] = await problemOf(
    accounts.createUser({ newUser: { username: `carol${run}`, email: "carol@", password: PASSWORD } }),
  );
  check(status === 400 && problem.code === "validation_failed", "bad email", status, problem);
  check(problem.errors?.map((f) => f.field).join() === "email", "the field at fault", problem);
  const [takenStatus, taken] = await problemOf(
    accounts.createUser({
      newUser: { username: `alice${run}`, email: `other${run}@example.org`, password: PASSWORD },
    }),
  );
  check(takenStatus === 409 && taken.code === "conflict", "taken username", takenStatus, taken);
  check(taken.errors?.map((f) => `${f.field}:${f.code}`).join() === "username:taken", "taken field", taken);

  // Bob deletes his account, with his password: it is gone for everyone
  // at once, and the job the answer names finishes the rest (followed
  // without a session, until it reads finished).
  let job = await new AccountsApi(asBob).requestUserDeletion({ id: bob.id, userDeletion: { currentPassword: PASSWORD } });
  check(job.kind === "account_deletion" && job.subject === bob.id, "the deletion's job", job);
  const [goneStatus] = await problemOf(accounts.getUser({ id: bob.id }));
  check(goneStatus === 404, "a deleted account", goneStatus);
  const operations = new OperationsApi(config());
  for (const deadline = Date.now() + 60_000; job.state !== "finished"; ) {
    check(Date.now() < deadline, "the deletion job after 60 s", job);
    await new Promise((resolve) => setTimeout(resolve, 100));
    job = await operations.getJob({ id: job.id });
  }

  // Alice proves her address with the link mailed at signup, then adds an
  // authenticator app: from then on her password answers a challenge
  // (202), and a code from the app makes the session.
  await accounts.confirmEmailVerification({ emailConfirmation: { token: await verifyToken(`${alice.username}@example.org`) } });
  const asAliceAccounts = new AccountsApi(asAlice);
  const enrolment = await asAliceAccounts.enrolTotp({ id: alice.id, totpEnrolmentRequest: { currentPassword: PASSWORD } });
  check(enrolment.otpauthUri.startsWith("otpauth://totp/"), "the enrolment", enrolment);
  const step = Math.floor(Date.now() / 30000);
  const confirmed = await asAliceAccounts.confirmTotp({
    id: alice.id, factorId: enrolment.factor.id, totpCode: { code: totp(enrolment.secret, step) },
  });
  check(confirmed.recoveryCodes?.length === 10, "ten recovery codes", confirmed);
  const challenged = await accounts.createSessionRaw({ login: { login: alice.username, password: PASSWORD } });
  check(challenged.raw.status === 202, "the password alone", challenged.raw.status);
  const challengeBody = LoginChallengeBodyFromJSON(await challenged.raw.json());
  const challenge = challengeBody.challenge;
  check(challengeBody.methods.join() === "totp,recovery_code" && challengeBody.passkey === undefined, "the second steps offered", challengeBody);
  // No passkey yet: a proof's challenge for one is refused, saying so.
  const [noPasskey, why] = await problemOf(asAliceAccounts.createPasskeyChallenge({ id: alice.id }));
  check(noPasskey === 409 && why.code === "no_passkey", "a passkey's challenge without one", noPasskey, why);
  const second = await accounts.completeSecondFactor({ secondFactor: { challenge, code: totp(enrolment.secret, step + 1) } });
  check(second.user.id === alice.id && second.token.length > 0, "the code's session", second);

  console.log(`typescript story: ok (alice ${alice.id}, bob ${bob.id})`);
}

main().catch((e: unknown) => {
  console.error("typescript story failed:", e);
  process.exit(1);
});
