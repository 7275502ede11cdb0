"""The package's build backend (PEP 517, PEP 660): writes the pure-Python wheel itself.

Why not setuptools: `pip install ./python` must work offline with any Python 3.8 or later, and
setuptools is not always there to build with. An isolated build would download it; without
isolation the interpreter's own is used, which may be missing (Python 3.12 venvs have none), too
old to read pyproject.toml's [project] table (setuptools 56 of Python 3.8 names the package
UNKNOWN), or unable to write a wheel without the separate `wheel` package (setuptools before
70.1). A pure-Python wheel is a zip of the package and three metadata files, so this writes it
with the standard library alone and needs nothing installed: get_requires_* answer [].

The metadata comes from pyproject.toml's [project] table, read by a parser for the few forms it
uses (basic strings, one-line arrays of strings, `{text = "..."}`), because tomllib is 3.11+;
anything else there is refused rather than guessed. Must stay Python 3.8 syntax.
"""
import base64
import hashlib
import io
import json
import os
import re
import tarfile
import time
import zipfile

PACKAGE = "airlock"  # the one import package the distribution ships
SDIST_FILES = ("pyproject.toml", "README.md", "_build/backend.py")


def _toml_value(text, where):
    text = text.strip()
    if text.startswith('"') or text.startswith("["):
        try:  # a basic string or a one-line array of them reads as JSON
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, str) or (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value)):
            return value
    m = re.match(r'^\{\s*text\s*=\s*("(?:[^"\\]|\\.)*")\s*\}$', text)
    if m:
        return {"text": json.loads(m.group(1))}
    raise ValueError("pyproject.toml: %s: a form this backend does not read: %s" % (where, text))


def _project():
    """pyproject.toml's [project] table, as a dict."""
    with open("pyproject.toml", encoding="utf-8") as f:
        lines = f.read().splitlines()
    project, table = {}, None
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            table = line.strip("[]").strip()
            continue
        if table == "project":
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError("pyproject.toml:%d: not `key = value`: %s" % (n, line))
            project[key.strip()] = _toml_value(value, "line %d" % n)
    for key in ("name", "version"):
        if not isinstance(project.get(key), str):
            raise ValueError("pyproject.toml: [project] needs a string %r" % key)
    return project


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    """The core metadata (version 2.1): METADATA in the wheel, PKG-INFO in the sdist."""
    out = ["Metadata-Version: 2.1", "Name: " + project["name"],
           "Version: " + project["version"]]
    if "description" in project:
        out.append("Summary: " + project["description"])
    license_ = project.get("license")
    if isinstance(license_, dict):
        out.append("License: " + license_["text"])
    if "requires-python" in project:
        out.append("Requires-Python: " + project["requires-python"])
    for req in project.get("dependencies", []):
        out.append("Requires-Dist: " + req)
    body = ""
    if "readme" in project:
        out.append("Description-Content-Type: text/markdown")
        with open(project["readme"], encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(out) + "\n\n" + body).encode("utf-8")


def _dist_info(project):
    return "%s-%s.dist-info" % (_dist_name(project), project["version"])


def _dist_info_files(project, tag_line):
    return {"METADATA": _metadata(project),
            "WHEEL": ("Wheel-Version: 1.0\nGenerator: airlock _build/backend.py\n"
                      "Root-Is-Purelib: true\n%s\n" % tag_line).encode(),
            "top_level.txt": (PACKAGE + "\n").encode()}


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _package_files():
    """(path in the wheel, bytes) of every file of the package, sorted, no bytecode."""
    files = []
    for root, dirs, names in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if not name.endswith((".pyc", ".pyo")):
                path = os.path.join(root, name)
                files.append((path.replace(os.sep, "/"), _read(path)))
    return files


def _stamp():
    # reproducible: the same sources give the same archive (SOURCE_DATE_EPOCH when set)
    t = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return max(t, 315532800)  # zip cannot hold times before 1980


def _write_wheel(directory, project, members):
    """Writes the wheel with `members` [(path, bytes)] and its .dist-info; returns its name."""
    name = "%s-%s-py3-none-any.whl" % (_dist_name(project), project["version"])
    info = _dist_info(project)
    members = list(members) + [(info + "/" + k, v) for k, v in
                               sorted(_dist_info_files(project, "Tag: py3-none-any").items())]
    record = []
    date = time.gmtime(_stamp())[:6]
    path = os.path.join(directory, name)
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in members:
            zi = zipfile.ZipInfo(arc, date)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (arc, digest.decode(), len(data)))
        record.append(info + "/RECORD,,")
        zi = zipfile.ZipInfo(info + "/RECORD", date)
        zi.external_attr = 0o644 << 16
        zi.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(zi, "\n".join(record) + "\n")
    os.replace(path + ".part", path)
    return name


def _write_dist_info(directory, project):
    info = _dist_info(project)
    os.makedirs(os.path.join(directory, info), exist_ok=True)
    for k, v in _dist_info_files(project, "Tag: py3-none-any").items():
        with open(os.path.join(directory, info, k), "wb") as f:
            f.write(v)
    return info


# ---------------------------------------------------------------------- PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, _project())


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, _project())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _project(), _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose .pth puts this source directory on sys.path."""
    project = _project()
    pth = (os.path.abspath(os.getcwd()) + "\n").encode()
    return _write_wheel(wheel_directory, project, [("_%s_editable.pth" % PACKAGE, pth)])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    name = base + ".tar.gz"
    members = [(p, _read(p)) for p in SDIST_FILES]
    members += _package_files() + [("PKG-INFO", _metadata(project))]
    path = os.path.join(sdist_directory, name)
    with tarfile.open(path + ".part", "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for arc, data in members:
            ti = tarfile.TarInfo(base + "/" + arc)
            ti.size, ti.mtime, ti.mode = len(data), _stamp(), 0o644
            tar.addfile(ti, io.BytesIO(data))
    os.replace(path + ".part", path)
    return name
