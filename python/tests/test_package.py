"""Packaging: `pip install ./python` works offline - with Debian's pip and setuptools, with no
setuptools nor wheel at all (the build backend, _build/backend.py, writes the wheel itself), on
every Python 3.8+ at hand - and the installed package runs; the wheel is well formed and the
sources keep to Python 3.8's syntax; and the README's Python section shows exactly the example
files the tests run."""
import ast
import base64
import glob
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
ROOT = os.path.dirname(PKG)


def _pip_env():
    # no index, no pip configuration of this machine: what an offline Debian 12 has
    return dict(os.environ, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")


def _copy(tmp_path):
    # a copy, so the build leaves no build/ or egg-info in the source tree
    src = tmp_path / "src"
    subprocess.run(["cp", "-r", PKG, str(src)], check=True)
    for junk in ("build", "airlock.egg-info"):
        subprocess.run(["rm", "-rf", str(src / junk)], check=True)
    return src


def _runs(python, tmp_path, env=None):
    code = ("import airlock, sys\n"
            "assert airlock.__file__.startswith(sys.argv[1]), airlock.__file__\n"
            "print(airlock.Runner().run('return 6 * 7').value)\n")
    run = subprocess.run([python, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env=env, cwd="/", timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "42"


def test_pip_install_offline_in_a_venv(tmp_path):
    """`pip install ./python` as is (an isolated build, no index) in a venv of Debian's
    interpreter that sees its pip (Debian's own python3 refuses pip installs,
    PEP 668)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    out = subprocess.run([py, "-m", "pip", "install", str(_copy(tmp_path))],
                         capture_output=True, text=True, timeout=300, env=_pip_env())
    assert out.returncode == 0, out.stdout + out.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _runs(py, venv, env)


def test_pip_install_offline_target(tmp_path):
    target = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                          "--target", str(target), str(_copy(tmp_path))],
                         capture_output=True, text=True, timeout=300, env=_pip_env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert (target / "airlock" / "runner.py").is_file()
    assert not (target / "backend.py").exists() and not (target / "_build").exists()
    _runs(sys.executable, target, dict(os.environ, PYTHONPATH=str(target)))


def _bare_venv(tmp_path):
    """A venv of this interpreter with neither setuptools nor wheel (no site packages, no pip
    of its own), and the command that runs Debian's pip from its wheel in it."""
    wheels = sorted(glob.glob("/usr/share/python-wheels/pip-*.whl"))
    if not wheels:
        pytest.skip("no pip wheel in /usr/share/python-wheels (Debian's python3-pip-whl)")
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = str(venv / "bin" / "python")
    for absent in ("setuptools", "wheel"):
        probe = subprocess.run([py, "-c", "import " + absent], capture_output=True, cwd="/")
        assert probe.returncode != 0, absent + " is importable in the bare venv"
    return py, [py, wheels[-1] + "/pip"]


def test_pip_install_offline_without_setuptools_or_wheel(tmp_path):
    """With neither setuptools nor wheel installed: `pip install --no-index
    --no-build-isolation`, then `pip install -e` (imported from the source directory)."""
    py, pip = _bare_venv(tmp_path)
    src = _copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for flags, installed in ((["--no-build-isolation"], tmp_path / "bare"), (["-e"], src)):
        out = subprocess.run(pip + ["install"] + flags + [str(src)], capture_output=True,
                             text=True, timeout=300, env=_pip_env())
        assert out.returncode == 0, out.stdout + out.stderr
        _runs(py, installed, env)


def test_pip_install_offline_with_other_pythons(tmp_path):
    """Any Python 3.8+ installs it: those AIRLOCK_TEST_PYTHONS names (paths, ':'-separated;
    Debian 12 has one Python, so CI tests its 3.11 above and this keeps to machines that have
    more, e.g. a python3.8 with setuptools 56 and no wheel)."""
    pythons = [p for p in os.environ.get("AIRLOCK_TEST_PYTHONS", "").split(":") if p]
    if not pythons:
        pytest.skip("AIRLOCK_TEST_PYTHONS names no other Python")
    src = _copy(tmp_path)
    for n, py in enumerate(pythons):
        target = tmp_path / ("site%d" % n)
        out = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--target",
                              str(target), str(src)],
                             capture_output=True, text=True, timeout=300, env=_pip_env())
        assert out.returncode == 0, py + ":\n" + out.stdout + out.stderr
        _runs(py, target, dict(os.environ, PYTHONPATH=str(target)))


def test_wheel_is_well_formed(tmp_path):
    """The backend's wheel: the package's modules and a .dist-info whose RECORD hashes every
    file, metadata from pyproject.toml; built twice, the same bytes."""
    sys.path.insert(0, os.path.join(PKG, "_build"))
    try:
        import backend
    finally:
        sys.path.pop(0)
    src = _copy(tmp_path)
    cwd = os.getcwd()
    os.chdir(str(src))
    try:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        names = [backend.build_wheel(str(tmp_path / d)) for d in ("a", "b")]
        sdist = backend.build_sdist(str(tmp_path))
    finally:
        os.chdir(cwd)
    assert names == ["airlock-0.1.0-py3-none-any.whl"] * 2 and sdist == "airlock-0.1.0.tar.gz"
    wheel = tmp_path / "a" / names[0]
    assert wheel.read_bytes() == (tmp_path / "b" / names[0]).read_bytes()
    with zipfile.ZipFile(str(wheel)) as z:
        files = {n: z.read(n) for n in z.namelist()}
    info = "airlock-0.1.0.dist-info/"
    modules = sorted(os.path.relpath(p, PKG) for p in glob.glob(os.path.join(PKG, "airlock",
                                                                             "*.py")))
    assert sorted(n for n in files if not n.startswith(info)) == modules
    record = files.pop(info + "RECORD").decode().splitlines()
    assert info + "RECORD,," in record
    for line in record:
        name, digest, size = line.rsplit(",", 2)
        if name == info + "RECORD":
            continue
        data = files.pop(name)
        want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == "sha256=" + want and int(size) == len(data), name
    assert files == {}, "files the RECORD does not list: %s" % sorted(files)
    with zipfile.ZipFile(str(wheel)) as z:
        meta = z.read(info + "METADATA").decode()
        assert "Root-Is-Purelib: true" in z.read(info + "WHEEL").decode()
    try:
        import tomllib
    except ImportError:
        pytest.skip("tomllib (3.11+) compares the metadata with pyproject.toml")
    with open(os.path.join(PKG, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    head = meta.split("\n\n", 1)[0].splitlines()
    assert head[:4] == ["Metadata-Version: 2.1", "Name: " + project["name"],
                        "Version: " + project["version"], "Summary: " + project["description"]]
    assert "Requires-Python: " + project["requires-python"] in head
    assert "License: " + project["license"]["text"] in head


def test_sources_keep_to_python_3_8():
    """Python 3.8 is the oldest the package supports: its modules and the build backend parse
    with 3.8's grammar (no match, no parenthesized context managers, ...)."""
    paths = glob.glob(os.path.join(PKG, "airlock", "*.py")) + [
        os.path.join(PKG, "_build", "backend.py")]
    for path in paths:
        with open(path) as f:
            ast.parse(f.read(), path, feature_version=(3, 8))


def test_embedded_example():
    out = subprocess.run([sys.executable, os.path.join(PKG, "examples", "embedded.py")],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=PKG))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "interrupted {'question': 'refund 30 on o-7?'}",
        "completed {'refunded': 'o-7', 'amount': 30, 'approved_by': 'alice'}"]


def test_durable_example():
    """A run journaled to SQLite dies in its second host call and runs again: the first call
    comes from the journal, only the call in doubt reaches the host again."""
    out = subprocess.run([sys.executable, os.path.join(PKG, "examples", "durable.py")],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=PKG))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["charging o-1", "charging o-2", "charging o-2",
                                       "completed ['ch-o-1', 'ch-o-2']"]
    with open(os.path.join(PKG, "README.md")) as f:
        readme = f.read()
    with open(os.path.join(PKG, "examples", "durable.py")) as f:
        assert "```python\n" + f.read() + "```" in readme, "python/README.md lacks durable.py"


def test_readme_shows_the_examples():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    for name in ("embedded.py", "refund_approval.py"):
        with open(os.path.join(PKG, "examples", name)) as f:
            text = f.read()
        assert len(text.splitlines()) < 20, name
        assert "```python\n" + text + "```" in readme, "README does not show examples/" + name


def test_installed_library_and_worker(tmp_path):
    """`cmake --install` into a prefix: the package finds libairlock.so.0 through
    LD_LIBRARY_PATH alone, and libairlock its installed worker without AIRLOCK_WORKER."""
    cmake, build = os.environ.get("AIRLOCK_CMAKE"), os.environ.get("AIRLOCK_BUILD_DIR")
    if not cmake or not build:
        import pytest
        pytest.skip("AIRLOCK_CMAKE and AIRLOCK_BUILD_DIR are set by CTest")
    prefix = tmp_path / "prefix"
    out = subprocess.run([cmake, "--install", build, "--prefix", str(prefix)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    libs = list(prefix.rglob("libairlock.so.0"))
    assert len(libs) == 1, libs
    env = {k: v for k, v in os.environ.items() if k not in ("AIRLOCK_LIBRARY", "AIRLOCK_WORKER")}
    env.update(LD_LIBRARY_PATH=str(libs[0].parent), PYTHONPATH=PKG)
    code = ("import airlock, ctypes\n"
            "r = airlock.Runner().run('return await py.f(20)', host={'py.f': lambda x: x + 1})\n"
            "print(r.status, r.value)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "completed 21", run.stdout + run.stderr
