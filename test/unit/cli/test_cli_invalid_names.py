"""A job name or namespace that no request can carry is one line on stderr, never a traceback and never a
request."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from mpioperator.cli.main import main


@pytest.mark.parametrize("argv", [["describe", "pi\r\nX-Injected: yes"], ["describe", "pi", "-n", "a b"]])
def test_a_name_no_request_can_carry_is_one_error_line(tmp_path: Path, argv: list[str]) -> None:
    config = tmp_path / "config"
    config.write_text(
        yaml.safe_dump(
            {
                # Nothing listens there: the request is refused before any connection is made.
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--kubeconfig", str(config)], out, err) == 1
    assert err.getvalue().startswith("error: request path ")
    assert err.getvalue().count("\n") == 1
