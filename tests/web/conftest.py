"""The judging-server tests: token hashes made cheap where no server process is involved."""
from __future__ import annotations

import pytest

#: modules whose tests start ``pyterrier-noise serve`` as a process: the tokens they make here must verify there
SERVER_PROCESS_MODULES = {"test_web_browser.py", "test_web_hardening.py", "test_web_load.py"}


@pytest.fixture(autouse=True)
def cheap_token_hashes(request, monkeypatch):
    """Token secrets hashed with scrypt at n = 2**8 instead of the server's 2**14 for in-process tests.

    Every account made and every login hashes a secret (about 40 ms each at 2**14, half the time of
    these tests); what they check (the flow, the stored hash never being the token, refusals) does not
    depend on the cost.  The tests that start the server as a process keep the real cost."""
    if request.path.name not in SERVER_PROCESS_MODULES:
        from pyterrier_noise.web import auth
        monkeypatch.setitem(auth.SCRYPT, "n", 2 ** 8)
    yield
