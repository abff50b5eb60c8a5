#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs.references: the code, the tests and the documents point only at what a reader of the
# repository has: its own files, or a public specification by its own section number ("Portals
# 4.3 §3.13.3", "UPC 1.3 §7.2.2", "GASNet 1.8.1 §3.3", "Table 3-4"). Refused anywhere in src/,
# include/, tools/, bench/, tests/, examples/, scripts/, cmake/, docs/, README.md and the top
# CMakeLists.txt (extended regular expressions, matched line by line):
#   [Ii]ssue #?N                 the issue tracker ("issue 13", "Issue 29 item 4")
#   [Cc]onformance items? N      a checklist kept outside (cite the spec's section instead)
#   [Nn]otes §X, [Nn]otes/...    the notes kept beside the repository, and their files by name
#                                (lower case: portals-4.3.md, psm2.md, upc-runtime.md,
#                                gasnet-1.8.1.md, engine-design.md, clients.md)
#   [Dd]esign §X, design ch. N, design Table N, [Ee]rratum/[Ee]rrata §X
#                                the UPC runtime's design document (docs/UPC.md says where
#                                Portico departs from it)
#   shared/notes, shared/specs, upc-runtime-on-portals4-design
# One exception keeps the titles of the measurements' record (docs/PERFORMANCE.md): a match may
# stand in a Markdown heading of a docs/*.md file, and inside a *...* or "..." span (on one line)
# that names such a heading: the span's text is the heading's, or the heading's text before its
# first colon; " → " and what follows it in the span name a part of that section.
#   check_references.sh SOURCE_DIR
set -eu
cd "$1"
export LC_ALL=C
# Bracket expressions instead of backslashes: awk -v would read "\." as an escape.
refused='(^|[^A-Za-z])[Ii]ssue #?[0-9]|[Cc]onformance items? [0-9]|(^|[^A-Za-z])[Nn]otes( ?§|/)'
refused="$refused"'|(^|[^A-Za-z0-9_./-])(portals-4[.]3|psm2|upc-runtime|gasnet-1[.]8[.]1|engine-design|clients)[.]md'
refused="$refused"'|(^|[^A-Za-z])[Dd]esign( §|( [Cc]h([.]|apter) | Table )[0-9])|[Ee]rrat(um|a) §'
refused="$refused"'|shared/(notes|specs)|upc-runtime-on-portals4-design'

headings=$(mktemp)
trap 'rm -f "$headings"' EXIT
sed -n 's/^#\{1,6\} \{1,\}//p' docs/*.md >"$headings"

found=$(grep -rInE --exclude=check_references.sh "$refused" \
            src include tools bench tests examples scripts cmake docs README.md CMakeLists.txt |
        awk -v refused="$refused" '
            NR == FNR { heading[$0] = 1; c = index($0, ":"); if (c) heading[substr($0, 1, c - 1)] = 1; next }
            {
                c = index($0, ":"); file = substr($0, 1, c - 1); rest = substr($0, c + 1)
                c = index(rest, ":"); text = substr(rest, c + 1)
                if (file ~ /^docs\/[^\/]*[.]md$/ && text ~ /^#+ /) next
                t = text; gsub(/\*\*/, "", t)   # bold is no span
                # The spans that name a heading, as [from, to] character positions in t; they are
                # looked for in u, t with its code spans (whose * are no markup) made x...x.
                u = t
                while (match(u, /`[^`]*`/)) {
                    x = ""; for (i = 0; i < RLENGTH; i++) x = x "x"
                    u = substr(u, 1, RSTART - 1) x substr(u, RSTART + RLENGTH)
                }
                n = 0; s = u; off = 0
                while (match(s, /\*[^*]+\*|"[^"]+"/)) {
                    name = substr(s, RSTART + 1, RLENGTH - 2)
                    a = index(name, " → "); if (a) name = substr(name, 1, a - 1)
                    if (name in heading) { n++; from[n] = off + RSTART; to[n] = off + RSTART + RLENGTH - 1 }
                    off += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
                }
                bad = 0; s = t; off = 0
                while (!bad && match(s, refused)) {
                    start = off + RSTART; end = start + RLENGTH - 1; inside = 0
                    for (i = 1; i <= n; i++) if (start >= from[i] && end <= to[i]) inside = 1
                    if (!inside) bad = 1
                    off += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
                }
                if (bad) print
            }' "$headings" -)
if [ -n "$found" ]; then
    echo "references to documents outside the repository (point to docs/ or to the spec's own section):" >&2
    echo "$found" >&2
    exit 1
fi
echo "every reference points into the repository or at a public specification's own section"
