#!/usr/bin/env python3
"""The image's records of what it holds (scripts/image-sbom's) against what it holds:
  sbom_check.py ROOT VERSION [--dpkg]
ROOT is the image's root filesystem (scripts/image-build's ROOT, or a mounted image). Checks:
  - the SBOM is JSON with SPDX 2.3's required fields (document, packages, files, relationships),
    eoc-operator at VERSION, each Debian package with its purl;
  - every file the SBOM lists is in ROOT with the SBOM's SHA-1 and SHA-256, in one package;
  - every file in ROOT is in the SBOM (but the SBOM itself and the dpkg records);
  - each Debian package has its status stanza in /var/lib/dpkg/status.d/ (the same name, version,
    architecture, installed), and no stanza is there for a package the SBOM lacks;
  - with --dpkg, run where ROOT was laid out: each file that a package of this machine lists (found
    by the file's identity, not its path, and with that package's md5sum) is in that package in the
    SBOM, whose stanza is this machine's, and a file no package lists is eoc-operator's own or
    marked as made by its package's scripts.
Prints every problem and exits 1 if there is one.
"""
import glob, hashlib, json, os, re, subprocess, sys
from urllib.parse import unquote

SBOM = "usr/share/doc/eoc-operator/sbom.spdx.json"
STATUS_DIR = "var/lib/dpkg/status.d"
ID = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")
PURL = re.compile(r"^pkg:deb/debian/([^@?]+)@([^?]+)\?arch=([a-z0-9-]+)&distro=debian-12$")

root, version = sys.argv[1:3]
with_dpkg = sys.argv[3:] == ["--dpkg"]
problems = []


def problem(text):
    problems.append(text)


def done():
    for text in problems:
        print(f"sbom_check: {text}", file=sys.stderr)
    sys.exit(1 if problems else 0)


def digest(path, algorithm):
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stanza_fields(text):
    return dict(re.findall(r"^([A-Za-z0-9-]+): ?(.*)$", text, re.M))


try:
    with open(os.path.join(root, SBOM)) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    problem(f"no SBOM as JSON at /{SBOM}: {e}")
    done()

# SPDX 2.3's required fields.
for field, want in (("spdxVersion", "SPDX-2.3"), ("dataLicense", "CC0-1.0"), ("SPDXID", "SPDXRef-DOCUMENT")):
    if doc.get(field) != want:
        problem(f"document {field} is {doc.get(field)!r}, want {want!r}")
if not doc.get("name"):
    problem("document has no name")
if not re.match(r"^[a-z][a-z0-9+.-]*:[^#]+$", doc.get("documentNamespace", "")):
    problem(f"documentNamespace {doc.get('documentNamespace')!r} is not a URI without '#'")
creation = doc.get("creationInfo", {})
if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", creation.get("created", "")):
    problem(f"creationInfo.created {creation.get('created')!r} is not a UTC time")
creators = creation.get("creators") or []
if not creators or not all(re.match(r"^(Person|Organization|Tool): \S", c) for c in creators):
    problem(f"creationInfo.creators {creators!r}")

ids = set()
for element in doc.get("packages", []) + doc.get("files", []):
    ident = element.get("SPDXID", "")
    if not ID.match(ident) or ident in ids:
        problem(f"SPDXID {ident!r} is malformed or repeated")
    ids.add(ident)
packages = {p.get("SPDXID"): p for p in doc.get("packages", [])}
for p in packages.values():
    for field in ("name", "downloadLocation"):
        if not p.get(field):
            problem(f"package {p.get('SPDXID')} has no {field}")
    if "filesAnalyzed" in p and p["filesAnalyzed"] is not False and "packageVerificationCode" not in p:
        problem(f"package {p.get('name')} says its files were analysed but has no verification code")
files = {f.get("SPDXID"): f for f in doc.get("files", [])}
for f in files.values():
    if not f.get("fileName"):
        problem(f"file {f.get('SPDXID')} has no fileName")
    algorithms = {c.get("algorithm") for c in f.get("checksums", [])}
    if not {"SHA1", "SHA256"} <= algorithms:
        problem(f"file {f.get('fileName')} has checksums {sorted(algorithms)}, want SHA1 and SHA256")
relationships = doc.get("relationships", [])
for r in relationships:
    for end in ("spdxElementId", "relatedSpdxElement"):
        if r.get(end) not in ids | {"SPDXRef-DOCUMENT"}:
            problem(f"relationship {r} names no element of the document")

described = [r["relatedSpdxElement"] for r in relationships
             if r.get("spdxElementId") == "SPDXRef-DOCUMENT" and r.get("relationshipType") == "DESCRIBES"]
product = packages.get(described[0]) if len(described) == 1 else None
if not product or product.get("name") != "eoc-operator" or product.get("versionInfo") != version:
    problem(f"the document describes {[packages.get(d, {}).get('name') for d in described]}, want "
            f"eoc-operator {version} alone (it has {product and product.get('versionInfo')})")

# Debian packages: name, version and architecture from the purl agree with the package's fields.
debian = {}  # SPDXID -> (name, version, arch)
for ident, p in packages.items():
    purls = [e["referenceLocator"] for e in p.get("externalRefs", []) if e.get("referenceType") == "purl"]
    deb = [PURL.match(u) for u in purls if u.startswith("pkg:deb/")]
    if not deb:
        continue
    if not deb[0]:
        problem(f"package {p.get('name')}'s purl {purls} is not pkg:deb/debian/NAME@VERSION?arch=A&distro=debian-12")
        continue
    name, pkg_version, arch = unquote(deb[0][1]), unquote(deb[0][2]), deb[0][3]
    if (name, pkg_version) != (p.get("name"), p.get("versionInfo")):
        problem(f"package {p.get('name')} {p.get('versionInfo')} has the purl {purls[0]}")
    debian[ident] = (name, pkg_version, arch)

# Files: each in one package, in ROOT with its checksums.
container = {}
for r in relationships:
    if r.get("relationshipType") == "CONTAINS" and r.get("relatedSpdxElement") in files:
        if r["relatedSpdxElement"] in container:
            problem(f"{files[r['relatedSpdxElement']].get('fileName')} is in two packages")
        container[r["relatedSpdxElement"]] = r["spdxElementId"]
listed = {}  # image path -> (file element, package element)
for ident, f in files.items():
    name = f.get("fileName", "")
    if not name.startswith("./") or os.path.normpath(name) != name[2:]:
        problem(f"fileName {name!r} is not a normal path under ./")
        continue
    path = name[1:]
    if ident not in container:
        problem(f"{path} is in no package")
        continue
    listed[path] = (f, packages[container[ident]])
    on_disk = os.path.join(root, path.lstrip("/"))
    if not os.path.isfile(on_disk) or os.path.islink(on_disk):
        problem(f"{path} is in the SBOM but not a file in the image")
        continue
    for c in f.get("checksums", []):
        if c.get("algorithm") in ("SHA1", "SHA256"):
            got = digest(on_disk, c["algorithm"].lower())
            if got != c.get("checksumValue"):
                problem(f"{path}: {c['algorithm']} {got}, the SBOM says {c.get('checksumValue')}")

present = set()
for dirpath, dirnames, filenames in os.walk(root):
    for name in filenames:
        path = "/" + os.path.relpath(os.path.join(dirpath, name), root)
        if path == "/" + SBOM or path.startswith(f"/{STATUS_DIR}/"):
            continue
        present.add(path)
        if path not in listed:
            problem(f"{path} is in the image but not in the SBOM")

# The dpkg records, one for each Debian package.
stanzas = {}
for path in glob.glob(os.path.join(root, STATUS_DIR, "*")):
    with open(path) as f:
        stanzas[os.path.basename(path)] = f.read()
for ident, (name, pkg_version, arch) in debian.items():
    fields = stanza_fields(stanzas.get(name, ""))
    got = (fields.get("Package"), fields.get("Version"), fields.get("Architecture"), fields.get("Status"))
    if got != (name, pkg_version, arch, "install ok installed"):
        problem(f"/{STATUS_DIR}/{name}: {got}, want {(name, pkg_version, arch, 'install ok installed')}")
extra = set(stanzas) - {name for name, _, _ in debian.values()}
if extra:
    problem(f"status stanzas of packages the SBOM lacks: {sorted(extra)}")

if with_dpkg:
    # Owners found apart from scripts/image-sbom's lookup: every path dpkg lists with the file's
    # name, kept where it is the very file (same device and inode) this machine has at the
    # image's path, and where the image's copy has that package's md5sum.
    # (A library is copied from its real file to its soname's path: the pattern is the real name.)
    patterns = sorted({"*/" + os.path.basename(os.path.realpath(p)) for p in present})
    out = subprocess.run(["dpkg-query", "-S", *patterns], capture_output=True, text=True).stdout
    owners = {}  # image path -> {package}
    sums = {}

    def md5sums(package):
        """The package's md5sums file: path (no leading /) -> md5."""
        if package not in sums:
            sums[package] = {}
            path = subprocess.run(["dpkg-query", "--control-path", package, "md5sums"],
                                  capture_output=True, text=True).stdout.strip()
            if path:
                with open(path) as f:
                    sums[package] = {l[34:].rstrip("\n"): l[:32] for l in f}
        return sums[package]

    for line in out.splitlines():
        names, _, dpkg_path = line.rpartition(": ")
        if line.startswith("diversion by") or not names:
            continue
        for path in present:
            try:
                same = os.path.samefile(dpkg_path, path) and not os.path.isdir(dpkg_path)
            except OSError:
                same = False
            if same:
                for package in names.split(", "):
                    want = md5sums(package).get(dpkg_path.lstrip("/"), "")
                    if want and want == digest(os.path.join(root, path.lstrip("/")), "md5"):
                        owners.setdefault(path, set()).add(package.split(":")[0])
                    elif not os.path.islink(dpkg_path):
                        problem(f"{path} differs from {dpkg_path} of {package} (md5sum {want or 'none'})")
    for path in sorted(present & set(listed)):
        element, package = listed[path]
        name = package.get("name")
        if path in owners:
            if name not in owners[path]:
                problem(f"{path} is {sorted(owners[path])}'s (dpkg), the SBOM says {name}'s")
                continue
            want = subprocess.run(["dpkg-query", "-s", name], capture_output=True, text=True).stdout
            if stanzas.get(name, "").rstrip("\n") != want.rstrip("\n"):
                problem(f"/{STATUS_DIR}/{name} is not this machine's dpkg status stanza of {name}")
        elif package is not product and "comment" not in element:
            problem(f"{path}: no package lists it, yet the SBOM gives it to {name} without saying why")
done()
