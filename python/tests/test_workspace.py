"""Embedded workspaces: a manifest's files through `workspace` and node:fs/promises, outputs,
tar and a snapshot, errors with Node's codes, and a host directory whose output prefix is
written back only when the run completed."""
import io
import os
import tarfile

import pytest

import airlock

MANIFEST = {"version": 1,
            "entries": {"in/a.csv": {"type": "file", "content": "x,y\n1,2\n"}},
            "outputs": ["out/"]}


def test_manifest_workspace_outputs_and_tar(runner):
    with airlock.Workspace(MANIFEST) as ws:
        r = runner.run("const t = await workspace.readFile('in/a.csv');\n"
                       "const fs = await import('node:fs/promises');\n"
                       "await fs.writeFile('out/report.md', '# ' + t.split('\\n').length);\n"
                       "await workspace.writeJson('out/s.json', {ok: true});\n"
                       "return await workspace.readdir('out');", workspace=ws)
        assert r.ok, r.error
        assert r.value == ["report.md", "s.json"]
        out = ws.outputs()
        assert [(f["path"], f["data"], f["mount"]) for f in out] == [
            ("out/report.md", b"# 3", None), ("out/s.json", b'{"ok":true}', None)]
        assert len(out[0]["sha256"]) == 64
        with tarfile.open(fileobj=io.BytesIO(ws.tar())) as t:
            names = t.getnames()
            assert "in/a.csv" in names and "out/report.md" in names
            assert t.extractfile("out/report.md").read() == b"# 3"


def test_snapshot_replaces_inline_entries(runner):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        data = b"from the snapshot"
        info = tarfile.TarInfo("in/b.txt")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    with airlock.Workspace(MANIFEST) as ws:
        ws.load_tar(buf.getvalue())
        r = runner.run("return [await workspace.readFile('in/b.txt'), "
                       "await workspace.exists('in/a.csv')]", workspace=ws)
        assert r.value == ["from the snapshot", False]
    bad = io.BytesIO()
    with tarfile.open(fileobj=bad, mode="w") as t:
        info = tarfile.TarInfo("link")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        t.addfile(info)
    with airlock.Workspace(MANIFEST) as ws:
        with pytest.raises(airlock.ConfigError, match="symbolic link"):
            ws.load_tar(bad.getvalue())


def test_errors_have_node_codes(runner):
    with airlock.Workspace(MANIFEST) as ws:
        r = runner.run("const codes = [];\n"
                       "for (const f of [() => workspace.readFile('missing'),\n"
                       "                 () => workspace.writeFile('in/x', 'x'),\n"
                       "                 () => workspace.readFile('../../etc/passwd')]) {\n"
                       "  try { await f(); } catch (e) { codes.push(e.code); }\n"
                       "}\n"
                       "return codes;", workspace=ws)
        assert r.value == ["ENOENT", "EROFS", "EACCES"]


def test_bad_manifest_names_the_member():
    with pytest.raises(airlock.ConfigError, match="limits.files"):
        airlock.Workspace({"limits": {"files": 0}})


def test_directory_commits_outputs_after_a_completed_run(runner, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("input")
    os.symlink("/etc/passwd", tmp_path / "data" / "escape")
    ws = airlock.Workspace.directory(str(tmp_path), outputs=["out/"])
    src = ("const codes = [];\n"
           "try { await workspace.readFile('data/escape'); } catch (e) { codes.push(e.code); }\n"
           "try { await workspace.writeFile('data/x', 'x'); } catch (e) { codes.push(e.code); }\n"
           "await workspace.writeFile('out/r.txt', (await workspace.readFile('data/in.txt')) + '!');\n"
           "if (FAIL) throw new Error('failed on purpose');\n"
           "return codes;")
    r = runner.run(src.replace("FAIL", "true"), workspace=ws)
    assert r.status == "failed"
    assert not (tmp_path / "out").exists()  # a failed run writes nothing back
    ws.close()
    ws = airlock.Workspace.directory(str(tmp_path), outputs=["out/"])
    r = runner.run(src.replace("FAIL", "false"), workspace=ws)
    assert r.value == ["EACCES", "EROFS"]
    assert (tmp_path / "out" / "r.txt").read_text() == "input!"
    assert [f["key"] for f in ws.outputs()] == ["out/r.txt"]
    ws.close()
