#!/usr/bin/env python3
"""Checks that each umbrella header reaches every public header of its include directory.

Usage: umbrella_check.py [--also DIR]... DIR=UMBRELLA...

Every header under DIR (headers under a `detail/` folder excepted: they are not API) must be
included, directly or through other pxl headers, by UMBRELLA (a path relative to DIR, e.g.
include=pxl/pxl.hpp). Includes are followed through every DIR and every --also directory
(generated headers such as pxl/version.hpp). The headers are listed when the test runs, so
one added without its umbrella line fails here at once, without reconfiguring or compiling.

A forwarding header, left at the old path of a moved header so that users' includes keep
working, is not API of its own and need not be reached: it opens with
`// Forwards to pxl/NEW.hpp, ...` and its only include is that header, a public header of
the same DIR (so reaching the new home is what is checked). A forwarding header whose
include does not match its first line, or names no public header, fails the check.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
FORWARDS = re.compile(r'// Forwards to (\S+\.hpp)\b')


def forwarding_target(text):
    """The header a forwarding header names on its first line, or None for any other header."""
    match = FORWARDS.match(text)
    return match.group(1) if match else None


def main(argv):
    checks, roots = [], []
    args = iter(argv)
    for arg in args:
        if arg == "--also":
            roots.append(pathlib.Path(next(args)))
        else:
            directory, umbrella = arg.split("=", 1)
            checks.append((pathlib.Path(directory), umbrella))
            roots.append(pathlib.Path(directory))

    def resolve(rel):
        for root in roots:
            if (root / rel).is_file():
                return root / rel
        return None

    def reached_from(umbrella):
        reached, todo = set(), [umbrella]
        while todo:
            rel = todo.pop()
            if rel in reached:
                continue
            path = resolve(rel)
            if path is None:
                continue  # a header of another library, or a typo the compiler reports
            reached.add(rel)
            todo.extend(INCLUDE.findall(path.read_text(encoding="utf-8")))
        return reached

    failed = False
    for directory, umbrella in checks:
        headers = {p.relative_to(directory).as_posix() for p in directory.rglob("*.hpp")
                   if "detail" not in p.relative_to(directory).parts[:-1]}
        forwarding = {}
        for rel in sorted(headers):
            text = (directory / rel).read_text(encoding="utf-8")
            target = forwarding_target(text)
            if target is None:
                continue
            if INCLUDE.findall(text) != [target] or target not in headers - {rel}:
                failed = True
                print(f"umbrella_check: {directory / rel} says it forwards to {target}, but its "
                      f"only include must be that header, a public header of {directory}")
                continue
            forwarding[rel] = target
        headers -= forwarding.keys()
        if umbrella not in headers:
            print(f"umbrella_check: no umbrella header {directory / umbrella}")
            failed = True
            continue
        missing = sorted(headers - reached_from(umbrella) - {umbrella})
        if missing:
            failed = True
            print(f"umbrella_check: {umbrella} reaches neither directly nor through other "
                  f"headers these public headers of {directory}:")
            for rel in missing:
                print(f"  {rel}")
            print(f"Add `#include \"{missing[0]}\"` (and the others) to {umbrella}.")
        else:
            print(f"umbrella_check: {umbrella} reaches all {len(headers) - 1} public headers "
                  f"of {directory}" + (f" ({len(forwarding)} forwarding headers exempt)"
                                       if forwarding else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
