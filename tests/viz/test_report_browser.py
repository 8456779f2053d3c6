"""The study report in a real browser: Debian's headless Chromium opens the HTML file from disk
and must render it with no console error, no failed image and no network request; a screenshot
is written beside the report (``DSE_REPORT_SCREENSHOT`` keeps a copy).

The browser is driven over the Chrome DevTools Protocol with a minimal client on tornado's
websocket (tornado is already installed with ipykernel, which the test extra needs for the
notebooks), so no browser-automation package is added. Without Chromium the test skips locally
and fails under CI (``.ci/run`` installs it).
"""
from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dse.cli import main

pytestmark = pytest.mark.timeout(300)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("DSE_CI"):
        pytest.fail("DSE_CI is set but Chromium is missing: .ci/run must install it")
    pytest.skip("no Chromium (apt-get install chromium)")


class CDP:
    """Just enough of the DevTools protocol: send a command, collect events."""

    def __init__(self, ws):
        self.ws, self.ids, self.events = ws, itertools.count(1), []

    async def send(self, method: str, session: str | None = None, **params):
        i = next(self.ids)
        msg = {"id": i, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        await self.ws.write_message(json.dumps(msg))
        while True:
            raw = await asyncio.wait_for(self.ws.read_message(), 60)
            if raw is None:
                raise RuntimeError("browser closed the connection")
            data = json.loads(raw)
            if data.get("id") == i:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result", {})
            self.events.append(data)

    async def wait_for(self, method: str, timeout: float = 60):
        async def loop():
            while not any(e.get("method") == method for e in self.events):
                raw = await self.ws.read_message()
                if raw is None:
                    raise RuntimeError("browser closed the connection")
                self.events.append(json.loads(raw))
        await asyncio.wait_for(loop(), timeout)


async def _visit(ws_url: str, page_url: str) -> dict:
    from tornado.websocket import websocket_connect
    ws = await websocket_connect(ws_url, max_message_size=256 * 1024 * 1024)
    cdp = CDP(ws)
    target = (await cdp.send("Target.createTarget", url="about:blank"))["targetId"]
    sess = (await cdp.send("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        await cdp.send(f"{domain}.enable", sess)
    await cdp.send("Emulation.setDeviceMetricsOverride", sess, width=1200, height=1800, deviceScaleFactor=1,
                   mobile=False)
    cdp.events.clear()
    await cdp.send("Page.navigate", sess, url=page_url)
    await cdp.wait_for("Page.loadEventFired")
    probe = ("JSON.stringify({sections: [...document.querySelectorAll('section')].map(s => s.id),"
             " images: [...document.images].map(i => [i.complete, i.naturalWidth]),"
             " height: document.body.scrollHeight})")
    page = json.loads((await cdp.send("Runtime.evaluate", sess, expression=probe, returnByValue=True))
                      ["result"]["value"])
    shot = await cdp.send("Page.captureScreenshot", sess, format="png")
    ws.close()
    return {"events": cdp.events, "page": page, "png": base64.b64decode(shot["data"])}


def _browse(html_path: Path, tmp: Path) -> dict:
    exe = _chromium()
    proc = subprocess.Popen(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--remote-debugging-port=0", f"--user-data-dir={tmp / 'profile'}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ws_url = None
        for line in proc.stderr:
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                ws_url = m.group(1)
                break
        assert ws_url, "Chromium did not open its DevTools port"
        return asyncio.run(_visit(ws_url, html_path.resolve().as_uri()))
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_report_renders_offline_in_headless_chromium(tmp_path, quickstart_study):
    out = tmp_path / "report.html"
    assert main(["report", *quickstart_study, "-o", str(out), "--no-reproduce"]) == 0
    got = _browse(out, tmp_path)
    ev = got["events"]
    requests = [e["params"]["request"]["url"] for e in ev if e.get("method") == "Network.requestWillBeSent"]
    external = [u for u in requests if not u.startswith(("file:", "data:"))]
    assert external == []
    assert [u for u in requests if u.startswith("file:")] == [out.resolve().as_uri()]   # the page only
    errors = [e for e in ev if e.get("method") in ("Runtime.exceptionThrown", "Network.loadingFailed")
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    page = got["page"]
    assert page["sections"] == ["summary", "front", "knee-candidates", "knee", "reference", "explain",
                                "pairwise-fronts", "parallel-coordinates", "breakdown", "hypervolume", "importance",
                                "infeasibility", "robust", "version"]
    assert page["images"] and all(ok and w > 100 for ok, w in page["images"])    # every figure decoded
    png = got["png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000                   # not a blank page
    shot = tmp_path / "report.png"
    shot.write_bytes(png)
    keep = os.environ.get("DSE_REPORT_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(png)
