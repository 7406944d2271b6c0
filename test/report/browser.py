#!/usr/bin/env python3
"""The report page in a real browser: lesson 9 writes two report directories through
POPLAR_ENGINE_OPTIONS, as the infeed tutorial's command does (with and without feeds);
pxl-report compares them; headless Chromium opens the pages offline. The page must run its
script without error and draw every chart with the counts the reports hold (IPUs, tiles,
steps, runs), and its screenshot must not be blank. pxl-report's bad command lines and
unreadable directories are checked first, with or without Chromium.

usage: browser.py LESSON_9 PXL_REPORT
Chromium is required when CI=true; elsewhere the test is skipped without it (exit 77)."""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(cmd, env=None, cwd=None):
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


class Page(html.parser.HTMLParser):
    """The root's attributes and every chart container's."""

    def __init__(self):
        super().__init__()
        self.root = {}
        self.charts = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root = a
        if "data-chart" in a:
            self.charts.append(a)


def chromium_page(chromium, page, work):
    out = subprocess.run(
        [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--allow-file-access-from-files",
         f"--user-data-dir={work}/chromium-profile", "--virtual-time-budget=5000", "--dump-dom",
         "file://" + page], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        fail(f"chromium --dump-dom {page} exited with {out.returncode}:\n{out.stderr}")
    parsed = Page()
    parsed.feed(out.stdout)
    return parsed


def check_page(chromium, page, work, expect):
    p = chromium_page(chromium, page, work)
    root = p.root
    if root.get("data-errors") != "0":
        fail(f"{page}: the page's script reported {root.get('data-errors')} error(s)")
    if root.get("data-status") != "ok":
        fail(f"{page}: the page's script did not finish (data-status={root.get('data-status')})")
    if root.get("data-charts") != str(len(p.charts)):
        fail(f"{page}: {root.get('data-charts')} charts drawn of {len(p.charts)} containers")
    by_kind = {}
    for c in p.charts:
        by_kind.setdefault(c["data-chart"], []).append(c)
    for kind, count in expect["charts"].items():
        if len(by_kind.get(kind, [])) != count:
            fail(f"{page}: expected {count} '{kind}' chart(s), found {len(by_kind.get(kind, []))}")
    for c in by_kind["memory"]:
        # A bar per IPU in each of the 7 categories.
        if int(c["data-rendered"]) != 7 * int(c["data-ipus"]) or c["data-ipus"] != "1":
            fail(f"{page}: the memory chart drew {c['data-rendered']} bars for {c['data-ipus']} IPU(s)")
    for c in by_kind["tiles"]:
        if c["data-tiles"] != "1472" or c["data-rendered"] != "1472":
            fail(f"{page}: the tile map drew {c['data-rendered']} of {c['data-tiles']} tiles, "
                 "expected 1472")
    for c in by_kind["liveness"]:
        if int(c["data-steps"]) < 2 or c["data-rendered"] != c["data-steps"]:
            fail(f"{page}: the liveness curve drew {c['data-rendered']} of {c['data-steps']} steps")
    runs = [c["data-runs"] for c in by_kind.get("timeline", [])]
    if runs != expect["runs"]:
        fail(f"{page}: the timelines hold {runs} runs, expected {expect['runs']}")
    for c in by_kind.get("timeline", []):
        if c["data-ipus"] != "1" or int(c["data-rendered"]) != int(c["data-bars"]) or \
                int(c["data-bars"]) == 0:
            fail(f"{page}: the timeline drew {c['data-rendered']} of {c['data-bars']} bars")
    for c in by_kind.get("op-kinds", []):
        if int(c["data-rendered"]) != 4 * int(c["data-kinds"]) or int(c["data-kinds"]) < 3:
            fail(f"{page}: the op-kind chart drew {c['data-rendered']} bars for "
                 f"{c['data-kinds']} kinds")


def png_colours(path):
    """The distinct colours of a PNG (8-bit RGB or RGBA, not interlaced), and how many pixels
    differ from the first."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        fail(f"{path}: unexpected PNG format {header}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours, differing, first = set(), 0, None
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp * 4):  # every 4th pixel is plenty
            px = bytes(line[x:x + 3])
            first = first or px
            colours.add(px)
            differing += px != first
        prev = line
    return colours, differing


def check_cli(pxl_report):
    """pxl-report's bad command lines (exit 2) and unreadable directories (exit 1)."""
    with tempfile.TemporaryDirectory() as work:
        for d in ("empty", "bad"):
            os.mkdir(os.path.join(work, d))
        with open(os.path.join(work, "bad", "memory.json"), "w") as f:
            f.write("{not json")
        cases = [([], 2, "expected one report directory or two, found 0"),
                 (["a", "b", "c"], 2, "expected one report directory or two, found 3"),
                 (["--frobnicate"], 2, "unknown option '--frobnicate'"),
                 (["empty", "-o"], 2, "-o needs a file name"),
                 (["missing"], 1, "'missing' is not a report directory: it does not exist"),
                 (["empty"], 1, "'empty' is not a report directory: it has no memory.json"),
                 (["bad"], 1, "is not a report file pxl writes: expected JSON, found malformed")]
        for args, code, message in cases:
            done = subprocess.run([pxl_report] + args, cwd=work, capture_output=True, text=True,
                                  timeout=60)
            if done.returncode != code or message not in done.stderr:
                fail(f"pxl-report {' '.join(args)}: exit code {done.returncode} (expected {code}), "
                     f"stderr lacks {message!r}: {done.stderr}")


def main():
    lesson, pxl_report = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    check_cli(pxl_report)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        if os.environ.get("CI") == "true":
            fail("chromium is not installed (.ci/install-deps installs Debian's chromium)")
        print("SKIP: chromium is not installed")
        return SKIP
    with tempfile.TemporaryDirectory() as work:
        # The tutorial's command, on the port of both its programs.
        options = {"autoReport.all": "true", "autoReport.executionProfileProgramRunCount": "10",
                   "autoReport.outputDebugInfo": "true", "debug.allowOutOfMemory": "true",
                   "autoReport.outputSerializedGraph": "false"}
        for name, args in (("with_feeds", []), ("without_feeds", ["--without-feeds"])):
            env = dict(os.environ, POPLAR_ENGINE_OPTIONS=json.dumps(
                dict(options, **{"autoReport.directory": name})))
            done = run([lesson] + args, env=env, cwd=work)
            if done.stderr:
                fail(f"lesson 9 {args} printed on stderr (no key of the tutorial's is unknown):\n"
                     f"{done.stderr}")
            for f in ("memory.json", "trace.json", "profile.json", "profile.txt", "report.html"):
                if not os.path.isfile(os.path.join(work, name, f)):
                    fail(f"{name}/{f} was not written")
        run([pxl_report, "with_feeds", "without_feeds", "-o", "compare.html"], cwd=work)
        all_charts = {"memory": 1, "tiles": 1, "liveness": 1, "tensors": 1, "streaming": 1,
                      "timeline": 1, "op-kinds": 1}
        # The device loop's 4 runs against the first 10 of 200 single-step runs.
        check_page(chromium, os.path.join(work, "compare.html"), work,
                   {"charts": {k: 2 * v for k, v in all_charts.items()}, "runs": ["4", "10"]})
        check_page(chromium, os.path.join(work, "with_feeds", "report.html"), work,
                   {"charts": all_charts, "runs": ["4"]})
        shot = os.path.join(work, "compare.png")
        out = subprocess.run(
            [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
             f"--user-data-dir={work}/chromium-profile", "--window-size=1000,800",
             "--screenshot=" + shot, "file://" + os.path.join(work, "compare.html")],
            capture_output=True, text=True, timeout=120)
        if out.returncode != 0 or not os.path.isfile(shot):
            fail(f"chromium --screenshot failed ({out.returncode}):\n{out.stderr}")
        colours, differing = png_colours(shot)
        if len(colours) < 16 or differing < 1000:
            fail(f"the screenshot looks blank: {len(colours)} colours, {differing} pixels "
                 "differ from the first")
    print("report pages rendered in Chromium: 2 pages, no script error, every chart drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
