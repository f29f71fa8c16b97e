#!/usr/bin/env python3
"""The clang-tidy cache key of one translation unit, for scripts/lint (which says what it covers).

  scripts/lint-key.py ROOT BUILD CLANG++ TOOL_KEY DEPFILE UNIT

Prints the key, or exits 1 when the unit has none (then it is checked and not cached): no single
compile command, or the preprocessor failed.
"""
import hashlib, json, os, shlex, subprocess, sys

root, build, cpp, tool_key, depfile, unit = sys.argv[1:]
prefixes = {}
for path, tag in ((root, "@ROOT@"), (build, "@BUILD@")):
    prefixes[path] = tag
    prefixes[os.path.realpath(path)] = tag
prefixes = sorted(prefixes.items(), key=lambda p: -len(p[0]))  # build/ before the root above it


def norm(text):
    """The text with this clone's and build's paths replaced, so another clone has the same key."""
    for path, tag in prefixes:
        if isinstance(text, bytes):
            path, tag = path.encode(), tag.encode()
        text = text.replace(path, tag)
    return text


key = hashlib.sha256()


def add(label, data):
    if isinstance(data, str):
        data = data.encode()
    key.update(b"%s %d\n" % (label.encode(), len(data)))
    key.update(data)


def make_deps(text):
    """The prerequisites of a Makefile rule written by clang -MD -MF (-MT x)."""
    text = text.split(":", 1)[1].replace("\\\n", " ")
    deps, cur, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in " #\\":
            cur += text[i + 1]
            i += 2
            continue
        if c == "$" and text[i + 1 : i + 2] == "$":
            cur += "$"
            i += 2
            continue
        if c.isspace():
            if cur:
                deps.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        deps.append(cur)
    return deps


path = os.path.normpath(os.path.join(root, unit))
with open(os.path.join(build, "compile_commands.json")) as f:
    entries = [e for e in json.load(f)
               if os.path.normpath(os.path.join(e["directory"], e["file"])) == path]
if len(entries) != 1:
    sys.exit(1)  # none: clang-tidy guesses a command; several: it runs each
entry = entries[0]
args = entry.get("arguments") or shlex.split(entry["command"])
add("tool", tool_key)
add("directory", norm(entry["directory"]))
add("file", norm(entry["file"]))
add("arguments", "\0".join(norm(a) for a in args))

# The compile command as a preprocessor, as clang-tidy runs it: its argv[0] (clang finds the GCC
# installation, libstdc++, from it), clang-tidy's clang (same resource directory), without the
# output and dependency-file options (clang-tidy strips them too).
pp = [args[0]]
skip = False
for a in args[1:]:
    if skip:
        skip = False
    elif a in ("-o", "-MF", "-MT", "-MQ"):
        skip = True
    elif a in ("-c", "-M", "-MM", "-MD", "-MMD", "-MP", "-MG", "-fsyntax-only") or \
            a.startswith(("-o", "-MF", "-MT", "-MQ")):
        pass
    else:
        pp.append(a)
run = subprocess.run(pp + ["-E", "-P", "-MD", "-MF", depfile, "-MT", "x", "-o", "-"],
                     executable=cpp, cwd=entry["directory"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
if run.returncode != 0:
    sys.exit(1)
# The preprocessed text: what the headers' macros and conditions made of them (also what no file
# content shows, e.g. __has_include of a file that is absent). -P: no line markers, so no paths.
add("preprocessed", norm(run.stdout))
# The raw bytes of every file the preprocessor read, in order, the TU first: -E drops comments,
# and clang-tidy reads them (NOLINT, NOLINTNEXTLINE, NOLINTBEGIN/END) and reports by line.
with open(depfile) as f:
    deps = make_deps(f.read())
for dep in deps:
    with open(os.path.join(entry["directory"], dep), "rb") as f:
        add("path", norm(dep))
        add("content", f.read())
print(key.hexdigest())
