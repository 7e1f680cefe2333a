"""Pages opened as a user opens them: headless Chromium, once for every test that looks at a page.

``CHROMIUM`` is the browser found on this machine (None when there is none: the tests that need
it skip with ``NO_CHROMIUM``). ``dump_dom`` loads a page and returns Chromium's process, its
stdout the DOM once the page has loaded (``--dump-dom``), its stderr the page's console lines
(``console_lines``). With ``offline`` no network is reachable: no proxy answers, no name
resolves, and the browser runs in a network namespace of its own where ``unshare -n`` is allowed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
NO_CHROMIUM = "no Chromium on this machine (Debian: apt-get install chromium)"


def _own_network_namespace() -> list[str]:
    if (
        shutil.which("unshare")
        and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    ):
        return ["unshare", "-n"]
    return []


def dump_dom(
    url: str,
    profile: Path,
    window: str = "1300,3000",
    offline: bool = True,
    netlog: Path | None = None,
    budget_ms: int = 10_000,
) -> subprocess.CompletedProcess:
    """Load ``url`` in headless Chromium with the user profile folder ``profile``, a window of
    ``window`` pixels and ``budget_ms`` of virtual time; ``netlog``: also write Chromium's network
    log there (the requests the page made). Fails the test when Chromium exits with an error."""
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={profile}",
        f"--virtual-time-budget={budget_ms}",
        f"--window-size={window}",
    ]
    if offline:
        cmd += ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]
    if netlog is not None:
        cmd.append(f"--log-net-log={netlog}")
    cmd += ["--dump-dom", url]
    if (
        offline and netlog is None
    ):  # with a network log, the requests are read from it as the browser made them
        cmd = _own_network_namespace() + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p


def console_lines(p: subprocess.CompletedProcess, page_only: bool = False) -> list[str]:
    """The console messages Chromium logged (``page_only``: those of pages loaded from files)."""
    return [
        line
        for line in p.stderr.splitlines()
        if "CONSOLE" in line and (not page_only or "source: file://" in line)
    ]
