"""The short story of `make test-clients`, through a Python client that
openapi-generator made from openapi.yaml (package shelf_client).

SHELF_URL says where the server is. Each step asserts what a user of the
client relies on; the first failure ends the run with its reason.
"""

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import struct
import time
import urllib.parse

import shelf_client
from shelf_client.exceptions import ApiException

URL = os.environ["SHELF_URL"]
PASSWORD = "correct horse battery"


def client(token=None):
    """A client of its own per caller. The library reads allow anonymous
    callers (`security: [{}, bearerAuth]`), and this generator sends the
    token whenever the configuration has one: an anonymous read needs a
    client configured without a token."""
    config = shelf_client.Configuration(host=URL, access_token=token)
    return shelf_client.ApiClient(config)


def signup_and_login(name):
    anon = client()
    accounts = shelf_client.AccountsApi(anon)
    user = accounts.create_user(shelf_client.NewUser(
        username=name, email=f"{name}@example.org", password=PASSWORD))
    assert user.username == name and user.id.startswith("u_"), user
    session = accounts.create_session(shelf_client.Login(login=name, password=PASSWORD))
    assert session.user.id == user.id and session.token, session
    return user, client(session.token)


def verify_token(address):
    """The token of the verification link the server's log mailer wrote
    to CLIENTS_MAIL_LOG for address (a second factor takes a verified
    address)."""
    for _ in range(100):
        with open(os.environ["CLIENTS_MAIL_LOG"], encoding="utf-8") as log:
            for line in log:
                if "SHELF_MAILER=log" not in line:
                    continue
                mail = json.loads(line)
                found = re.search(r"#/verify\?token=([\w%-]+)", mail.get("text", "")) if mail.get("to") == address else None
                if found:
                    return urllib.parse.unquote(found.group(1))
        time.sleep(0.1)
    raise AssertionError(f"no verification mail to {address}")


def totp(secret, step):
    """An authenticator app's code of a base32 secret at a time step
    (RFC 6238: HMAC-SHA-1, 6 digits, 30 s)."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    mac = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    at = mac[-1] & 15
    return "%06d" % ((struct.unpack(">I", mac[at:at + 4])[0] & 0x7FFFFFFF) % 1000000)


def all_pages(read, **kwargs):
    """Every item of a list, a page of two at a time, following nextCursor."""
    items, cursor, pages = [], None, 0
    while True:
        page = read(limit=2, cursor=cursor, **kwargs)
        items += page.items
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            return items, pages
        assert pages < 50, "nextCursor never ran out"


def main():
    ops = shelf_client.OperationsApi(client())
    assert ops.get_healthz().status == "ok"
    document = ops.get_open_api()
    assert bytes(document).startswith(b"openapi: 3.1"), document[:40]
    assert "<html" in ops.get_console().lower()

    run = secrets.token_hex(4)
    alice, as_alice = signup_and_login(f"alice{run}")
    bob, as_bob = signup_and_login(f"bob{run}")

    content = shelf_client.ContentApi(as_alice)
    made = {}
    for visibility in (shelf_client.Visibility.PUBLIC, shelf_client.Visibility.LOGGEDIN,
                       shelf_client.Visibility.PRIVATE):
        item = content.create_content(shelf_client.NewContent(
            name=f"{visibility.value} notes", visibility=visibility))
        assert item.visibility == visibility and item.created_by == alice.id, item
        made[visibility] = item
    private = made[shelf_client.Visibility.PRIVATE]
    member = content.share_content(private.id, bob.id, shelf_client.ContentRoleRequest(
        role=shelf_client.ContentRole.VIEWER))
    assert member.principal_id == bob.id and member.role == shelf_client.ContentRole.VIEWER, member

    # Alice finds bob by the start of his username, in any case: his
    # public view, without an email.
    people = shelf_client.AccountsApi(as_alice).search_people(prefix=f"BOB{run}"[:6])
    assert any(u.id == bob.id for u in people.items), people
    assert all(u.email is None for u in people.items), people

    # The owner pages through all three, newest first.
    mine, pages = all_pages(shelf_client.ContentApi(as_alice).get_user_library, id=alice.id)
    assert [i.id for i in mine] == [made[v].id for v in reversed(list(made))], mine
    assert pages == 2, pages
    times = [i.last_modified for i in mine]
    assert times == sorted(times, reverse=True), times

    # Anonymous callers see the public item only; bob, a session, also the
    # loggedin one, and the private one in his own library.
    anonymous, _ = all_pages(shelf_client.ContentApi(client()).get_user_library, id=alice.id)
    assert [i.id for i in anonymous] == [made[shelf_client.Visibility.PUBLIC].id], anonymous
    seen_by_bob, _ = all_pages(shelf_client.ContentApi(as_bob).get_user_library, id=alice.id)
    assert {i.visibility for i in seen_by_bob} == {shelf_client.Visibility.PUBLIC,
                                                   shelf_client.Visibility.LOGGEDIN}, seen_by_bob
    bobs, _ = all_pages(shelf_client.ContentApi(as_bob).get_user_library, id=bob.id)
    assert [i.id for i in bobs] == [private.id], bobs

    # A problem answer arrives parsed: status, code, the field at fault.
    try:
        shelf_client.AccountsApi(client()).create_user(shelf_client.NewUser(
            username=f"carol{run}", email="carol@", password=PASSWORD))
        raise AssertionError("a signup with a bad email was accepted")
    except ApiException as e:
        assert e.status == 400, e
        problem = e.data
        assert isinstance(problem, shelf_client.Problem), type(problem)
        assert problem.code == "validation_failed", problem
        # `field` is a reserved word of this generator: the attribute is
        # var_field (docs/clients.md).
        assert [f.var_field for f in problem.errors] == ["email"], problem.errors
    try:
        shelf_client.AccountsApi(client()).create_user(shelf_client.NewUser(
            username=f"alice{run}", email=f"other{run}@example.org", password=PASSWORD))
        raise AssertionError("a taken username was accepted")
    except ApiException as e:
        assert e.status == 409 and e.data.code == "conflict", (e.status, e.body)
        assert [(f.var_field, f.code) for f in e.data.errors] == [("username", "taken")], e.data

    # The text rule travels in the patterns: the client refuses a Hangul
    # filler before sending, and an emoji sequence passes both it and the
    # server.
    try:
        shelf_client.NewContent(name="\u3164", visibility=shelf_client.Visibility.PUBLIC)
        raise AssertionError("the client let a Hangul filler through")
    except ValueError as e:
        assert "name" in str(e), e
    emoji = content.create_content(shelf_client.NewContent(
        name="\U0001F469\U0001F3FD\u200D\U0001F4BB notes \u2764\uFE0F",
        visibility=shelf_client.Visibility.PRIVATE))
    assert emoji.name.startswith("\U0001F469"), emoji

    # Bob deletes his account, with his password: it is gone for everyone
    # at once, and the job the answer names finishes the rest (followed
    # without a session, until it reads finished).
    job = shelf_client.AccountsApi(as_bob).request_user_deletion(
        bob.id, shelf_client.UserDeletion(current_password=PASSWORD))
    assert job.kind == shelf_client.JobKind.ACCOUNT_DELETION and job.subject == bob.id, job
    try:
        shelf_client.AccountsApi(client()).get_user(bob.id)
        raise AssertionError("a deleted account still shows")
    except ApiException as e:
        assert e.status == 404, (e.status, e.body)
    deadline = time.monotonic() + 60
    while job.state != shelf_client.JobState.FINISHED:
        assert time.monotonic() < deadline, ("the deletion job after 60 s", job)
        time.sleep(0.1)
        job = shelf_client.OperationsApi(client()).get_job(job.id)

    # Alice proves her address with the link mailed at signup, then adds an
    # authenticator app: from then on her password answers a challenge
    # (202), and a code from the app makes the session.
    shelf_client.AccountsApi(client()).confirm_email_verification(
        shelf_client.EmailConfirmation(token=verify_token(f"{alice.username}@example.org")))
    accounts = shelf_client.AccountsApi(as_alice)
    enrolment = accounts.enrol_totp(alice.id, shelf_client.TotpEnrolmentRequest(current_password=PASSWORD))
    assert enrolment.otpauth_uri.startswith("otpauth://totp/"), enrolment
    step = int(time.time()) // 30
    confirmed = accounts.confirm_totp(alice.id, enrolment.factor.id,
                                      shelf_client.TotpCode(code=totp(enrolment.secret, step)))
    assert len(confirmed.recovery_codes or []) == 10, confirmed
    anon_accounts = shelf_client.AccountsApi(client())
    answer = anon_accounts.create_session_with_http_info(
        shelf_client.Login(login=alice.username, password=PASSWORD))
    assert answer.status_code == 202 and answer.data.challenge, (answer.status_code, answer.data)
    assert [str(m.value) for m in answer.data.methods] == ["totp", "recovery_code"], answer.data
    assert answer.data.passkey is None, answer.data
    # No passkey yet: a proof's challenge for one is refused, saying so.
    try:
        accounts.create_passkey_challenge(alice.id)
        raise AssertionError("a passkey's challenge without a passkey was accepted")
    except ApiException as e:
        assert e.status == 409 and e.data.code == "no_passkey", (e.status, e.body)
    session = anon_accounts.complete_second_factor(shelf_client.SecondFactor(
        challenge=answer.data.challenge, code=totp(enrolment.secret, step + 1)))
    assert session.user.id == alice.id and session.token, session

    print(f"python story: ok (alice {alice.id}, bob {bob.id})")


if __name__ == "__main__":
    main()
