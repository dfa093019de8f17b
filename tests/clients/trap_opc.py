"""The anonymous-read trap of openapi-python-client, kept measured: `make
test-clients` runs `mypy --strict` over this file and expects exactly the
error below. An anonymous read passes a plain Client to a route whose
security allows anonymous callers (`security: [{}, bearerAuth]`), and the
generator types such routes as needing an AuthenticatedClient (its open
bug #1372). Once a pinned version types them `AuthenticatedClient |
Client`, this check fails: story_opc.py can then drop its cast, and
docs/clients.md#clients-other-generators-make its workaround.
"""

from shelf_client import Client
from shelf_client.api.content import get_user_library

get_user_library.sync("u_aaaaaaaaaaaaaaaaaaaaaaaaaa", client=Client(base_url="http://127.0.0.1"))
