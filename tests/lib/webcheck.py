"""tests/lib/webcheck.py - what the `jobboard web` tests' Python checks
share (tests/lib/web.sh puts this folder on PYTHONPATH):

    import webcheck as wc
    wc.setup(port, raw=["<script>alert(1)</script>"])
    code, body, headers = wc.get("/jobs")
    wc.check("GET /jobs", code == 200, body[:300])

check prints one TAP line ("ok - NAME" / "not ok - NAME", then the
detail as "# " lines), which web_checks in web.sh reads back.
"""
import html
import re
import urllib.error
import urllib.request
from html.parser import HTMLParser

base = None   # http://127.0.0.1:PORT
RAW = []      # texts of the board that must never come back unescaped


def setup(port, raw=(), host="127.0.0.1"):
    global base, RAW
    base = "http://%s:%d" % (host, int(port))
    RAW = list(raw)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def get(path, headers=None, method="GET", timeout=10, follow=True):
    """(status, body text, headers); a redirect is followed only with
    follow (without it the 3xx itself is the answer)."""
    req = urllib.request.Request(base + path, headers=headers or {}, method=method)
    opener = urllib.request.build_opener(*([] if follow else [_NoRedirect]))
    try:
        r = opener.open(req, timeout=timeout)
        return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


def check(name, cond, detail="", limit=2000):
    print(("ok" if cond else "not ok") + " - " + name, flush=True)
    if not cond and detail:
        print("# " + str(detail)[:limit].replace("\n", "\n# "), flush=True)


def no_raw(body):
    """The texts of RAW found as they are in body (none: all escaped)."""
    return [r for r in RAW if r in body]


def text(cell):
    """A cell's text: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]*>", "", cell))


class _Balance(HTMLParser):
    """Every element closed in order (void elements aside)."""
    VOID = {"meta", "link", "input", "br", "img", "hr"}

    def __init__(self):
        super().__init__()
        self.open, self.bad = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.bad.append((tag, self.open[-3:]))
        else:
            self.open.pop()


def unbalanced(body):
    """None when every element of body is closed in order, else what is
    not (the first few mismatches and the elements left open)."""
    b = _Balance()
    b.feed(body)
    return None if not b.bad and not b.open else (b.bad[:3], b.open)
