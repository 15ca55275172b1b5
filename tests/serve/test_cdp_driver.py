"""The Chromium driver the serve tests and the bench use (tests/serve/cdp.py), against a tiny site served by
http.server on the loopback interface: an external script, a button, an input, a tall page and a page whose
Content-Security-Policy refuses its inline script."""

from __future__ import annotations

import http.server
import os
import shutil
import struct
import threading

import cdp
import pytest

APP_JS = b"""
document.body.dataset.loaded = "1";
document.getElementById("button").addEventListener("click", (event) => {
    document.getElementById("out").textContent = event.isTrusted ? "clicked by a person" : "clicked by a script";
});
document.getElementById("text").addEventListener("input", (event) => {
    document.getElementById("echo").textContent = event.target.value;
});
"""
INDEX = b"""<!doctype html><html><head><title>driver</title></head><body>
<button id="button">Press</button><p id="out">not clicked</p>
<input id="text" value="hello"><p id="echo"></p>
<button id="covered" style="position: fixed; left: 10px; top: 320px">Hidden</button>
<div id="cover" style="position: fixed; left: 0; top: 300px; width: 400px; height: 100px; background: #ccc"></div>
<script src="/app.js"></script></body></html>"""
TALL = b"""<!doctype html><html><body style="margin: 0"><div style="height: 3000px">tall</div></body></html>"""
CSP = b"""<!doctype html><html><body><p>policy</p><script>document.body.dataset.inline = "ran";</script>
<script src="/csp.js"></script></body></html>"""
THROWS = b"""<!doctype html><html><body><script src="/throws.js"></script></body></html>"""
SITE = {
    "/": ("text/html", INDEX),
    "/app.js": ("text/javascript", APP_JS),
    "/tall": ("text/html", TALL),
    "/csp": ("text/html", CSP),
    "/csp.js": ("text/javascript", b'document.body.dataset.external = "ran";'),
    "/throws": ("text/html", THROWS),
    "/throws.js": ("text/javascript", b'throw new Error("thrown at load");'),
}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path not in SITE:
            self.send_error(404)
            return
        kind, body = SITE[self.path]
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if self.path.startswith("/csp"):
            self.send_header("Content-Security-Policy", "default-src 'none'; script-src 'self'")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def png_size(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == PNG_SIGNATURE
    return struct.unpack(">II", data[16:24])


def test_goto_returns_after_the_load_event_so_the_external_script_has_run(page, site):
    page.goto(site + "/")
    assert page.evaluate("document.body.dataset.loaded") == "1"


def test_goto_to_a_refused_address_raises(page):
    with pytest.raises(cdp.CdpError, match="ERR_"):
        page.goto("http://127.0.0.1:1/")


def test_evaluate_returns_json_values_and_awaits_promises(page, site):
    page.goto(site + "/")
    assert page.evaluate("({title: document.title, n: [1, 2]})") == {"title": "driver", "n": [1, 2]}
    assert page.evaluate("new Promise(resolve => setTimeout(() => resolve('later'), 10))") == "later"
    assert page.evaluate("undefined") is None


def test_evaluate_raises_with_the_text_of_what_the_page_threw(page, site):
    page.goto(site + "/")
    with pytest.raises(cdp.PageError, match="Error: boom"):
        page.evaluate("(() => { throw new Error('boom'); })()")


def test_wait_for_returns_the_value_once_the_condition_holds(page, site):
    page.goto(site + "/")
    page.evaluate("setTimeout(() => { document.getElementById('out').textContent = 'later'; }, 100)")
    assert page.wait_for("document.getElementById('out').textContent === 'later' && 'done'") == "done"


def test_wait_for_gives_up_after_its_timeout_naming_the_expression(page, site):
    page.goto(site + "/")
    with pytest.raises(TimeoutError, match="nosuch"):
        page.wait_for("document.querySelector('#nosuch').textContent", timeout=0.3)


def test_click_is_a_trusted_mouse_click_on_the_element(page, site):
    page.goto(site + "/")
    page.click("#button")
    assert page.evaluate("document.getElementById('out').textContent") == "clicked by a person"


def test_click_refuses_an_element_another_one_covers(page, site):
    page.goto(site + "/")
    with pytest.raises(cdp.PageError, match="covers"):
        page.click("#covered")


def test_click_on_a_selector_nothing_matches_names_it(page, site):
    page.goto(site + "/")
    with pytest.raises(cdp.PageError, match="#nosuch"):
        page.click("#nosuch")


def test_type_appends_the_text_as_input_the_page_sees(page, site):
    page.goto(site + "/")
    page.type("#text", " <b>")
    assert page.evaluate("document.getElementById('echo').textContent") == "hello <b>"


def test_screenshot_writes_a_png_of_the_viewport(page, site, tmp_path):
    page.goto(site + "/")
    path = tmp_path / "viewport.png"
    page.screenshot(str(path))
    assert png_size(path) == (1200, 800)
    assert path.stat().st_size > 2000


def test_full_page_screenshot_holds_the_whole_page(page, site, tmp_path):
    page.goto(site + "/tall")
    path = tmp_path / "full.png"
    page.screenshot(str(path), full_page=True)
    assert png_size(path) == (1200, 3000)


def test_a_page_that_runs_cleanly_reports_no_console_errors(page, site):
    page.goto(site + "/")
    assert page.console_errors() == []


def test_an_uncaught_exception_of_the_page_is_a_console_error(page, site):
    page.goto(site + "/throws")
    assert any("thrown at load" in error for error in page.console_errors())


def test_an_inline_script_refused_by_the_policy_is_a_csp_violation(page, site):
    page.goto(site + "/csp")
    assert page.evaluate("[document.body.dataset.inline, document.body.dataset.external]") == [None, "ran"]
    violations = page.csp_violations()
    assert len(violations) == 1 and "inline script" in violations[0]
    assert page.console_errors() == violations


def test_first_paint_is_measured_from_the_navigation(page, site):
    page.goto(site + "/")
    assert 0 < cdp.first_paint_ms(page) <= cdp.first_paint_ms(page, contentful=True) < 10000


def test_close_ends_chromium_and_removes_its_profile(browser):  # browser: skips without Chromium
    with cdp.Browser() as other:
        pid, folder = other.pid, other.folder
        assert os.path.isdir(folder)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(folder)


def test_a_browser_that_exits_at_once_is_an_error_not_a_wait():
    with pytest.raises(cdp.CdpError, match="Chromium is gone"):
        cdp.Browser(shutil.which("false"))
