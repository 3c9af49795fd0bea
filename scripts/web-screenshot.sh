#!/bin/bash
# web-screenshot.sh - the README's picture of `jobboard web`: a demo board
# (a few job names, claims, a delayed job, a dead letter, schedules) in a
# temporary directory, its overview shot by headless chromium at 1200x800
# after a few changes, which its live list shows.
#
#   bash scripts/web-screenshot.sh [OUT.png]   # default docs/images/web-overview.png
#
# Run from the build directory (it uses ./jobboard; JOBBOARD=PATH for
# another). Needs chromium, chromium-driver and python3-selenium (Debian's
# packages, as tests/web_browser.sh). Not part of `make check`.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/docs/images/web-overview.png}
jobboard=${JOBBOARD:-./jobboard}
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$jobboard" ] || { echo "web-screenshot: no $jobboard (run it from the build directory)" >&2; exit 2; }
[ -x "$chromium" ] || { echo "web-screenshot: no $chromium (apt-get install chromium)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jb-web-screenshot.XXXXXX")
server=
cleanup() {
  [ -z "$server" ] || { kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null || :; }
  rm -rf "$tmp"
}
trap cleanup EXIT
# The page names the board as given: a short relative path, not the
# temporary directory's.
jobboard=$(cd "$(dirname "$jobboard")" && pwd)/$(basename "$jobboard")
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
cd "$tmp"
export JOBBOARD_DIR=board.d
jb() { "$jobboard" --durability none "$@"; }

# The demo board: images being resized by three workers, e-mails, a
# backlog of reports, a delayed retry and a dead letter.
for i in $(seq 40); do echo "{\"name\": \"images.resize\", \"details\": {\"file\": \"img-$i.jpg\", \"width\": 800}}"; done |
  jb post --batch >/dev/null
for i in $(seq 12); do echo "{\"name\": \"emails.send\", \"priority\": \"high\", \"details\": {\"to\": \"user$i@example.com\"}}"; done |
  jb post --batch >/dev/null
for i in $(seq 6); do jb post reports.daily --priority low --details "{\"day\": \"2026-11-2$i\"}" >/dev/null; done
jb post billing.invoice --delay 900 --details '{"customer": 1042}' >/dev/null
jb claim-next --who worker-1 --lease 20 --name images.resize >/dev/null
jb claim-next --who worker-2 --lease 300 --name images.resize >/dev/null
jb claim-next --who worker-3 --lease 25 --name emails.send >/dev/null
dead=$(jb post billing.invoice --details '{"customer": 977}')
jb claim --who worker-2 "$dead" >/dev/null
jb abandon --who worker-2 --dead --reason "card declined" "$dead"
jb schedule add nightly-report --cron '0 2 * * *' --job-name reports.daily >/dev/null
jb schedule add cleanup --every 600 --job-name images.cleanup >/dev/null

"$jobboard" web --listen 127.0.0.1:0 2>"$tmp/server.err" >/dev/null &
server=$!

# The overview in chromium, driven by Selenium so that the live list has
# events in it: a few changes made once the page follows /events. As root
# (CI, containers) chromium needs --no-sandbox.
/usr/bin/python3 - "$tmp/server.err" "$tmp" "$chromium" "$jobboard" "$out" <<'PYEOF'
import re, subprocess, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

said, tmp, chromium, jobboard, out = sys.argv[1:]
# The address the server says on stderr, once it says it.
for i in range(100):
    m = re.search(r"^jobboard: web: listening on (http://\S+)$",
                  open(said).read(), re.M)
    if m:
        break
    time.sleep(0.05)
else:
    sys.exit("web-screenshot: the server said no address: " + open(said).read())
url = m.group(1)
o = webdriver.ChromeOptions()
o.binary_location = chromium
for a in ["--headless=new", "--no-sandbox", "--disable-gpu",
          "--disable-dev-shm-usage", "--hide-scrollbars",
          "--user-data-dir=" + tmp + "/profile", "--window-size=1200,800"]:
    o.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
try:
    # The page itself 1200x800, whatever the window's frame takes.
    inner = d.execute_script("return [window.innerWidth, window.innerHeight]")
    size = d.get_window_size()
    d.set_window_size(size["width"] + 1200 - inner[0],
                      size["height"] + 800 - inner[1])
    d.get(url)
    WebDriverWait(d, 10).until(lambda d: d.find_element(
        By.ID, "live-note").text.startswith("New events"))
    def jb(*a):
        return subprocess.run([jobboard, "--durability", "none"] + list(a),
                              check=True, capture_output=True,
                              text=True).stdout.strip()
    u = jb("claim-next", "--who", "worker-3", "--name", "emails.send")
    jb("consume", "--who", "worker-3", u)
    jb("post", "images.resize", "--details", '{"file": "img-41.jpg"}')
    jb("claim-next", "--who", "worker-1", "--name", "reports.daily")
    WebDriverWait(d, 10).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#live li")) >= 4)
    d.save_screenshot(out)
finally:
    d.quit()
PYEOF
echo "web-screenshot: $out ($(wc -c <"$out") bytes)"
