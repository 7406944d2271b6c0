#!/usr/bin/env python3
"""docs/popxl-ops.md is current: every PopXL op function it marks as present is declared under
its PopXL name in the header it names, every one it marks missing is declared nowhere and
says why, and its count is the number of present rows. `popxl_ops_table.py SOURCE_ROOT`."""
import glob
import re
import sys

root = sys.argv[1]
doc = open(f'{root}/docs/popxl-ops.md', encoding='utf-8').read()
# Comments stripped: `ceil(n / size)` in a comment declares nothing.
headers = {p.split('/include/')[1]: re.sub(r'//[^\n]*', '', open(p, encoding='utf-8').read())
           for p in glob.glob(f'{root}/include/pxl/ops/*.hpp')}
rows = re.findall(r'^\| `ops(?:\.collectives|\.var_updates)?\.([a-z0-9_]+)` \| (.+?) \|$', doc, re.M)
errors = []


def declared(name, text):
    return re.search(r'\b' + re.escape(name) + r'\s*\(', text) is not None


present = 0
for name, status in rows:
    m = re.fullmatch(r'✓ `(pxl/ops/[a-z_]+\.hpp)`', status)
    if m:
        present += 1
        if not declared(name, headers.get(m.group(1), '')):
            errors.append(f'{name}: marked present in {m.group(1)}, which does not declare it')
    elif status.startswith('missing: ') and len(status) > len('missing: ') + 10:
        found = [h for h, text in headers.items() if declared(name, text)]
        if found:
            errors.append(f'{name}: marked missing, but {found[0]} declares it')
    else:
        errors.append(f'{name}: status "{status}" is neither ✓ `header` nor "missing: reason"')
if len(rows) != 149:
    errors.append(f'{len(rows)} rows, expected PopXL 3.4\'s 149 op functions')
claimed = re.search(r'\*\*(\d+) of 149\*\*', doc)
if not claimed or int(claimed.group(1)) != present:
    errors.append(f'the count says {claimed.group(1) if claimed else "nothing"}, '
                  f'but {present} rows are present')
for e in errors:
    print(e)
print(f'{present} of {len(rows)} PopXL op functions declared; {len(errors)} errors')
sys.exit(1 if errors else 0)
