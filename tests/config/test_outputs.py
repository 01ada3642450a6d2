"""Start-up checks of output files and the cache folder: one clear error naming the option and the path."""

from __future__ import annotations

import os
import re

import pytest

from fairness_core.config.outputs import OutputPathError, check_cache_dir, check_output_file
from fairness_core.errors import AuditUsageError


def test_output_path_errors_are_usage_errors():
    assert issubclass(OutputPathError, AuditUsageError)


def test_a_new_file_in_an_existing_or_creatable_folder_passes_and_creates_nothing(tmp_path):
    check_output_file("--audit-json", tmp_path / "results.json")
    check_output_file("--html", tmp_path / "new" / "deeper" / "report.html")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_passes_unchanged(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old", encoding="utf-8")
    check_output_file("--audit-json", path)
    assert path.read_text(encoding="utf-8") == "old"


def test_an_output_path_that_is_a_folder_is_refused(tmp_path):
    with pytest.raises(OutputPathError, match=re.escape(
            f"--audit-json={tmp_path} is a folder; it must be a file path, e.g. {tmp_path / 'results.json'}.")):
        check_output_file("--audit-json", tmp_path)


def test_an_output_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    path = tmp_path / "notes.txt" / "out" / "report.html"
    with pytest.raises(OutputPathError, match=re.escape(
            f"--html={path} cannot be created: {tmp_path / 'notes.txt'} is a file, not a folder.")):
        check_output_file("--html", path)


def test_an_output_path_in_a_read_only_folder_is_refused(tmp_path, make_read_only):
    folder = tmp_path / "reports"
    folder.mkdir()
    make_read_only(folder)
    path = folder / "sub" / "results.json"
    with pytest.raises(OutputPathError, match=re.escape(
            f"--audit-json={path} cannot be created: the folder {folder} is not writable (") + r".+\)\.$"):
        check_output_file("--audit-json", path)


def test_a_read_only_existing_output_file_is_refused(tmp_path, make_read_only):
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "results.json").write_text("{}", encoding="utf-8")
    make_read_only(folder)
    with pytest.raises(OutputPathError, match=re.escape(f"--audit-json={folder / 'results.json'} cannot be written: ")):
        check_output_file("--audit-json", folder / "results.json")


def test_a_writable_or_creatable_cache_dir(tmp_path):
    assert check_cache_dir("--cache-dir", tmp_path) == "writable"
    assert check_cache_dir("--cache-dir", tmp_path / "a" / "b") == "writable"
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_cache_dir_is_usable_for_reading(tmp_path, make_read_only):
    (tmp_path / "ab").mkdir()
    make_read_only(tmp_path)
    assert check_cache_dir("--cache-dir", tmp_path) == "read-only"


def test_a_cache_dir_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "cache"
    path.write_text("", encoding="utf-8")
    with pytest.raises(OutputPathError, match=re.escape(
            f"--cache-dir={path} is a file; it must be a folder (or a path where one can be created).")):
        check_cache_dir("--cache-dir", path)
    with pytest.raises(OutputPathError, match=re.escape(
            f"--cache-dir={path / 'sub'} cannot be created: {path} is a file, not a folder.")):
        check_cache_dir("--cache-dir", path / "sub")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder whatever its mode; no unreadable folder here")
def test_a_cache_dir_that_can_be_neither_written_nor_read_is_refused(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o000)
    try:
        with pytest.raises(OutputPathError, match=re.escape(
                f"--cache-dir={folder} can be neither written nor read: Permission denied.")):
            check_cache_dir("--cache-dir", folder)
    finally:
        folder.chmod(0o700)
