"""The TLS context for new connections is built again only when one of its files changed, and a first
build that fails fails the connection with its own error."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest

from mpioperator.kube.tlsreload import ReloadingTls


class CountingBuild:
    def __init__(self) -> None:
        self.built = 0

    def __call__(self) -> ssl.SSLContext:
        self.built += 1
        return ssl.create_default_context()


def test_connections_share_one_context_while_its_files_stay_the_same(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("first")
    build = CountingBuild()
    tls = ReloadingTls(build, [str(tmp_path / "ca.crt")])

    contexts = {id(tls()) for _ in range(5)}

    assert (len(contexts), build.built) == (1, 1)


def test_a_ca_file_swapped_by_rename_gives_new_connections_a_new_context(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("first")
    build = CountingBuild()
    tls = ReloadingTls(build, [str(tmp_path / "ca.crt")])
    before = tls()

    # Same size, possibly the same file time: only the inode tells the new file from the old.
    (tmp_path / "ca.crt.new").write_text("other")
    os.replace(tmp_path / "ca.crt.new", tmp_path / "ca.crt")

    assert tls() is not before
    assert build.built == 2


def test_a_first_build_that_fails_raises_its_error_instead_of_handing_out_a_context(
    tmp_path: Path,
) -> None:
    def build() -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(tmp_path / "missing.crt"))

    tls = ReloadingTls(build, [str(tmp_path / "missing.crt")])

    with pytest.raises(FileNotFoundError):
        tls()
