"""The short story of `make test-clients` through a client that
openapi-python-client made from openapi.yaml (package shelf_client), type
checked with `mypy --strict` together with the generated package.

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
from typing import Any, TypeVar, cast

import httpx
from shelf_client import AuthenticatedClient, Client
from shelf_client.api.accounts import (complete_second_factor, confirm_email_verification, confirm_totp, create_passkey_challenge, create_session,
                                       create_user, enrol_totp, search_people)
from shelf_client.api.content import create_content, get_content, get_user_library, share_content
from shelf_client.api.operations import get_healthz, get_open_api
from shelf_client.models import (
    Content,
    ContentMember,
    ContentRole,
    ContentRoleRequest,
    EmailConfirmation,
    HealthStatus,
    HealthStatusStatus,
    LibraryItem,
    LibraryPage,
    Login,
    LoginChallengeBody,
    NewContent,
    NewUser,
    Problem,
    SecondFactor,
    Session,
    TotpCode,
    TotpConfirmation,
    TotpEnrolment,
    TotpEnrolmentRequest,
    User,
    UserList,
    Visibility,
)
from shelf_client.types import UNSET, File, Response

URL = os.environ["SHELF_URL"]
PASSWORD = "correct horse battery"

T = TypeVar("T")


def anonymous() -> AuthenticatedClient:
    """A client that sends no token. The generator types every route whose
    security allows anonymous callers (`security: [{}, bearerAuth]`) as
    needing an AuthenticatedClient (its open bug #1372), so a plain Client
    fails mypy there, and an AuthenticatedClient with an empty token makes
    the header `Authorization: Bearer `, which httpx refuses to send. The
    plain Client has everything the endpoint functions use: the cast says
    so to the type checker."""
    return cast(AuthenticatedClient, Client(base_url=URL))


def signed_in(token: str) -> AuthenticatedClient:
    return AuthenticatedClient(base_url=URL, token=token)


def ok(what: str, answer: Response[Any], kind: type[T]) -> T:
    """The answer's model when it is a success; the failure with its status
    and problem otherwise."""
    parsed = answer.parsed
    if not isinstance(parsed, kind):
        raise AssertionError(f"{what}: {answer.status_code} {parsed!r}")
    return parsed


def problem_of(what: str, answer: Response[Any]) -> tuple[int, Problem]:
    """The problem a refused call answered, parsed, and its status."""
    parsed = answer.parsed
    if not isinstance(parsed, Problem):
        raise AssertionError(f"{what} was accepted: {answer.status_code} {parsed!r}")
    content_type = answer.headers.get("content-type")
    assert content_type == "application/problem+json", (what, content_type)
    return answer.status_code, parsed


def signup_and_login(name: str) -> tuple[User, AuthenticatedClient]:
    user = ok("signup", create_user.sync_detailed(client=anonymous(), body=NewUser(
        username=name, email=f"{name}@example.org", password=PASSWORD)), User)
    assert user.username == name and user.id.startswith("u_"), user
    session = ok("login", create_session.sync_detailed(client=anonymous(), body=Login(
        login=name, password=PASSWORD)), Session)
    assert session.user.id == user.id and session.token, session
    return user, signed_in(session.token)


def verify_token(address: str) -> str:
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


def totp(secret: str, step: int) -> str:
    """An authenticator app's code of a base32 secret at a time step
    (RFC 6238: HMAC-SHA-1, 6 digits, 30 s)."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    mac = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    at = mac[-1] & 15
    value: int = struct.unpack(">I", mac[at:at + 4])[0]
    return "%06d" % ((value & 0x7FFFFFFF) % 1000000)


def all_pages(client: AuthenticatedClient, user_id: str) -> tuple[list[LibraryItem], int]:
    """Every item of a library, a page of two at a time, following nextCursor."""
    items: list[LibraryItem] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = ok("library page", get_user_library.sync_detailed(
            user_id, client=client, limit=2, cursor=UNSET if cursor is None else cursor), LibraryPage)
        items += page.items
        pages += 1
        if isinstance(page.next_cursor, str):
            cursor = page.next_cursor
        else:
            return items, pages
        assert pages < 50, "nextCursor never ran out"


def main() -> None:
    health = ok("healthz", get_healthz.sync_detailed(client=Client(base_url=URL)), HealthStatus)
    assert health.status == HealthStatusStatus.OK, health
    # openapi.yaml is application/yaml, which this generator does not read
    # unless told (tests/clients/openapi-python-client.yaml): bytes.
    document = ok("openapi.yaml", get_open_api.sync_detailed(client=Client(base_url=URL)), File)
    assert document.payload.read().startswith(b"openapi: 3.1"), document

    run = secrets.token_hex(4)
    alice, as_alice = signup_and_login(f"alice{run}")
    bob, as_bob = signup_and_login(f"bob{run}")

    made: dict[Visibility, Content] = {}
    for visibility in (Visibility.PUBLIC, Visibility.LOGGEDIN, Visibility.PRIVATE):
        item = ok("create", create_content.sync_detailed(client=as_alice, body=NewContent(
            name=f"{visibility.value} notes", visibility=visibility)), Content)
        assert item.visibility == visibility and item.created_by == alice.id, item
        made[visibility] = item
    private = made[Visibility.PRIVATE]
    member = ok("share", share_content.sync_detailed(
        private.id, bob.id, client=as_alice, body=ContentRoleRequest(role=ContentRole.VIEWER)), ContentMember)
    assert member.principal_id == bob.id and member.role == ContentRole.VIEWER, member

    # Alice finds bob by the start of his username, in any case: his public
    # view, without an email.
    people = ok("people", search_people.sync_detailed(client=as_alice, prefix=f"BOB{run}"[:6]), UserList)
    assert any(u.id == bob.id for u in people.items), people
    assert all(u.email is UNSET for u in people.items), people

    # An anonymous caller reads the public item; the loggedin one is not
    # there for it (404, as if it did not exist).
    public = made[Visibility.PUBLIC]
    read = ok("anonymous read", get_content.sync_detailed(public.id, client=anonymous()), Content)
    assert read.id == public.id and read.name == "public notes", read
    status, hidden = problem_of("an anonymous read of a loggedin item",
                                get_content.sync_detailed(made[Visibility.LOGGEDIN].id, client=anonymous()))
    assert status == 404 and hidden.code == "not_found", (status, hidden)
    # The way that type-checks without a cast, and fails: an empty token
    # makes the header `Bearer `, which httpx will not send.
    try:
        get_content.sync_detailed(public.id, client=AuthenticatedClient(base_url=URL, token=""))
        raise AssertionError("a read with an empty token went out")
    except httpx.LocalProtocolError as e:
        assert "Illegal header value" in str(e), e

    # The owner pages through all three, newest first.
    mine, pages = all_pages(as_alice, alice.id)
    assert [i.id for i in mine] == [made[v].id for v in reversed(list(made))], mine
    assert pages == 2, pages
    times = [i.last_modified for i in mine]
    assert times == sorted(times, reverse=True), times

    # Anonymous callers see the public item only; bob, a session, also the
    # loggedin one, and the private one in his own library.
    seen_anonymously, _ = all_pages(anonymous(), alice.id)
    assert [i.id for i in seen_anonymously] == [public.id], seen_anonymously
    seen_by_bob, _ = all_pages(as_bob, alice.id)
    assert {i.visibility for i in seen_by_bob} == {Visibility.PUBLIC, Visibility.LOGGEDIN}, seen_by_bob
    bobs, _ = all_pages(as_bob, bob.id)
    assert [i.id for i in bobs] == [private.id], bobs

    # A problem answer arrives parsed: status, code, the field at fault.
    status, problem = problem_of("a signup with a bad email", create_user.sync_detailed(
        client=anonymous(), body=NewUser(username=f"carol{run}", email="carol@", password=PASSWORD)))
    assert status == 400 and problem.code == "validation_failed", (status, problem)
    assert isinstance(problem.errors, list) and [f.field for f in problem.errors] == ["email"], problem
    status, taken = problem_of("a taken username", create_user.sync_detailed(
        client=anonymous(), body=NewUser(username=f"alice{run}", email=f"other{run}@example.org",
                                         password=PASSWORD)))
    assert status == 409 and taken.code == "conflict", (status, taken)
    assert isinstance(taken.errors, list), taken
    assert [(f.field, f.code) for f in taken.errors] == [("username", "taken")], taken

    # This client keeps no pattern: a Hangul filler for a name goes out,
    # and the server's answer names the field.
    status, blank = problem_of("a blank name", create_content.sync_detailed(
        client=as_alice, body=NewContent(name="\u3164", visibility=Visibility.PUBLIC)))
    assert status == 400 and blank.code == "validation_failed", (status, blank)
    assert isinstance(blank.errors, list) and [f.field for f in blank.errors] == ["name"], blank

    # Alice proves her address with the link mailed at signup, then adds an
    # authenticator app: from then on her password answers a challenge
    # (202), and a code from the app makes the session.
    verified = confirm_email_verification.sync_detailed(client=anonymous(), body=EmailConfirmation(
        token=verify_token(f"{alice.username}@example.org")))
    assert verified.status_code == 204, (verified.status_code, verified.content)
    enrolment = ok("enrol", enrol_totp.sync_detailed(alice.id, client=as_alice, body=TotpEnrolmentRequest(
        current_password=PASSWORD)), TotpEnrolment)
    assert enrolment.otpauth_uri.startswith("otpauth://totp/"), enrolment
    step = int(time.time()) // 30
    confirmed = ok("confirm", confirm_totp.sync_detailed(alice.id, enrolment.factor.id, client=as_alice, body=TotpCode(
        code=totp(enrolment.secret, step))), TotpConfirmation)
    assert isinstance(confirmed.recovery_codes, list) and len(confirmed.recovery_codes) == 10, confirmed
    challenged = ok("the password alone", create_session.sync_detailed(client=anonymous(), body=Login(
        login=alice.username, password=PASSWORD)), LoginChallengeBody)
    assert [m.value for m in challenged.methods] == ["totp", "recovery_code"], challenged
    assert challenged.passkey is UNSET, challenged
    # No passkey yet: a proof's challenge for one is refused, saying so.
    status, why = problem_of("a passkey's challenge without one", create_passkey_challenge.sync_detailed(
        alice.id, client=as_alice))
    assert status == 409 and why.code == "no_passkey", (status, why)
    second = ok("the code", complete_second_factor.sync_detailed(client=anonymous(), body=SecondFactor(
        challenge=challenged.challenge, code=totp(enrolment.secret, step + 1))), Session)
    assert second.user.id == alice.id and second.token, second

    print(f"openapi-python-client story: ok (alice {alice.id}, bob {bob.id})")


if __name__ == "__main__":
    main()
