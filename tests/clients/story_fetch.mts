// The short story of `make test-clients` through openapi-fetch, typed by
// the paths openapi-typescript made from openapi.yaml (shelf-api.d.ts),
// compiled with `tsc --strict` as an ES module and run by Node's own fetch.
//
// SHELF_URL says where the server is. Each step asserts what a user of the
// client relies on; the first failure ends the run with its reason.

import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./shelf-api.js";

type Problem = components["schemas"]["Problem"];
type LibraryItem = components["schemas"]["LibraryItem"];
type User = components["schemas"]["User"];
type Shelf = Client<paths>;

import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";

const URL = process.env.SHELF_URL ?? "";
const PASSWORD = "correct horse battery";

function check(ok: boolean, what: string, ...context: unknown[]): asserts ok {
  if (!ok) {
    throw new Error(`${what}: ${JSON.stringify(context)}`);
  }
}

// A client of its own per caller. openapi-fetch knows nothing of the
// document's security: the token is a header of the client, sent on every
// call, so an anonymous read (`security: [{}, bearerAuth]`) is a client
// made without it.
function client(token?: string): Shelf {
  return createClient<paths>({
    baseUrl: URL,
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
  });
}

// The answer's body when it is a success, or the failure with its problem.
function ok<T>(what: string, answer: { data?: T; error?: unknown; response: Response }): T {
  check(answer.data !== undefined, what, answer.response.status, answer.error);
  return answer.data;
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

// verifyToken waits for the verification link the server's log mailer
// wrote to CLIENTS_MAIL_LOG for address, and answers its token.
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

async function signupAndLogin(name: string): Promise<[User, Shelf]> {
  const anonymous = client();
  const user = ok(
    "signup",
    await anonymous.POST("/v1/users", {
      body: { username: name, email: `${name}@example.org`, password: PASSWORD },
    }),
  );
  check(user.username === name && user.id.startsWith("u_"), "signup", user);
  const answer = ok(
    "login",
    await anonymous.POST("/v1/sessions", { body: { login: name, password: PASSWORD } }),
  );
  // An account with a second factor is answered 202 with a challenge
  // (LoginChallengeBody) instead; this one has none.
  if (!("token" in answer)) {
    throw new Error("login: a challenge for an account without a second factor: " + JSON.stringify(answer));
  }
  const session = answer;
  check(session.user.id === user.id && session.token.length > 0, "login", session);
  return [user, client(session.token)];
}

// Every item of a library, two a page, following nextCursor.
async function allPages(as: Shelf, id: string): Promise<[LibraryItem[], number]> {
  const items: LibraryItem[] = [];
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = ok(
      "library page",
      await as.GET("/v1/users/{id}/library", { params: { path: { id }, query: { limit: 2, cursor } } }),
    );
    items.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === undefined) {
      return [items, pages];
    }
    check(pages < 50, "nextCursor never ran out");
  }
}

// The problem a refused call answered: openapi-fetch hands it over typed
// as the union of the operation's error bodies, all of them Problem here.
function problemOf(what: string, answer: { error?: Problem; response: Response }): [number, Problem] {
  check(answer.error !== undefined, `${what} was accepted`, answer.response.status);
  check(
    answer.response.headers.get("Content-Type") === "application/problem+json",
    `${what}: content type`,
    answer.response.headers.get("Content-Type"),
  );
  return [answer.response.status, answer.error];
}

async function main(): Promise<void> {
  const anonymous = client();
  check(ok("healthz", await anonymous.GET("/healthz")).status === "ok", "healthz");

  const run = Math.random().toString(16).slice(2, 10);
  const [alice, asAlice] = await signupAndLogin(`alice${run}`);
  const [bob, asBob] = await signupAndLogin(`bob${run}`);

  const made: Record<components["schemas"]["Visibility"], string> = { public: "", loggedin: "", private: "" };
  for (const visibility of ["public", "loggedin", "private"] as const) {
    const item = ok(
      "create",
      await asAlice.POST("/v1/content", { body: { name: `${visibility} notes`, visibility } }),
    );
    check(item.visibility === visibility && item.createdBy === alice.id, "create", item);
    made[visibility] = item.id;
  }
  const member = ok(
    "share",
    await asAlice.PUT("/v1/content/{id}/members/{principalId}", {
      params: { path: { id: made.private, principalId: bob.id } },
      body: { role: "viewer" },
    }),
  );
  check(member.principalId === bob.id && member.role === "viewer", "share", member);

  // Alice finds bob by the start of his username, in any case: his public
  // view, without an email.
  const people = ok("people", await asAlice.GET("/v1/people", { params: { query: { prefix: `BOB${run}`.slice(0, 6) } } }));
  check(people.items.some((u) => u.id === bob.id) && people.items.every((u) => u.email === undefined), "people", people);

  // An anonymous caller reads the public item; the loggedin one is not
  // there for it (404, as if it did not exist).
  const read = ok(
    "anonymous read",
    await anonymous.GET("/v1/content/{id}", { params: { path: { id: made.public } } }),
  );
  check(read.id === made.public && read.name === "public notes", "anonymous read", read);
  const [hiddenStatus, hidden] = problemOf(
    "an anonymous read of a loggedin item",
    await anonymous.GET("/v1/content/{id}", { params: { path: { id: made.loggedin } } }),
  );
  check(hiddenStatus === 404 && hidden.code === "not_found", "loggedin item, anonymously", hiddenStatus, hidden);

  // The owner pages through all three, newest first.
  const [mine, pages] = await allPages(asAlice, alice.id);
  check(
    JSON.stringify(mine.map((i) => i.id)) === JSON.stringify([made.private, made.loggedin, made.public]),
    "owner's library",
    mine,
  );
  check(pages === 2, "pages of two", pages);
  // openapi-typescript keeps date-times as the strings the server sent.
  const times = mine.map((i) => Date.parse(i.lastModified));
  check(times.every((t, i) => !Number.isNaN(t) && (i === 0 || times[i - 1] >= t)), "newest first", mine);

  // Anonymous callers see the public item only; bob, a session, also the
  // loggedin one, and the private one in his own library.
  const [seenAnonymously] = await allPages(anonymous, alice.id);
  check(
    seenAnonymously.length === 1 && seenAnonymously[0].id === made.public,
    "anonymous library",
    seenAnonymously,
  );
  const [seenByBob] = await allPages(asBob, alice.id);
  check(
    seenByBob.map((i) => i.visibility).sort().join() === "loggedin,public",
    "bob reads alice's library",
    seenByBob,
  );
  const [bobs] = await allPages(asBob, bob.id);
  check(bobs.length === 1 && bobs[0].id === made.private, "bob's library", bobs);

  // A problem answer arrives parsed: status, code, the field at fault.
  const [status, problem] = problemOf(
    "a signup with a bad email",
    await anonymous.POST("/v1/users", {
      body: { username: `carol${run}`, email: "carol@", password: PASSWORD },
    }),
  );
  check(status === 400 && problem.code === "validation_failed", "bad email", status, problem);
  check(problem.errors?.map((f) => f.field).join() === "email", "the field at fault", problem);
  const [takenStatus, taken] = problemOf(
    "a taken username",
    await anonymous.POST("/v1/users", {
      body: { username: `alice${run}`, email: `other${run}@example.org`, password: PASSWORD },
    }),
  );
  check(takenStatus === 409 && taken.code === "conflict", "taken username", takenStatus, taken);
  check(taken.errors?.map((f) => `${f.field}:${f.code}`).join() === "username:taken", "taken field", taken);

  // These types keep no pattern: a Hangul filler for a name goes out, and
  // the server's answer names the field.
  const [blankStatus, blank] = problemOf(
    "a blank name",
    await asAlice.POST("/v1/content", { body: { name: "\u3164", visibility: "public" } }),
  );
  check(blankStatus === 400 && blank.code === "validation_failed", "blank name", blankStatus, blank);
  check(blank.errors?.map((f) => f.field).join() === "name", "blank name's field", blank);

  // Alice adds an authenticator app: from then on her password answers a
  // challenge (202), and a code from the app makes the session. A factor
  // takes a verified address: she follows her signup's link first.
  const verified = await anonymous.POST("/v1/email-verifications/confirm", {
    body: { token: await verifyToken(`${alice.username}@example.org`) },
  });
  check(verified.response.status === 204, "verify", verified.response.status, verified.error);
  const enrolment = ok(
    "enrol",
    await asAlice.POST("/v1/users/{id}/factors", { params: { path: { id: alice.id } }, body: { currentPassword: PASSWORD } }),
  );
  check(enrolment.otpauthUri.startsWith("otpauth://totp/"), "the enrolment", enrolment);
  const step = Math.floor(Date.now() / 30000);
  const confirmed = ok(
    "confirm",
    await asAlice.POST("/v1/users/{id}/factors/{factorId}/confirmation", {
      params: { path: { id: alice.id, factorId: enrolment.factor.id } },
      body: { code: totp(enrolment.secret, step) },
    }),
  );
  check(confirmed.recoveryCodes?.length === 10, "ten recovery codes", confirmed);
  const challenged = ok("the password alone", await anonymous.POST("/v1/sessions", { body: { login: alice.username, password: PASSWORD } }));
  check("challenge" in challenged, "a challenge, not a session", challenged);
  check("methods" in challenged && challenged.methods.join() === "totp,recovery_code", "the second steps offered", challenged);
  // No passkey yet: a proof's challenge for one is refused, saying so.
  const [noPasskey, why] = problemOf(
    "a passkey's challenge without one",
    await asAlice.POST("/v1/users/{id}/passkey-challenges", { params: { path: { id: alice.id } } }),
  );
  check(noPasskey === 409 && why.code === "no_passkey", "no passkey", noPasskey, why);
  const second = ok(
    "the code",
    await anonymous.POST("/v1/sessions/second-factor", { body: { challenge: challenged.challenge, code: totp(enrolment.secret, step + 1) } }),
  );
  check(second.user.id === alice.id && second.token.length > 0, "the code's session", second);

  console.log(`openapi-fetch story: ok (alice ${alice.id}, bob ${bob.id})`);
}

main().catch((e: unknown) => {
  console.error("openapi-fetch story failed:", e);
  process.exit(1);
});
