"""optuna-dashboard's own HTTP API, called in-process through its WSGI app (no server, no port)."""
from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest


def dashboard_get(url: str) -> Callable[[str], dict]:
    """A ``get(path) -> JSON`` of optuna-dashboard's API over the storage ``url`` (asserts 200)."""
    optuna_dashboard = pytest.importorskip("optuna_dashboard")
    from wsgiref.util import setup_testing_defaults
    app = optuna_dashboard.wsgi(url)

    def get(path: str) -> dict:
        env: dict = {}
        setup_testing_defaults(env)
        env["PATH_INFO"], env["REQUEST_METHOD"], env["wsgi.input"] = path, "GET", io.BytesIO()
        status = []
        body = b"".join(app(env, lambda s, h, *a: status.append(s)))
        assert status[0].startswith("200"), (path, status, body[:300])
        return json.loads(body)
    return get
