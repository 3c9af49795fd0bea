#!/usr/bin/python3
"""tests/web_browser.py - `jobboard web` in a real browser: headless
chromium driven by Selenium (tests/web_browser.sh starts the board and
the servers and runs this).

    web_browser.py SETUP.json

SETUP.json (written by web_browser.sh): base (the read-only server's
URL), dir (the test's temporary directory: chromium's profiles and the
screenshots go there), jobboard (the program), held, dead, xss_job (uuids
of the board it made), chromium, chromedriver, and for the actions:
actions_base and token, or actions_skip (why they are not checked).

Prints one line a check, "ok - NAME", "not ok - NAME" or "skip - NAME #
REASON", and "# ..." diagnostics; web_browser.sh turns them into TAP.
"""
import calendar
import json
import os
import signal
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import (NoAlertPresentException,
                                        NoSuchElementException,
                                        StaleElementReferenceException,
                                        TimeoutException,
                                        WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# Chromium and chromedriver are in this process's group, which
# web_browser.sh kills at its exit whatever becomes of this program.
os.setpgid(0, 0)

cfg = json.load(open(sys.argv[1]))
base, tmp, jobboard = cfg["base"], cfg["dir"], cfg["jobboard"]
shots = os.path.join(tmp, "screenshots")
os.makedirs(shots, exist_ok=True)

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = '"><img src=x onerror=alert(1)>'
WAIT_S = 10        # the bound of every wait for the page
LIVE_BOUND_S = 1.0  # a post shows in the live list within this


class Deadline(Exception):
    pass


def on_alarm(signum, frame):
    raise Deadline("the browser checks took longer than 240 s")


# A hung browser ends the checks (the finally below quits it); SIGTERM
# from the shell's cleanup too.
signal.signal(signal.SIGALRM, on_alarm)
signal.signal(signal.SIGTERM, on_alarm)
signal.alarm(240)


def out(line):
    print(line, flush=True)


def check(name, cond, detail=""):
    out(("ok" if cond else "not ok") + " - " + name)
    if not cond and detail != "":
        out("# " + str(detail)[:2000].replace("\n", "\n# "))
    return cond


def skip(name, why):
    out("skip - %s # %s" % (name, why))


def cli(*args):
    return subprocess.run([jobboard, "--durability", "none"] + list(args),
                          capture_output=True, text=True)


def browser(profile, javascript=True):
    o = webdriver.ChromeOptions()
    o.binary_location = cfg["chromium"]
    # As root in CI: no sandbox; /dev/shm may be small in a container.
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=1200,800",
              "--user-data-dir=" + os.path.join(tmp, profile),
              "--no-first-run", "--disable-extensions"]:
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if not javascript:
        o.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2})
    d = webdriver.Chrome(service=Service(cfg["chromedriver"]), options=o)
    d.set_page_load_timeout(WAIT_S)
    return d


def wait(d, what, cond, bound=WAIT_S):
    """cond(d) true within the bound, else TimeoutException naming what."""
    return WebDriverWait(d, bound, poll_frequency=0.05).until(cond, what)


def severe(d):
    """The console's errors since the last call (CSP violations are)."""
    return [e["message"] for e in d.get_log("browser")
            if e.get("level") == "SEVERE"]


def no_console_error(d, where):
    errors = severe(d)
    check("%s: no console error" % where, not errors, errors)


def live_ready(d):
    """The page's script ran and /events is open."""
    wait(d, "the live list's note says /events is open",
         lambda d: d.find_element(By.ID, "live-note").text.startswith(
             "New events"))


def load(d, path):
    d.get(base + path)
    wait(d, "the page loaded",
         lambda d: d.execute_script("return document.readyState") == "complete")


def no_alert(d):
    try:
        d.switch_to.alert.dismiss()
        return False
    except NoAlertPresentException:
        return True


def injected(d):
    """Elements of the page that markup in the board's text would make:
    any img, an element with an onerror attribute, a script other than
    the page's own."""
    return d.execute_script(
        "var r = [];"
        "document.querySelectorAll('img, [onerror]').forEach(function (e) {"
        "  r.push(e.outerHTML); });"
        "document.querySelectorAll('script').forEach(function (e) {"
        "  if (e.getAttribute('src') !== '/static/web.js')"
        "    r.push(e.outerHTML); });"
        "return r;")


def main_text(d):
    return d.find_element(By.TAG_NAME, "main").text


def jobs_rows(d):
    """The /jobs table: the name of each row."""
    return [r.find_elements(By.TAG_NAME, "td")[1].text
            for r in d.find_elements(By.CSS_SELECTOR, "main table tr")
            if r.find_elements(By.TAG_NAME, "td")]


def read_only(d):
    held, dead, xss_job = cfg["held"], cfg["dead"], cfg["xss_job"]
    # Every page: it loads, its script runs (the live list connects) and
    # the console has no error; the board's markup-like texts show as
    # text, and nothing of them became an element.
    pages = [("/", "overview", [XSS_SCRIPT, XSS_IMG, "Jobs by name"]),
             ("/jobs", "jobs", [XSS_SCRIPT, XSS_IMG, "bulk.item"]),
             ("/job/" + xss_job, "job", [XSS_SCRIPT,
                                         "<img src=x onerror=alert(1)>"]),
             ("/job/" + held, None, [XSS_IMG, "claimed"]),
             ("/job/" + dead, None, [XSS_SCRIPT, "Dead letter"]),
             ("/claims", None, [XSS_IMG, held]),
             ("/dead", None, [XSS_SCRIPT, dead]),
             ("/schedules", None, ["nightly"])]
    for path, shot, want in pages:
        label = path.replace(held, "HELD").replace(dead, "DEAD").replace(
            xss_job, "XSS")
        try:
            load(d, path)
            live_ready(d)
        except (TimeoutException, WebDriverException) as e:
            check("GET %s loads and its script connects /events" % label,
                  False, e)
            continue
        no_console_error(d, "GET " + label)
        text = main_text(d)
        missing = [w for w in want if w not in text]
        check("GET %s: the board's texts shown as text %s" % (label, want),
              not missing, "missing %s in:\n%s" % (missing, text[:1500]))
        extra = injected(d)
        check("GET %s: no alert, no injected img or script" % label,
              no_alert(d) and not extra, extra)
        if shot:
            d.save_screenshot(os.path.join(shots, shot + ".png"))

    # The console check can fail: a CSP violation is an error there.
    d.execute_script("var s = document.createElement('script');"
                     "s.textContent = 'window.x = 1';"
                     "document.body.appendChild(s);")
    try:
        errors = wait(d, "a console error", lambda d: severe(d), 5)
    except TimeoutException:
        errors = []
    check("the console check sees a CSP violation (an inline script the "
          "test adds)", any("Content Security Policy" in e for e in errors),
          errors)

    # A filter typed into /jobs' form narrows the list.
    load(d, "/jobs")
    before = jobs_rows(d)
    box = d.find_element(By.CSS_SELECTOR, "main form input[name=name]")
    box.clear()
    box.send_keys("alpha")
    d.find_element(By.CSS_SELECTOR, "main form button").click()
    try:
        wait(d, "the filtered list", lambda d: "name=alpha" in d.current_url)
        after = jobs_rows(d)
    except TimeoutException as e:
        after = str(e)
    check("a name typed into /jobs' form narrows the list to those jobs",
          after == ["alpha", "alpha"] and len(before) > 2,
          "before %s, after %s" % (before, after))
    no_console_error(d, "the filtered list")


def live(d):
    # A job posted with the CLI shows in the live list (the page follows
    # /events) within a second of the post returning. The page notes when
    # each item appeared (a MutationObserver: no polling delay counted).
    load(d, "/")
    live_ready(d)
    d.execute_script(
        "window.jbSeen = [];"
        "new MutationObserver(function (ms) {"
        "  ms.forEach(function (m) { m.addedNodes.forEach(function (n) {"
        "    window.jbSeen.push([n.textContent, Date.now()]); }); });"
        "}).observe(document.getElementById('live'), {childList: true});")

    def seen(name):
        for text, at in d.execute_script("return window.jbSeen"):
            if name in text:
                return at / 1000.0
        return None

    for name, label in [("live.browser", "a job posted with the CLI"),
                        (XSS_SCRIPT, "a job named <script>")]:
        started = time.time()
        r = cli("post", name)
        returned = time.time()
        if not check("post %s" % name, r.returncode == 0, r.stderr):
            continue
        try:
            at = wait(d, "the post in the live list", lambda d: seen(name),
                      5)
            latency = at - returned
        except TimeoutException:
            latency = None
        if latency is not None:
            # Below 0: shown before the command had closed the board
            # and exited.
            out("# %s: in the live list %.3f s after the post returned "
                "(%.3f s after it started)"
                % (label, latency, at - started))
        check("%s shows in the live list within %.0f s of the post "
              "returning" % (label, LIVE_BOUND_S),
              latency is not None and latency < LIVE_BOUND_S, latency)
    items = [li.text for li in d.find_elements(By.CSS_SELECTOR, "#live li")]
    check("the live list shows the name <script> as text",
          any(XSS_SCRIPT in t for t in items) and not injected(d)
          and no_alert(d), (items, injected(d)))
    no_console_error(d, "the live list")


def without_js(d):
    # The pages read without JavaScript: the overview's counts by name are
    # the board's (as `jobboard list --json` counts them).
    load(d, "/")
    note = d.find_element(By.ID, "live-note").text
    check("without JavaScript the script does not run (the live list's "
          "note stays)", note.startswith("Reload"), note)
    rows = {}
    for tr in d.find_elements(By.XPATH,
                              "//h2[.='Jobs by name']/following-sibling::"
                              "table[1]//tr[td]"):
        td = [c.text for c in tr.find_elements(By.TAG_NAME, "td")]
        rows[td[0]] = [int(n) for n in td[1:4]]
    want = {}
    now = time.time()
    r = cli("list", "--json")
    for line in r.stdout.splitlines():
        j = json.loads(line)
        if j["state"] == "CLAIMED":
            i = 1
        elif j["not_before"] and calendar.timegm(time.strptime(
                j["not_before"][:19], "%Y-%m-%dT%H:%M:%S")) > now:
            i = 2
        else:
            i = 0
        want.setdefault(j["name"], [0, 0, 0])[i] += 1
    check("without JavaScript the overview shows the board's counts by name",
          rows == want and len(want) > 3, "page %s\nboard %s" % (rows, want))
    no_console_error(d, "without JavaScript")


def actions(d):
    base2, token, dead = cfg["actions_base"], cfg["token"], cfg["dead2"]

    def still_dead():
        return cli("dead", "show", dead).returncode == 0

    def settled(d):
        wait(d, "the answer", lambda d: d.execute_script(
            "return document.readyState") == "complete")

    def click_and_leave(d, el):
        # A click that posts a form: the page it leaves stays "complete"
        # until the answer replaces it, so wait for the element to go
        # stale first (else the next step can run before the POST is
        # answered: a login's cookie not set yet).
        el.click()

        def gone(_):
            try:
                el.is_enabled()
                return False
            except StaleElementReferenceException:
                return True
        wait(d, "the page to be replaced", gone)
        settled(d)

    def login(tok):
        d.get(base2 + "/login")
        box = d.find_element(By.CSS_SELECTOR, "input#token")
        box.clear()
        box.send_keys(tok)
        click_and_leave(d, d.find_element(By.CSS_SELECTOR, "#login"))

    def requeue_button():
        d.get(base2 + "/job/" + dead)
        return d.find_elements(By.CSS_SELECTOR,
                               "form button[name=op][value=requeue]")

    # Not logged in: the page has no requeue form, and says to log in.
    d.delete_all_cookies()
    buttons = requeue_button()
    text = main_text(d)
    check("not logged in, the dead letter's page has no requeue form and "
          "says to log in", not buttons and "Log in" in text, text[:1000])

    # A wrong token: no session (the refusal's status is the console's
    # one error).
    login("0" * 32)
    check("a wrong token typed into /login gives no session",
          d.get_cookie("jb_session") is None, d.get_cookies())
    severe(d)
    d.get(base2 + "/login")
    no_console_error(d, "GET /login")

    # The token typed into /login: a session, and the dead letter's page
    # has the requeue form with its csrf field.
    login(token)
    try:
        wait(d, "the session cookie",
             lambda d: d.get_cookie("jb_session") is not None)
        logged = True
    except TimeoutException:
        logged = False
    check("the token typed into /login gives the jb_session cookie", logged,
          d.get_cookies())
    buttons = requeue_button()
    csrf = d.find_elements(By.CSS_SELECTOR,
                           "form input[type=hidden][name=csrf]")
    check("logged in, the dead letter's page has the requeue form (with its "
          "csrf field)",
          bool(buttons and csrf and csrf[0].get_attribute("value")),
          main_text(d)[:1000])
    no_console_error(d, "the dead letter's page")
    if not buttons:
        return

    # The form sent without the session (its cookie gone, as if never
    # logged in): refused, and the job stays a dead letter.
    d.delete_cookie("jb_session")
    click_and_leave(d, buttons[0])
    text = d.find_element(By.TAG_NAME, "body").text
    check("a requeue without a session is refused: the page says so",
          any(w in text.lower() for w in ["log in", "refused", "forbidden"]),
          text[:1000])
    check("... and the job is still a dead letter (jobboard dead show)",
          still_dead())
    severe(d)  # the refusal's status, the console's one error

    # Logged in again, the requeue button puts the job back.
    login(token)
    buttons = requeue_button()
    if not check("logged in again, the requeue form is back", buttons):
        return
    d.save_screenshot(os.path.join(shots, "requeue.png"))
    click_and_leave(d, buttons[0])
    answer = d.find_element(By.TAG_NAME, "body").text
    try:
        wait(d, "the job back on the board",
             lambda d: cli("state", dead).stdout.strip() == "UNCLAIMED")
        back = True
    except TimeoutException:
        back = False
    check("clicking requeue puts the job back on the board (jobboard state: "
          "UNCLAIMED; no longer a dead letter)", back and not still_dead(),
          (cli("state", dead).stdout, answer[:1000]))
    no_console_error(d, "after the requeue")


def main():
    drivers = []
    try:
        t0 = time.monotonic()
        d = browser("profile-js")
        drivers.append(d)
        out("# chromium started in %.1f s" % (time.monotonic() - t0))
        read_only(d)
        out("# [%.1f s] the pages read" % (time.monotonic() - t0))
        live(d)
        nojs = browser("profile-nojs", javascript=False)
        drivers.append(nojs)
        without_js(nojs)
        out("# [%.1f s] without JavaScript" % (time.monotonic() - t0))
        if cfg.get("actions_skip"):
            skip("the actions: login, a refused and a made requeue",
                 cfg["actions_skip"])
        else:
            actions(d)
            out("# [%.1f s] the actions" % (time.monotonic() - t0))
    except Exception as e:
        check("the browser checks ran to their end", False,
              "%s: %s" % (type(e).__name__, e))
        for d in drivers:
            try:
                d.save_screenshot(os.path.join(shots, "at-error.png"))
                out("# at the error: %s" % d.current_url)
            except Exception:
                pass
    finally:
        signal.alarm(0)
        for d in drivers:
            try:
                d.quit()
            except Exception:
                pass


main()
