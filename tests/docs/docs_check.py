#!/usr/bin/env python3
"""docs_check.py - the checks tests/suite_docs.sh makes on the Markdown
documentation and the man pages (standard library only).

  docs_check.py links FILE...        every relative link to a file, and
                                     every #anchor, resolves (GitHub's
                                     anchors: headings lowercased, marks
                                     other than - and _ dropped, spaces
                                     made -, repeats numbered -1, -2 ...)
  docs_check.py blocks FILE OUTDIR   writes each ```sh runnable block of
                                     FILE to OUTDIR/NNN.sh (its first line
                                     a comment "# FILE:LINE"); prints the
                                     paths written
  docs_check.py cprogs FILE OUTDIR   the same for each ```c block that is
                                     a whole program (it has main)
  docs_check.py man PROG PAGE        the options (and for the CLI the
                                     commands and each command's options)
                                     that "PROG --help" names against those
                                     the generated man page names

Each prints one line per problem and exits 1 if there is any.  Links and
headings inside fenced code blocks and code spans are not looked at.
"""
import os
import re
import subprocess
import sys

FENCE = re.compile(r'^\s{0,3}(`{3,}|~{3,})(.*)$')
HEADING = re.compile(r'^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
LINK = re.compile(r'!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
CODESPAN = re.compile(r'(`+)(.+?)\1')


def closes(m, fence):
    """Whether fence line m closes a block opened by fence: the same
    character, at least as many, and no info string (CommonMark)."""
    run = m.group(1)
    return run[0] == fence[0] and len(run) >= len(fence) and not m.group(2).strip()


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fence = None
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            m = FENCE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                    continue
                if closes(m, fence):
                    fence = None
                    continue
            if fence is None:
                yield n, line


def slug(text):
    text = LINK.sub(lambda m: m.group(1), text)
    text = text.replace('`', '')
    text = re.sub(r'<[^>]+>', '', text)
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


_anchors = {}


def anchors(path):
    path = os.path.normpath(path)
    if path not in _anchors:
        seen = {}
        out = set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            if s in seen:
                seen[s] += 1
                s = '%s-%d' % (s, seen[s])
            else:
                seen[s] = 0
            out.add(s)
        for _, line in prose_lines(path):  # explicit <a id="..."> / name
            for m in re.finditer(r'<a\s+(?:id|name)="([^"]+)"', line):
                out.add(m.group(1))
        _anchors[path] = out
    return _anchors[path]


def links(files):
    bad = 0
    for path in files:
        base = os.path.dirname(path)
        for n, line in prose_lines(path):
            for m in LINK.finditer(CODESPAN.sub('', line)):
                target = m.group(2)
                if not target or re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                    continue  # http:, https:, mailto: ...
                file_part, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(base, file_part)) if file_part else path
                if not os.path.exists(dest):
                    print('%s:%d: link to %s: no such file' % (path, n, target))
                    bad += 1
                    continue
                if anchor:
                    if not dest.endswith('.md') or os.path.isdir(dest):
                        print('%s:%d: link to %s: an anchor into a file that is not Markdown' % (path, n, target))
                        bad += 1
                    elif anchor not in anchors(dest):
                        print('%s:%d: link to %s: no heading makes the anchor #%s in %s' % (path, n, target, anchor, dest))
                        bad += 1
    return bad


def fenced(path, want):
    """(line, text) of each fenced block whose info string want() accepts."""
    out = []
    fence = None
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip('\n'))
            if fence is None:
                if m:
                    fence = (m.group(1), m.group(2).strip(), n, [])
                continue
            if m and closes(m, fence[0]):
                if want(fence[1]):
                    out.append((fence[2], ''.join(fence[3])))
                fence = None
                continue
            fence[3].append(line)
    return out


def write_blocks(path, outdir, blocks, ext):
    os.makedirs(outdir, exist_ok=True)
    stem = re.sub(r'[^A-Za-z0-9]+', '_', path)
    for i, (n, text) in enumerate(blocks, 1):
        dest = os.path.join(outdir, '%s_%03d.%s' % (stem, i, ext))
        with open(dest, 'w', encoding='utf-8') as f:
            f.write(('# %s:%d\n' if ext == 'sh' else '/* %s:%d */\n') % (path, n))
            f.write(text)
        print(dest)
    return 0


def is_runnable(info):
    words = info.split()
    return len(words) >= 2 and words[0] in ('sh', 'bash', 'shell') and 'runnable' in words[1:]


# ---- man pages against --help ----------------------------------------------

OPT = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)')


def tag_options(tag):
    return set(OPT.findall(tag))


def entry_options(lines):
    """Options named by the entries of help-style lines: a line indented by
    2 to 4 spaces that starts with "-" (descriptions go on further in);
    its tag ends at two spaces."""
    out = set()
    for line in lines:
        if re.match(r'^ {2,4}-', line):
            out |= tag_options(re.split(r'\s{2,}', line.strip())[0])
    return out


def help_sections(text, prefix):
    """The lines under each heading (column 0, ending in ':') that starts
    with prefix, up to the next blank line."""
    lines = text.split('\n')
    out = []
    for i, line in enumerate(lines):
        if line.startswith(prefix) and line.endswith(':'):
            for l2 in lines[i + 1:]:
                if not l2.strip():
                    break
                out.append(l2)
    return out


def unroff(s):
    s = re.sub(r'\\f[BIRP]', '', s)
    s = s.replace('\\-', '-').replace('\\e', '\\').replace('\\&', '')
    return s


def page_sections(page):
    """{SECTION: [lines]} of a man page."""
    out = {}
    cur = None
    with open(page, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('.SH '):
                cur = line[4:].strip().strip('"')
                out[cur] = []
            elif cur is not None:
                out[cur].append(line)
    return out


def page_tp_options(lines):
    out = set()
    for i, line in enumerate(lines):
        if line == '.TP' and i + 1 < len(lines):
            out |= tag_options(unroff(lines[i + 1]))
    return out


def run_help(argv):
    r = subprocess.run(argv + ['--help'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=30)
    return r.stdout


def diff(what, in_help, in_page):
    bad = 0
    for o in sorted(in_help - in_page):
        print('%s: in --help, not in the page: %s' % (what, o))
        bad += 1
    for o in sorted(in_page - in_help):
        print('%s: in the page, not in --help: %s' % (what, o))
        bad += 1
    return bad


def man(prog, page):
    name = os.path.basename(page)
    if not os.path.exists(page):
        print('%s: no such page' % page)
        return 1
    text = run_help([prog])
    secs = page_sections(page)
    bad = 0
    opts_help = entry_options(help_sections(text, 'Options'))
    if not opts_help:
        print('%s --help: no options found' % prog)
        bad += 1
    bad += diff(name + ' OPTIONS', opts_help, page_tp_options(secs.get('OPTIONS', [])))
    cmd_lines = help_sections(text, 'Commands')
    if cmd_lines:
        cmds_help = [l.split()[0] for l in cmd_lines if re.match(r'^  \S', l)]
        blocks = {}
        cur = None
        for line in secs.get('COMMANDS', []):
            if line.startswith('.SS '):
                cur = unroff(line[4:].strip().strip('"')).split()[0]
                blocks[cur] = []
            elif cur is not None:
                blocks[cur].append(unroff(line))
        bad += diff(name + ' COMMANDS', set(cmds_help), set(blocks))
        for c in cmds_help:
            if c in blocks:
                sub = run_help([prog, c]).split('\n')
                bad += diff('%s: %s' % (name, c), entry_options(sub), entry_options(blocks[c]))
    return bad


def main(argv):
    if len(argv) >= 2 and argv[0] == 'links':
        return 1 if links(argv[1:]) else 0
    if len(argv) == 3 and argv[0] == 'blocks':
        return write_blocks(argv[1], argv[2], fenced(argv[1], is_runnable), 'sh')
    if len(argv) == 3 and argv[0] == 'cprogs':
        progs = [b for b in fenced(argv[1], lambda i: i.split()[:1] == ['c'])
                 if re.search(r'\bmain\s*\(', b[1])]
        return write_blocks(argv[1], argv[2], progs, 'c')
    if len(argv) == 3 and argv[0] == 'man':
        return 1 if man(argv[1], argv[2]) else 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
