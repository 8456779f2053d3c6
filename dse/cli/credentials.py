"""Storage credentials kept off the command line (issue 50).

A password on the command line (``--storage postgresql://user:pw@host/db``) is visible to every
user of the host in ``ps`` and stays in the shell's history. So:

* ``--storage`` may come from the environment variable ``DSE_STORAGE`` (``storage_url``): the
  flag wins, then ``DSE_STORAGE``, then the study file's ``storage``, then the default SQLite file.
  A process's environment is readable only by its own user and root.
* A URL without a password (``postgresql://user@host/db``, ``postgresql:///db?service=NAME``)
  lets libpq find it: ``PGPASSWORD``, ``~/.pgpass`` (or ``PGPASSFILE``), a service of
  ``PGSERVICEFILE`` / ``~/.pg_service.conf``.
* ``dse worker`` warns once when its ``--storage`` carries a password
  (``warn_password_on_command_line``) and overwrites the password in its own process title
  (``hide_from_process_title``; Linux), so it shows in ``ps`` only while the process starts.
* Every message that may quote a URL masks it (``dse.search.storage.storage.mask_url`` /
  ``mask_text``); ``hide_secrets`` is the last guard on the one-line errors of ``dse``.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable

STORAGE_ENV = "DSE_STORAGE"


def storage_url(given: str | None) -> str | None:
    """The storage a command uses: ``--storage`` if given, else ``DSE_STORAGE`` (None if unset or blank)."""
    if given:
        return given
    env = os.environ.get(STORAGE_ENV, "").strip()
    return env or None


def has_password(url: str | None) -> bool:
    """Whether a storage URL carries a password (in its user info or a password-like query parameter)."""
    from dse.search.storage.storage import mask_url
    return bool(url) and mask_url(url) != url


def warn_password_on_command_line(given: str | None, command: str) -> bool:
    """One warning line on stderr when ``--storage`` (as typed on the command line) carries a
    password; True if it did. The password is then hidden from the process title."""
    if not given or not has_password(given):
        return False
    print(f"dse {command}: warning: the --storage URL carries a password: every user of this host can read it "
          f"in `ps` and your shell keeps it in its history; set {STORAGE_ENV}=URL in the environment instead, or "
          f"give the URL without its password and let libpq find it (PGPASSWORD, ~/.pgpass, PGSERVICEFILE)",
          file=sys.stderr, flush=True)
    from dse.search.storage.storage import secrets_of
    hide_from_process_title(secrets_of(given))
    return True


def hide_from_process_title(secrets: Iterable[str]) -> bool:
    """Overwrite each of ``secrets`` with ``*`` in this process's original argument memory (what
    ``ps`` and ``/proc/PID/cmdline`` show); True if one was found and hidden. Linux only, best
    effort: anything unexpected leaves the title as it was. ``sys.argv`` (Python's own copy) is
    not changed."""
    import ctypes
    wanted = [s.encode() for s in secrets if s]
    if not wanted or not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])     # proc(5) fields 48, 49: arg_start, arg_end
        if not 0 < start < end or end - start > 1 << 20:
            return False
        args = ctypes.string_at(start, end - start)
        hidden = False
        for secret in wanted:
            at = args.find(secret)
            while at >= 0:
                ctypes.memmove(start + at, b"*" * len(secret), len(secret))
                hidden = True
                at = args.find(secret, at + len(secret))
        return hidden
    except (OSError, ValueError, IndexError):
        return False


def hide_secrets(text: str, urls: Iterable[str | None]) -> str:
    """``text`` with the secrets of every URL of ``urls`` and of ``DSE_STORAGE`` masked."""
    from dse.search.storage.storage import mask_text
    for url in [*urls, os.environ.get(STORAGE_ENV)]:
        if url:
            text = mask_text(text, url)
    return text
