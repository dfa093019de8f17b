"""make fuzz-api's schemathesis hooks (tests/fuzz/fuzz-api.sh loads them).

The admin pass runs as one account, whose bearer token the script passes
in FUZZ_TOKEN and whose id in FUZZ_USER_ID; the anonymous pass sets
neither, and these hooks then do nothing.

- The pass keeps its credentials: a request that would end the caller's
  own account or sessions (a stateful link fills {id} with the caller's
  id from GET /v1/me, and the fuzzer then deletes itself) is sent for an
  id no account has instead, and answers 404 like any unknown user. Every
  other id, other users' deletions and revocations included, is fuzzed as
  generated.
- A run whose credentials die fails: an answer 401 `unauthorized` to a
  request that carried the pass's own token means the session or the
  account is gone, and every later request of the pass would go
  unauthenticated without failing anything.
"""

import json
import os

import schemathesis

TOKEN = os.environ.get("FUZZ_TOKEN", "")
USER_ID = os.environ.get("FUZZ_USER_ID", "")
# An id of the right form that no account has (ids are 26 random base32
# characters; this one is never drawn in practice).
NOBODY = "u_" + "a" * 26

# The operations that end the account or the sessions of {id}.
ENDS_THE_CALLER = {
    ("DELETE", "/v1/users/{id}"),
    ("POST", "/v1/users/{id}/deletion"),
    ("DELETE", "/v1/users/{id}/sessions"),
    ("DELETE", "/v1/users/{id}/sessions/{sessionId}"),
}


@schemathesis.hook
def before_call(context, case, kwargs):
    if not USER_ID or (case.method.upper(), case.path) not in ENDS_THE_CALLER:
        return
    params = case.path_parameters or {}
    if params.get("id") == USER_ID:
        params["id"] = NOBODY


@schemathesis.check
def credentials_kept(ctx, response, case):
    """The pass's own token is never refused: its session and account live."""
    if not TOKEN or response.status_code != 401:
        return None
    if response.request.headers.get("Authorization") != "Bearer " + TOKEN:
        return None  # a request sent without the token, or with another
    try:
        code = json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        code = None
    if code == "unauthorized":
        raise AssertionError(
            "the fuzzer's own token was refused (401 unauthorized): its session or account "
            "ended, and the rest of the pass would run unauthenticated"
        )
    return None
