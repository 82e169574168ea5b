"""Tokens, login cookies and cross-site request forgery checks for the judging server.

* An account's token is ``pn_<id>_<secret>``: the public ``id`` finds the account, the secret is
  stored only as a salted scrypt hash (``hashlib.scrypt``, n=2**14, r=8, p=1), so a copy of the
  session's files does not give anybody a way in.  The token is shown once, when it is created.
* Logging in with a token starts a login: a random cookie value (stored as its SHA-256; 256 random
  bits need no slow hash) and a per-login CSRF token that every form and API post must carry
  (compared in constant time).  Cookies are ``HttpOnly`` and ``SameSite=Strict``.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets

__all__ = ["new_token", "parse_token", "hash_secret", "verify_secret", "new_login", "login_key", "same"]

_TOKEN = re.compile(r"^pn_([0-9a-f]{12})_([A-Za-z0-9_-]{32,64})$")
SCRYPT = {"n": 2 ** 14, "r": 8, "p": 1, "dklen": 32}


def new_token() -> tuple[str, str, str]:
    """A fresh token: ``(token, id, secret)``."""
    tid = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return f"pn_{tid}_{secret}", tid, secret


def parse_token(token: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed token, else None."""
    m = _TOKEN.match(token.strip()) if isinstance(token, str) else None
    return (m.group(1), m.group(2)) if m else None


def hash_secret(secret: str, salt: bytes | None = None) -> tuple[bytes, bytes]:
    """``(salt, scrypt hash)`` of a token's secret."""
    salt = secrets.token_bytes(16) if salt is None else salt
    return salt, hashlib.scrypt(secret.encode("utf-8"), salt=salt, maxmem=64 * 2 ** 20, **SCRYPT)


def verify_secret(secret: str, salt: bytes, digest: bytes) -> bool:
    """Whether ``secret`` hashes to ``digest`` with ``salt`` (constant-time comparison)."""
    return hmac.compare_digest(hash_secret(secret, salt)[1], digest)


def new_login() -> tuple[str, str]:
    """A fresh login: ``(cookie value, CSRF token)``."""
    return secrets.token_urlsafe(32), secrets.token_urlsafe(32)


def login_key(cookie: str) -> str:
    """What is stored of a login cookie: its SHA-256 (hex)."""
    return hashlib.sha256(cookie.encode("utf-8")).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two non-empty strings (a missing value never matches)."""
    if not a or not b:
        return False
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
