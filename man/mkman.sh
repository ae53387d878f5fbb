#!/bin/sh
# mkman.sh - makes a man page from a hand-written frame and the built
# program's own --help, so that the page and --help cannot drift:
#   man/mkman.sh PROG FRAME VERSION > PAGE
# The frame is roff.  A line that is exactly one of these directives is
# replaced by text taken from "PROG --help" (a section is a line at column
# 0 ending in ":" and the lines under it, up to the next blank line):
#   @VERSION@            (anywhere in a line) the version given
#   @USAGE@              the "usage:" line, as the SYNOPSIS
#   @DESCRIPTION@        the first paragraph after the usage line
#   @OPTIONS HEADING@    the section HEADING as a .TP list: an entry
#                        starts at column 2, its description is the rest
#                        of the line after two spaces (or after the
#                        section's description column) and the lines
#                        below it indented further
#   @VERBATIM HEADING@   the section HEADING as preformatted text
#   @TEXT PREFIX@        the paragraph that starts with PREFIX (which is
#                        dropped when it ends in ":"), as filled text
#   @COMMANDS HEADING@   for each entry of the section HEADING (the first
#                        word of its tag is a command), a .SS with the
#                        output of "PROG COMMAND --help": its usage line,
#                        its summary and its body as preformatted text
# Output is plain roff (man macros); nothing else is read or written.
# tests/suite_docs.sh checks that every option --help names is in the page.
set -eu
prog=${1:?usage: mkman.sh PROG FRAME VERSION}
frame=${2:?usage: mkman.sh PROG FRAME VERSION}
version=${3:?usage: mkman.sh PROG FRAME VERSION}
help=$("$prog" --help) || { echo "mkman.sh: $prog --help failed" >&2; exit 1; }
[ -n "$help" ] || { echo "mkman.sh: $prog --help printed nothing" >&2; exit 1; }
printf '%s\n' "$help" | awk -v prog="$prog" -v version="$version" -v frame="$frame" '
# roff-safe text: backslashes, hyphens, a leading dot or quote.
function esc(s) {
  gsub(/\\/, "\\e", s)
  gsub(/-/, "\\-", s)
  if (s ~ /^[.'\'']/) s = "\\&" s
  return s
}
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
# A tag: words that start with "-" in bold, the others in italics.
function tag(s,   n, w, i, out, word, tail) {
  n = split(s, w, / +/)
  out = ""
  for (i = 1; i <= n; i++) {
    word = w[i]; tail = ""
    if (word ~ /,$/) { tail = ","; sub(/,$/, "", word) }
    if (word ~ /^-/) out = out (i > 1 ? " " : "") "\\fB" esc(word) "\\fR" tail
    else out = out (i > 1 ? " " : "") "\\fI" esc(word) "\\fR" tail
  }
  return out
}
# The line index where section h starts (its heading), or 0.
function section(h,   i) {
  for (i = 1; i <= nl; i++) if (L[i] == h) return i
  return 0
}
function indent(s) { match(s, /^ */); return RLENGTH }
# The description column of the section at i: the most common indent of
# its continuation lines.
function desccol(i,   j, n, best, k, cnt) {
  delete cnt
  for (j = i + 1; j <= nl && L[j] != ""; j++) {
    n = indent(L[j])
    if (n > 2) cnt[n]++
  }
  best = 0
  for (k in cnt) if (best == 0 || cnt[k] > cnt[best]) best = k
  return best + 0
}
# Splits entry line s into T (tag) and D (description) for column col.
function split_entry(s, col,   body, p) {
  body = substr(s, 3)
  if (col > 0 && length(s) > col && substr(s, col, 1) == " " && substr(s, col + 1, 1) != " " \
      && index(trim(substr(s, 3, col - 2)), "  ") == 0) {
    T = trim(substr(s, 3, col - 2)); D = trim(substr(s, col + 1)); return
  }
  p = index(body, "  ")
  if (p > 0) { T = trim(substr(body, 1, p - 1)); D = trim(substr(body, p)); return }
  T = trim(body); D = ""
}
function options(h,   i, j, col, first) {
  i = section(h)
  if (!i) { print "mkman.sh: no section \"" h "\" in " prog " --help" > "/dev/stderr"; bad = 1; return }
  col = desccol(i)
  for (j = i + 1; j <= nl && L[j] != ""; j++) {
    if (indent(L[j]) == 2) {
      split_entry(L[j], col)
      print ".TP"
      print tag(T)
      if (D != "") print esc(D)
    } else {
      print esc(trim(L[j]))
    }
  }
}
function verbatim_lines(from, to,   j, s) {
  print ".PP"
  print ".nf"
  print ".RS 2"
  for (j = from; j <= to; j++) {
    s = L[j]; gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
    print (s ~ /^[.'\'']/ ? "\\&" : "") s
  }
  print ".RE"
  print ".fi"
}
function verbatim(h,   i, j) {
  i = section(h)
  if (!i) { print "mkman.sh: no section \"" h "\" in " prog " --help" > "/dev/stderr"; bad = 1; return }
  for (j = i + 1; j <= nl && L[j] != ""; j++) ;
  verbatim_lines(i + 1, j - 1)
}
function text(p,   i, j, s) {
  for (i = 1; i <= nl; i++) if (index(L[i], p) == 1 && (i == 1 || L[i - 1] == "")) break
  if (i > nl) { print "mkman.sh: no paragraph \"" p "\" in " prog " --help" > "/dev/stderr"; bad = 1; return }
  print ".PP"
  for (j = i; j <= nl && L[j] != ""; j++) {
    s = L[j]
    if (j == i && p ~ /:$/) s = substr(s, length(p) + 1)
    s = trim(s)
    if (s != "") print esc(s)
  }
}
function usage(   s) {
  s = L[1]; sub(/^usage: */, "", s)
  n = split(s, w, / +/)
  out = "\\fB" esc(w[1]) "\\fR"
  for (k = 2; k <= n; k++) out = out " " esc(w[k])
  print out
}
function description(   j) {
  print ".PP"
  for (j = 3; j <= nl && L[j] != ""; j++) print esc(trim(L[j]))
}
function commands(h,   i, j, cmd, line, H, m, k, s, run) {
  i = section(h)
  if (!i) { print "mkman.sh: no section \"" h "\" in " prog " --help" > "/dev/stderr"; bad = 1; return }
  for (j = i + 1; j <= nl && L[j] != ""; j++) {
    if (indent(L[j]) != 2) continue
    split(trim(L[j]), cmdw, / +/)
    cmd = cmdw[1]
    m = 0
    run = prog " " cmd " --help"
    while ((run | getline line) > 0) H[++m] = line
    close(run)
    if (m == 0) { print "mkman.sh: " prog " " cmd " --help printed nothing" > "/dev/stderr"; bad = 1; continue }
    s = H[1]; sub(/^usage: [^ ]* */, "", s)
    print ".SS \"" esc(s) "\""
    # the summary (after the usage line and a blank), then the body
    for (k = 3; k <= m && H[k] != ""; k++) print esc(trim(H[k]))
    if (k < m) {
      print ".PP"; print ".nf"; print ".RS 2"
      for (k = k + 1; k <= m; k++) {
        s = H[k]; gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
        print (s ~ /^[.'\'']/ ? "\\&" : "") s
      }
      print ".RE"; print ".fi"
    }
  }
}
{ L[++nl] = $0 }
END {
  if (L[1] !~ /^usage: /) { print "mkman.sh: " prog " --help does not start with usage:" > "/dev/stderr"; exit 1 }
  while ((getline f < frame) > 0) {
    gsub(/@VERSION@/, version, f)
    if (f == "@USAGE@") usage()
    else if (f == "@DESCRIPTION@") description()
    else if (f ~ /^@OPTIONS .*@$/) options(substr(f, 10, length(f) - 10))
    else if (f ~ /^@VERBATIM .*@$/) verbatim(substr(f, 11, length(f) - 11))
    else if (f ~ /^@TEXT .*@$/) text(substr(f, 7, length(f) - 7))
    else if (f ~ /^@COMMANDS .*@$/) commands(substr(f, 11, length(f) - 11))
    else if (f ~ /^@[A-Z]+( .*)?@$/) { print "mkman.sh: unknown directive " f > "/dev/stderr"; bad = 1 }
    else print f
  }
  exit bad
}'
