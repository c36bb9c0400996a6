"""The built documentation site opened in a real browser: headless Chromium, Debian's `chromium` package
(/usr/bin/chromium), driven by Playwright's driver (pip's `playwright`, the docs extra; it downloads no
browser of its own here).

The site is built with the command of docs/development.md (warnings as errors) into tests/out/docs/html
(git-ignored; the notebooks' outputs come from the build cache when their code has not changed), served on
localhost, and every page is opened: no console error or failed request, nothing loaded from another site
but MathJax's script (answered empty: the test runs offline), every internal link leads to a page that
exists and, with a `#fragment`, to an element of that id; the search page finds "variant".
Screenshots of the landing page and of the first model's guide are written to tests/out/docs/.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "out" / "docs"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def site():
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: install Debian's chromium package (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the docs extra's playwright is not installed")
    pytest.importorskip("sphinx", reason="the docs extra is not installed")
    html = OUT / "html"
    shutil.rmtree(html, ignore_errors=True)
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", str(html)],
                          capture_output=True, text=True, cwd=ROOT, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return html


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS[1:], viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


#: the hosts a page may load from beyond the site: MathJax's CDN, which renders the LaTeX of notebook outputs
#: (Sphinx's default). Offline, such a request is answered with an empty script and recorded, not fetched.
EXTERNAL_HOSTS = {"cdn.jsdelivr.net"}


def open_page(browser, url: str, external: set[str] | None = None):
    """The page at `url` loaded, with the console errors, page errors and failed requests it gave; requests to
    other sites are answered empty, and their hosts added to `external`."""
    page = browser.new_page()
    problems = []

    def elsewhere(route):
        host = urlparse(route.request.url).hostname
        if external is not None:
            external.add(host)
        route.fulfill(status=200, content_type="application/javascript", body="")

    page.route(lambda target: urlparse(target).hostname not in ("127.0.0.1", None), elsewhere)
    page.on("console", lambda message: problems.append(
        f"console {message.type}: {message.text} ({message.location.get('url')})")
        if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
    page.on("response", lambda response: problems.append(f"HTTP {response.status}: {response.url}")
            if response.status >= 400 else None)
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url}: {response.status if response else 'no response'}"
    page.wait_for_load_state("networkidle")
    return page, problems


def test_every_page_loads_cleanly_and_its_links_resolve(site, server, browser):
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not {"_static", "_sources", "_images"} & set(p.relative_to(site).parts))
    assert len(pages) > 20
    ids, links, problems, external = {}, [], [], set()
    for name in pages:
        page, found = open_page(browser, server + name, external)
        ids[name] = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.id)"))
        hrefs = page.eval_on_selector_all("a[href]", "nodes => nodes.map(n => n.href)")
        links += [(name, href) for href in hrefs]
        problems += [f"{name}: {p}" for p in found]
        page.close()
    assert not problems, "\n".join(problems)
    assert external <= EXTERNAL_HOSTS, f"pages load from {sorted(external - EXTERNAL_HOSTS)}"
    broken = []
    for name, href in links:
        url, fragment = urldefrag(href)
        if not url.startswith(server):
            continue  # another site: not checked offline
        target = urlparse(url).path.lstrip("/") or "index.html"
        if target.endswith("/"):
            target += "index.html"
        if not (site / target).exists():
            broken.append(f"{name}: {href} (no {target})")
        elif fragment and target in ids and fragment not in ids[target]:
            broken.append(f"{name}: {href} (no #{fragment} in {target})")
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(sorted(set(broken))[:50])
    assert any(urljoin(server, "guides/wsc.html") == urldefrag(h)[0] for n, h in links if n == "index.html")


def test_the_search_finds_variant(server, browser):
    page, problems = open_page(browser, server + "search.html?q=variant")
    page.wait_for_selector("#search-results ul.search li", timeout=60_000)
    results = page.eval_on_selector_all("#search-results ul.search li a", "nodes => nodes.map(n => n.href)")
    assert any("variants.html" in href for href in results), results
    assert not problems, "\n".join(problems)
    page.close()


def test_screenshots_of_the_landing_page_and_a_model_guide(server, browser):
    OUT.mkdir(parents=True, exist_ok=True)
    for name, shot in (("index.html", "landing.png"), ("guides/wsc.html", "guide_wsc.png")):
        page, problems = open_page(browser, server + name)
        assert not problems, "\n".join(problems)
        assert page.title(), name
        page.screenshot(path=str(OUT / shot), full_page=False)
        page.close()
        assert (OUT / shot).stat().st_size > 10_000, f"{shot} is nearly empty"
