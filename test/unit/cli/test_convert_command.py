"""`kubectl mpijob convert -f FILE`: the MPIJob on stdout, warnings and notes on stderr, several documents,
stdin, and anything that is not a known MPIJob refused with exit code 1 and one line saying what it is."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from mpioperator.cli.main import main
from test.unit.cli.test_convert_t9k import FIXTURES


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_convert_prints_yaml_on_stdout_and_warnings_on_stderr() -> None:
    code, out, err = run(["convert", "-f", str(FIXTURES / "ffffaraway-training-cpu.yaml")])

    assert code == 0
    [job] = yaml.safe_load_all(out)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    lines = err.splitlines()
    assert lines and all(
        line.startswith(("warning: simple-train-cpu: ", "note: simple-train-cpu: ")) for line in lines
    )
    assert "kubectl exec" in err and "kubectl exec" not in out


def test_mca_parameters_print_as_a_block_and_no_yaml_aliases() -> None:
    code, out, _ = run(["convert", "-f", str(FIXTURES / "t9k-pi.yaml")])

    assert code == 0
    assert "mpioperator.io/mca-params: |\n      btl=self,tcp\n" in out
    assert "&id" not in out and "*id" not in out


def test_convert_reads_stdin_and_converts_every_document(monkeypatch: pytest.MonkeyPatch) -> None:
    both = (
        (FIXTURES / "t9k-random-walk.yaml").read_text()
        + "---\n"
        + (FIXTURES / "ffffaraway-pi.yaml").read_text()
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(both))

    code, out, _ = run(["convert", "-f", "-", "--ssh-auth-mount-path", "/home/mpiuser/.ssh"])

    assert code == 0
    jobs = list(yaml.safe_load_all(out))
    assert [j["metadata"]["name"] for j in jobs] == ["mpi-example", "pi-from-ffffaraway"]
    assert {j["spec"]["sshAuthMountPath"] for j in jobs} == {"/home/mpiuser/.ssh"}


def test_an_mpijob_of_kubeflow_v2beta1_comes_out_unchanged(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "v2beta1" / "pi" / "pi.yaml"

    code, out, err = run(["convert", "-f", str(example)])

    assert code == 0
    assert yaml.safe_load(out) == yaml.safe_load(example.read_text())
    assert "unchanged" in err


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: t}\n",
            "error: document 1: cannot convert kind TFJob of kubeflow.org/v1: known are MPIJob of "
            "batch.tensorstack.dev/v1beta1, MPIJob of batch.test.bdap.com/v1\n",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gpu-pg}\n",
            "error: document 1: cannot convert kind ConfigMap of v1",
        ),
        (
            "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: t}\n",
            "error: document 1: cannot convert kind MPIJob of kubeflow.org/v1",
        ),
        ("- just\n- a list\n", "error: document 1: expected a Kubernetes object, found list"),
        ("a: [\n", "error: not valid YAML"),
        ("", "error: no manifest to convert"),
        (
            "apiVersion: batch.test.bdap.com/v1\nkind: MPIJob\nspec: {numWorkers: 1}\n",
            "error: document 1: metadata.name is required",
        ),
    ],
)
def test_what_cannot_be_converted_is_refused_in_one_line(tmp_path: Path, manifest: str, message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(manifest)

    code, out, err = run(["convert", "-f", str(path)])

    assert (code, out) == (1, "")
    assert err.startswith(message) and err.count("\n") == 1, err


def test_a_later_document_that_cannot_be_converted_is_named_by_its_position(tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(
        (FIXTURES / "t9k-pi.yaml").read_text() + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
    )

    code, out, err = run(["convert", "-f", str(path)])

    assert (code, out) == (1, "")
    assert err.startswith("error: document 2: cannot convert kind Secret of v1"), err


def test_a_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    code, _, err = run(["convert", "-f", str(tmp_path / "nope.yaml")])

    assert code == 1 and err.startswith("error: cannot read "), err
