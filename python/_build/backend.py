"""The build backend: setuptools' own (setuptools.build_meta), re-exported.

Why a wrapper: `pip install ./python` builds in an isolated environment that would download
setuptools from an index. Offline (Debian 12 with python3-setuptools, no PyPI) that fails, so
when setuptools is not importable in that environment this takes the interpreter's installed
one from its site directories. Nothing else changes: the build is setuptools' build.
"""
import sys

try:
    from setuptools import build_meta as _meta
except ImportError:
    import site

    for _d in site.getsitepackages():
        if _d not in sys.path:
            sys.path.append(_d)
    from setuptools import build_meta as _meta

build_wheel = _meta.build_wheel
build_sdist = _meta.build_sdist


def _installed(reqs):
    """setuptools' extra requirements (older ones ask for `wheel`) minus those importable."""
    import importlib.util

    return [r for r in reqs if importlib.util.find_spec(r.split("<")[0].split(">")[0]
                                                       .split("=")[0].strip()) is None]


def get_requires_for_build_wheel(config_settings=None):
    return _installed(_meta.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_sdist(config_settings=None):
    return _installed(_meta.get_requires_for_build_sdist(config_settings))


prepare_metadata_for_build_wheel = _meta.prepare_metadata_for_build_wheel
if hasattr(_meta, "build_editable"):
    build_editable = _meta.build_editable

    def get_requires_for_build_editable(config_settings=None):
        return _installed(_meta.get_requires_for_build_editable(config_settings))

    prepare_metadata_for_build_editable = _meta.prepare_metadata_for_build_editable
