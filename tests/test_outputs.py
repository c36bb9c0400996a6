"""bayes_wsc.outputs: outputs checked before the work, written atomically with the usual permissions."""

import argparse
import os
import stat
import time
from pathlib import Path

import pandas as pd
import pytest

from bayes_wsc import outputs
from bayes_wsc.errors import InputError
from bayes_wsc.outputs import Paths, input_file, input_table, output_file, output_folder


def paths_of(**values) -> Paths:
    return Paths.of(argparse.Namespace(command="x", **values))


@pytest.fixture
def usual_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_get_the_permissions_of_any_new_file(tmp_path, usual_umask):
    frame = pd.DataFrame({"a": [1]})
    for path in (outputs.write_csv(frame, tmp_path / "t.csv"), outputs.write_text(tmp_path / "r.html", "<p>"),
                 outputs.write_json({"a": 1}, tmp_path / "j.json"), outputs.write_bytes(tmp_path / "b.bin", b"1")):
        assert mode(path) == 0o644, path
    os.umask(0o077)
    assert mode(outputs.write_text(tmp_path / "private.txt", "x")) == 0o600


def test_a_fit_and_a_report_are_0644(tmp_path, usual_umask):
    from bayes_wsc import inference
    from bayes_wsc.report.html import Section, write_html

    groups = inference.from_draws({"x": [[1.0]]}, attrs={"model": "wsc"})
    assert mode(inference.save(groups, tmp_path / "fit.nc")) == 0o644
    assert mode(write_html(tmp_path / "report.html", "t", "intro", [Section("s")])) == 0o644


def test_a_figure_in_the_format_of_its_suffix(tmp_path):
    from bayes_wsc.report.html import new_figure

    fig, _ = new_figure()
    path = outputs.write_figure(fig, tmp_path / "plot.png", "figure")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_an_existing_output_is_replaced_whole_and_a_failed_write_keeps_it(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")

    def fails(tmp):
        with open(tmp, "w") as handle:
            handle.write("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match=r"cannot write the predictions file '.*out.csv': No space left on device"):
        outputs.write_file(target, fails, "predictions file")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    outputs.write_text(target, "new")
    assert target.read_text() == "new"


def test_a_failure_names_the_users_path_not_a_temporary_file(tmp_path, monkeypatch):
    """As in a read-only folder (this test may run as root, for whom no folder is read-only)."""
    def denied(path):
        raise PermissionError(13, "Permission denied", f"{path}.tmp")

    monkeypatch.setattr(outputs, "_new_temporary", denied)
    with pytest.raises(InputError) as err:
        outputs.write_text(tmp_path / "report.html", "<p>", "report")
    assert str(err.value) == f"cannot write the report {str(tmp_path / 'report.html')!r}: Permission denied"
    (tmp_path / "r").mkdir()
    report = output_folder("report folder", ["report.html"])(str(tmp_path / "r"))
    with pytest.raises(InputError, match=r"cannot write the report folder '.*r': Permission denied \(in folder"):
        Paths([], [report]).check()  # before the work


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_the_work(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(InputError, match="cannot write the fit file .*locked/fit.nc"):
            Paths([], [output_file("fit file")(str(folder / "fit.nc"))]).check()
    finally:
        folder.chmod(0o755)


def test_aliases_of_an_input_are_refused(tmp_path):
    clicks = tmp_path / "clicks.csv"
    clicks.write_text("group,b\na,x\n")
    (tmp_path / "hard.csv").hardlink_to(clicks)
    (tmp_path / "soft.csv").symlink_to(clicks)
    (tmp_path / "sub").mkdir()
    for out in ("clicks.csv", "hard.csv", "soft.csv", "sub/../clicks.csv"):
        paths = paths_of(clicks=input_table("clicks file")(str(clicks)),
                         out=output_file("fit file")(str(tmp_path / out)))
        with pytest.raises(InputError, match="clicks file .*which it would replace"):
            paths.check()
    paths_of(clicks=input_table("clicks file")(str(clicks)),
             out=output_file("fit file")(str(tmp_path / "f.nc"))).check()


def test_an_input_under_a_name_an_output_folder_writes_is_refused(tmp_path):
    (tmp_path / "path").mkdir()
    items = tmp_path / "path" / "lam_4.nc"
    items.write_text("x")
    paths = paths_of(items=input_table("items file")(str(items)),
                     out=output_folder("path folder", ["lam_*.nc", "path.csv"])(str(tmp_path / "path")))
    with pytest.raises(InputError, match="path folder .*is the items file"):
        paths.check()


def test_inputs_in_a_parquet_folder_or_glob_are_each_protected(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "part.0.parquet").write_bytes(b"PAR1")
    for source in (str(logs), str(logs / "*.parquet")):
        paths = paths_of(clicks=input_table("clicks file", source=True)(source),
                         out=output_file("fit file")(str(logs / "part.0.parquet")))
        with pytest.raises(InputError, match="which it would replace"):
            paths.check()


def test_undeclared_text_arguments_naming_files_are_protected(tmp_path):
    fit = tmp_path / "fit.nc"
    fit.write_text("x")
    paths = paths_of(fit=str(fit), model="wsc", out=output_file("table")(str(fit)))
    with pytest.raises(InputError, match="the table .* is the fit file"):
        paths.check()
    assert paths_of(fit=str(fit)).inputs and not paths_of(model=str(fit)).inputs  # `model` names a subcommand


def test_two_outputs_on_one_path(tmp_path):
    fit = output_file("fit file")(str(tmp_path / "d" / "report.html"))
    report = output_folder("report folder", ["report.html"])(str(tmp_path / "d"))
    with pytest.raises(InputError, match="would be replaced by the report folder"):
        paths_of(out=fit, report=report).check()
    with pytest.raises(InputError, match="are the same file"):
        paths_of(out=output_file("fit file")(str(tmp_path / "x")),
                 other=output_file("table")(str(tmp_path / "x"))).check()


def test_unwritable_outputs(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.html").mkdir()
    cases = [
        (output_file("fit file")(str(tmp_path / "folder")), "it is a folder"),
        (output_file("fit file")(str(tmp_path / "file" / "fit.nc")), "'.*file' is a file, not a folder"),
        (output_folder("report folder", ["report.html"])(str(tmp_path / "file")), "it is a file, not a folder"),
        (output_folder("report folder", ["report.html"])(str(tmp_path / "rep")), "report.html' is a folder"),
    ]
    for out, words in cases:
        with pytest.raises(InputError, match=words):
            outputs.check_writable(out)
    outputs.check_writable(output_file("fit file")(str(tmp_path / "new" / "deeper" / "fit.nc")))
    assert not (tmp_path / "new").exists()  # checked, not created


def test_the_guard_stops_a_writer_replacing_an_input(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    (tmp_path / "link.csv").symlink_to(data)
    with paths_of(items=input_table("items file")(str(data))).guard():
        with pytest.raises(InputError, match="is the input file"):
            outputs.write_text(tmp_path / "link.csv", "b\n2\n", "table")
    assert data.read_text() == "a\n1\n"
    outputs.write_text(tmp_path / "link.csv", "b\n2\n", "table")  # outside a command: an ordinary file


def test_declared_paths_become_plain_strings():
    args = argparse.Namespace(command="predict", fit=input_file("fit file")("f.nc"), out=output_file("x")("p.csv"))
    paths = Paths.of(args)
    assert type(args.fit) is str and type(args.out) is str
    assert [p.what for p in paths.outputs] == ["x"]
    with pytest.raises(argparse.ArgumentTypeError):
        input_file("fit file")("  ")


def test_devices_pipes_and_links_to_stdout_are_refused_before_the_work(tmp_path):
    """A writer renames a new file onto the path: as root, onto /dev/null that replaces the device."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "to_stdout").symlink_to("/dev/stdout")
    (tmp_path / "to_pipe").symlink_to(fifo)
    (tmp_path / "rep").mkdir()
    os.mkfifo(tmp_path / "rep" / "report.html")
    cases = [
        (output_file("fit file")("/dev/null"), "'/dev/null': it is a character device, not a regular file"),
        (output_file("fit file")(str(fifo)), "it is a named pipe, not a regular file"),
        (output_file("fit file")(str(tmp_path / "to_pipe")), "it is a link to '.*pipe', a named pipe"),
        (output_file("fit file")(str(tmp_path / "to_stdout")), "it is a link to the file descriptor '/proc/self/fd/1'"),
        (output_file("fit file")("/dev/stdout"), "it is a link to the file descriptor"),
        (output_folder("report folder", ["report.html"])(str(tmp_path / "rep")), "report.html' is a named pipe"),
    ]
    for out, words in cases:
        with pytest.raises(InputError, match=words):
            Paths([], [out]).check()
        with pytest.raises(InputError, match="not a regular file"):  # and the writers, for undeclared paths
            outputs.write_text(out if out.kind == "file" else os.path.join(out, "report.html"), "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(tmp_path / "to_stdout")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_replaced_file_keeps_its_permissions(tmp_path, usual_umask):
    from bayes_wsc import inference

    seen = {}

    def write(tmp):
        seen["mode"] = mode(tmp)
        with open(tmp, "w") as handle:
            handle.write("new")

    private = tmp_path / "private.csv"
    private.write_text("old")
    private.chmod(0o600)
    outputs.write_file(private, write)
    assert seen["mode"] == 0o600 and mode(private) == 0o600 and private.read_text() == "new"  # private while written
    shared = tmp_path / "shared.csv"
    shared.write_text("old")
    shared.chmod(0o664)
    assert mode(outputs.write_csv(pd.DataFrame({"a": [1]}), shared)) == 0o664
    fit = tmp_path / "fit.nc"
    groups = inference.from_draws({"x": [[1.0]]}, attrs={"model": "wsc"})
    inference.save(groups, fit).chmod(0o600)
    assert mode(inference.save(groups, fit)) == 0o600
    assert mode(outputs.write_text(tmp_path / "new.txt", "x")) == 0o644


def test_a_killed_writers_temporary_files_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "fit.nc"
    target.write_text("old")
    hour_ago = time.time() - 3600
    stale = [tmp_path / ".fit.nc.0a1b2c3d.tmp", tmp_path / ".fit.nc.ffffffff.tmp"]
    kept = [tmp_path / ".fit.nc.12345678.tmp",  # newer than this process: another writer's, in progress
            tmp_path / ".fit.nc.zzzzzzzz.tmp", tmp_path / ".fit.nc.0a1b2c3d.tmp.bak", tmp_path / ".other.nc.0a1b2c3d.tmp",
            tmp_path / "fit.nc.0a1b2c3d.tmp", tmp_path / ".fit.nc.0a1b2c3.tmp"]
    for path in stale + kept:
        path.write_text("half")
        os.utime(path, (hour_ago, hour_ago))
    os.utime(kept[0])  # now
    (tmp_path / ".fit.nc.abcdef01.tmp").mkdir()  # not a file the writers make
    os.utime(tmp_path / ".fit.nc.abcdef01.tmp", (hour_ago, hour_ago))
    outputs.write_text(target, "new")
    assert target.read_text() == "new"
    assert not any(p.exists() for p in stale) and all(p.exists() for p in kept)
    assert (tmp_path / ".fit.nc.abcdef01.tmp").is_dir()


def test_a_full_disk_is_refused_before_the_work(tmp_path, monkeypatch):
    old = tmp_path / "fit.nc"
    old.write_bytes(b"x" * 3 * 2**20)
    free = {"bytes": 200 * 1024}
    monkeypatch.setattr(outputs, "free_bytes", lambda folder: free["bytes"])
    fit = output_file("fit file")(str(tmp_path / "new.nc"))
    report = output_folder("report folder", ["report.html"])(str(tmp_path / "report"))
    with pytest.raises(InputError, match=r"cannot write the fit file '.*new.nc': the disk holding '.*' has 200 KB free, "
                                         r"and this command's outputs need at least 2.0 MB"):
        Paths([], [fit, report]).check()
    free["bytes"] = 2**21
    Paths([], [fit, report]).check()
    with pytest.raises(InputError, match="need at least 4.0 MB"):  # as much as the file it replaces, and the report
        Paths([], [output_file("fit file")(str(old)), report]).check()
    free["bytes"] = None  # a file system that does not say
    Paths([], [output_file("fit file")(str(old)), report]).check()


ENOSPC_FROM_HDF5 = ("Disable slist on flush dest failure failed (file write failed: time = Wed Nov 25 23:26:34 2026\n"
                    ", filename = '/x/.fit.nc.44a8f40f.tmp', file descriptor = 3, errno = 28, error message = "
                    "'No space left on device', buf = 0x55b4789ba015, total write size = 3719)")


def test_a_full_disk_while_saving_a_fit_is_one_line_and_keeps_the_old_file(tmp_path, monkeypatch):
    import errno

    import xarray as xr

    from bayes_wsc import inference

    groups = inference.from_draws({"x": [[1.0, 2.0]]}, attrs={"model": "wsc"})
    fit = tmp_path / "fit.nc"
    fit.write_text("old")

    def hdf5_fails(*args, **kwargs):  # what h5py raises when the disk fills while it writes
        raise RuntimeError(ENOSPC_FROM_HDF5)

    with monkeypatch.context() as patch:
        patch.setattr(xr.Dataset, "to_netcdf", hdf5_fails)
        with pytest.raises(InputError) as err:
            inference.save(groups, fit)
    assert str(err.value) == f"cannot write the fit file {str(fit)!r}: No space left on device; the old file is unchanged"
    # little room left: the file is made in memory and written as plain bytes (HDF5 may crash on a full disk)
    monkeypatch.setattr(outputs, "free_bytes", lambda folder: 1000)

    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", disk_full)
        with pytest.raises(InputError, match=r"fit.nc': No space left on device; the old file is unchanged$"):
            inference.save(groups, fit)
        with pytest.raises(InputError, match=r"new/fit.nc': No space left on device$"):
            inference.save(groups, tmp_path / "new" / "fit.nc")
    assert fit.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]
    inference.save(groups, fit)
    assert inference.load(fit).posterior["x"].values.tolist() == [[1.0, 2.0]]


def test_a_report_that_does_not_fit_says_the_fit_was_saved(tmp_path, monkeypatch):
    """The disk filled between the fit file and the report (a full disk is refused before the work)."""
    import argparse

    from bayes_wsc.commands.common import fit_save_report

    class Fit:
        diagnostics_, checks_, method = [], pd.DataFrame(), "map"

        def fit(self, data):
            return self

        def save(self, path):
            return outputs.write_text(path, "fit", "fit file")

        def summary(self, **settings):
            return pd.DataFrame({"mean": [1.0]})

        def summary_notes(self):
            return []

        def log_likelihood_notes(self):
            return []

        def report(self, folder):
            return outputs.write_file(Path(folder) / "report.html", disk_full, "report")

    def disk_full(tmp):
        raise OSError(28, "No space left on device")

    args = argparse.Namespace(out=str(tmp_path / "fit.nc"), report=str(tmp_path / "report"))
    with pytest.raises(InputError) as err:
        fit_save_report(Fit(), None, args)
    assert str(err.value) == (f"cannot write the report {str(tmp_path / 'report' / 'report.html')!r}: No space left "
                              f"on device (the fit was saved to {args.out!r}; `bayes-wsc report {args.out} --out "
                              f"{args.report}` writes its report)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]  # no empty report folder either


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs")
def test_a_fit_onto_a_full_tmpfs(tmp_path):
    """A real full disk (slow tier: it needs mount)."""
    import subprocess

    import numpy as np

    from bayes_wsc import inference

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (disk / "fit.nc").write_text("old")
        noise = np.random.default_rng(0).normal(size=(1, 200_000))  # 1.6 MB that do not compress
        with pytest.raises(InputError, match="No space left on device; the old file is unchanged"):
            inference.save(inference.from_draws({"x": noise}, attrs={"model": "wsc"}), disk / "fit.nc")
        assert (disk / "fit.nc").read_text() == "old" and [p.name for p in disk.iterdir()] == ["fit.nc"]
    finally:
        subprocess.run(["umount", str(disk)])


def test_inputs_that_are_not_regular_files_are_refused_before_the_work(tmp_path, capsys):
    """A named pipe as --clicks hung the command (reading waits for a writer) and a link to /dev/zero
    ended in a MemoryError: an input is a regular file, or a folder where a folder is read."""
    from bayes_wsc.cli import main

    pipe = tmp_path / "clicks.csv"
    os.mkfifo(pipe)
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    (tmp_path / "groups.csv").write_text("group,he\ng0,0.1\n")
    for bad, words in ((pipe, "a named pipe"), (zero, "'/dev/zero', a character device")):
        with pytest.raises(InputError, match=f"cannot read the clicks {str(bad)!r}: it is .*{words}"):
            paths_of(clicks=input_table("clicks", source=True)(str(bad))).check()
        code = main(["fit", "wsc", "--clicks", str(bad), "--groups", str(tmp_path / "groups.csv"),
                     "--out", str(tmp_path / "fit.nc")])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err
    with pytest.raises(InputError, match="it is a directory, not a regular file"):
        paths_of(fit=input_file("fit file")(str(tmp_path))).check()
    paths_of(clicks=input_table("clicks", source=True)(str(tmp_path))).check()  # a folder of parts is read


@pytest.mark.parametrize("length", [241, 242, 255, 256])
def test_a_long_output_name_is_checked_with_the_temporary_name(tmp_path, length):
    """An --out name of 242-255 bytes failed after the fit: the temporary file written first is 14 bytes
    longer. It is refused before the work, naming the longest name that works; 241 is written."""
    name = "f" * (length - 3) + ".nc"
    out = paths_of(out=output_file("fit file")(str(tmp_path / name)))
    if length <= 241:
        out.check()
        outputs.write_text(tmp_path / name, "x")
        assert (tmp_path / name).read_text() == "x"
    else:
        with pytest.raises(InputError, match="longer than the 255 the file system holds") as error:
            out.check()
        assert "\n" not in str(error.value)
    folder = paths_of(out=output_folder("report folder", ("report.html",))(str(tmp_path / "sub" / ("d" * length))))
    if length > 255:  # a folder's own name too
        with pytest.raises(InputError, match="is 256 bytes, longer than the 255"):
            folder.check()
    else:
        folder.check()


def test_a_csv_of_repeated_floats_is_the_file_pandas_writes(tmp_path):
    """`write_csv` formats each distinct value of a float column that repeats once: the file is `to_csv`'s, byte
    for byte (shortest round-trip text, NaN as an empty field, -0.0, inf, tiny and huge values, a float32
    column, duplicate column names), and the frame is left as it was."""
    import numpy as np

    rng = np.random.default_rng(0)
    special = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-300, 1.5e300, 0.1, 1 / 3, 2.0])
    values = np.concatenate([special, rng.random(40)])
    frame = pd.DataFrame({"group": [f"g{i % 7}" for i in range(3000)],
                          "prob": values[rng.integers(0, values.size, 3000)],
                          "unique": rng.normal(size=3000),
                          "small": rng.random(3000).round(1).astype(np.float32),
                          "count": rng.integers(0, 5, 3000)})
    frame.insert(2, "prob_low", frame["prob"] / 2)
    frame = pd.concat([frame, frame[["prob"]]], axis=1)  # a second column named prob
    before = frame.copy()
    path = outputs.write_csv(frame, tmp_path / "p.csv")
    assert path.read_text() == frame.to_csv(index=False)
    pd.testing.assert_frame_equal(frame, before)
    assert not pd.api.types.is_float_dtype(outputs._repeats_as_text(frame).dtypes.iloc[1])  # formatted once
