"""Check that the built documentation renders its maths without a network.

Usage (after ``python -m sphinx -b html doc doc/_build/html``)::

    python doc/check_render.py [BUILD_DIR] [--page user_guide/choosing.html]
                               [--screenshot formula.png]

1. Static: no built page loads MathJax (or another maths renderer) from the web, and the
   page's MathJax script is a local file that exists.
2. In a browser: headless Chromium (``chromium`` from the system packages) opens the
   page with the network cut off (a fresh network namespace where ``unshare -n`` is
   allowed, and host resolution mapped to nothing in any case), runs its JavaScript and
   dumps the DOM. Every ``:math:`` span must hold a MathJax ``mjx-container``, no
   MathJax error may appear, no raw ``\\(`` or ``\\[`` may remain in the visible text,
   and, on the default page, the formula ``O(P^2)`` must be there as typeset maths
   (its MathML).

Exit status 0 when every check passes, 1 otherwise; 2 when no browser is found.
"""

import argparse
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Where a maths renderer would be fetched from the web: <script src=...> or
# <link href=...> pointing at a CDN copy of MathJax or KaTeX.
_REMOTE_MATH = re.compile(
    r"""<(?:script|link)\b[^>]*(?:src|href)=["']?(?:https?:)?//[^"'>\s]*(?:mathjax|katex)""",
    re.IGNORECASE,
)
_MATHJAX_SRC = re.compile(r"""<script\b[^>]*src=["']([^"']*mathjax[^"']*)["']""", re.IGNORECASE)
# The formula O(P^2) of the "Choosing a configuration" page, as MathJax's assistive
# MathML writes it.
_O_P2 = re.compile(r"<mi>O</mi><mo[^>]*>\(</mo><msup><mi>P</mi><mn>2</mn></msup><mo[^>]*>\)</mo>")
DEFAULT_PAGE = "user_guide/choosing.html"  # it has O(P^2)
_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class _Dom(HTMLParser):
    """Math spans and whether each holds an ``mjx-container``; MathJax errors; the
    visible text (scripts, styles and MathJax's hidden MathML left out)."""

    _HIDDEN = {"script", "style", "mjx-assistive-mml", "noscript", "template"}
    _VOID = set("area base br col embed hr img input link meta source track wbr".split())

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []  # (tag, is_math_span)
        self.math_spans = 0
        self.typeset = 0
        self.errors = 0
        self.text = []
        self._math_has_container = []

    def handle_starttag(self, tag, attrs):
        if tag in self._VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        is_math = tag in ("span", "div") and "math" in classes
        if is_math:
            self.math_spans += 1
            self._math_has_container.append(False)
        if tag == "mjx-container" and self._math_has_container:
            self._math_has_container[-1] = True
        if tag == "mjx-merror":
            self.errors += 1
        self.stack.append((tag, is_math))

    def handle_endtag(self, tag):
        while self.stack:
            top, is_math = self.stack.pop()
            if is_math:
                self.typeset += self._math_has_container.pop()
            if top == tag:
                break

    def handle_data(self, data):
        if not any(t in self._HIDDEN for t, _ in self.stack):
            self.text.append(data)


def static_check(build: Path, page: Path) -> list[str]:
    problems = []
    pages = sorted(build.rglob("*.html"))
    if not pages:
        return [f"no HTML pages under {build}"]
    for p in pages:
        for m in _REMOTE_MATH.finditer(p.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{p.relative_to(build)} loads maths from the web: {m.group(0)}")
    srcs = _MATHJAX_SRC.findall(page.read_text(encoding="utf-8"))
    if not srcs:
        problems.append(f"{page.relative_to(build)} has no MathJax <script>")
    for src in srcs:
        if re.match(r"(?:https?:)?//", src):
            problems.append(f"MathJax is remote: {src}")
        elif not (page.parent / src.split("?")[0]).is_file():
            problems.append(f"MathJax script {src} is missing from the build")
    print(f"static: {len(pages)} pages, no remote maths renderer; MathJax script {srcs}")
    return problems


def _browser(name):
    for b in [name] if name else _BROWSERS:
        path = shutil.which(b)
        if path:
            return path
    return None


def _offline_prefix():
    """``unshare -n`` (an empty network namespace) when this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def run_browser(browser, uri, extra, timeout=120):
    """Open ``uri`` in headless ``browser`` offline; its stdout and how it was cut off."""
    prefix = _offline_prefix()
    cmd = prefix + [
        browser,
        "--headless",
        "--no-sandbox",  # root in a container
        "--disable-gpu",
        "--no-first-run",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # no host name resolves
        "--virtual-time-budget=15000",  # let the page's scripts (MathJax) finish
        *extra,
        uri,
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        sys.stderr.write(res.stderr[-2000:])
        raise RuntimeError(f"{browser} exited with {res.returncode}")
    return res.stdout, "empty network namespace" if prefix else "host resolution blocked"


def dom_check(dom: str, expect_formula: bool = True) -> list[str]:
    parser = _Dom()
    parser.feed(dom)
    text = "".join(parser.text)
    problems = []
    print(
        f"browser: {parser.math_spans} math spans, {parser.typeset} typeset "
        f"(mjx-container), {dom.count('<mjx-container')} mjx-container elements, "
        f"{parser.errors} MathJax errors"
    )
    if parser.math_spans == 0:
        problems.append("the page has no maths to check")
    if parser.typeset != parser.math_spans:
        problems.append(f"{parser.math_spans - parser.typeset} math spans were not typeset")
    if parser.errors:
        problems.append(f"{parser.errors} MathJax errors (mjx-merror)")
    raw = re.findall(r".{0,30}\\[(\[].{0,30}", text)
    if raw:
        problems.append(f"raw TeX left in the visible text: {raw[:3]}")
    else:
        print("browser: no raw \\( or \\[ in the visible text")
    if not expect_formula:
        pass
    elif _O_P2.search(dom):
        print("browser: the formula O(P^2) is typeset")
    else:
        problems.append("the formula O(P^2) was not found typeset")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default=str(HERE / "_build" / "html"))
    ap.add_argument("--page", default=DEFAULT_PAGE)
    ap.add_argument("--browser", default=None, help="browser executable (default: chromium)")
    ap.add_argument("--screenshot", default=None, help="also save a PNG of the page here")
    ap.add_argument(
        "--anchor",
        default="family-how-many-parameters",
        help="section to scroll to for the screenshot",
    )
    args = ap.parse_args(argv)

    build = Path(args.build)
    page = build / args.page
    if not page.is_file():
        print(f"FAIL: {page} does not exist (build the docs first)")
        return 1
    problems = static_check(build, page)

    browser = _browser(args.browser)
    if browser is None:
        print("no headless browser found: apt-get install -y chromium")
        return 2
    dom, how = run_browser(browser, page.resolve().as_uri(), ["--dump-dom"])
    print(f"browser: {Path(browser).name}, offline ({how}), page {args.page}")
    problems += dom_check(dom, expect_formula=args.page == DEFAULT_PAGE)

    if args.screenshot:
        out = Path(args.screenshot).resolve()
        # Chromium scrolls to the fragment before it takes the picture.
        uri = page.resolve().as_uri() + (f"#{args.anchor}" if args.anchor else "")
        run_browser(
            browser, uri, [f"--screenshot={out}", "--window-size=1100,800", "--hide-scrollbars"]
        )
        print(f"screenshot: {out}")

    for p in problems:
        print("FAIL:", p)
    print("OK: maths renders offline" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
