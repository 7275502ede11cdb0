"""Packaging: `pip install ./python` works offline with Debian's pip and setuptools (no build
isolation, no index), the installed package runs; and the README's Python section shows
exactly the example files the tests run."""
import os
import subprocess
import sys

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
    interpreter that sees its python3-setuptools (Debian's own python3 refuses pip installs,
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
