"""Pure parts of the image recipes: the Dockerfile reader, .dockerignore, MPI image settings, registry config."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mpioperator.testing import registry
from mpioperator.testing.images import dockerfile as df
from mpioperator.testing.images import mpi, operator_image, verify, wheels
from mpioperator.testing.images.dockerfile_build import context_files
from mpioperator.testing.images.versions import REPO_ROOT, parse_versions, pinned

PROJECT_DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()


def test_project_dockerfile_builds_on_the_pinned_python_slim_unless_told_otherwise() -> None:
    instructions = df.parse(PROJECT_DOCKERFILE)
    default = df.stages(instructions, {})
    slim = f"python:{pinned('PYTHON_VERSION')}-slim"
    assert [(s.base, s.name) for s in default] == [(slim, "build"), (slim, None)]
    local = df.stages(instructions, {"PYTHON_BASE": operator_image.PYTHON_BASE})
    assert {s.base for s in local} == {"local/python:3.11-bookworm"}


def test_project_dockerfile_final_stage_copies_the_venv_and_runs_as_nonroot() -> None:
    final = df.stages(df.parse(PROJECT_DOCKERFILE), {})[-1]
    by_keyword = {i.keyword: i for i in final.instructions}
    assert by_keyword["COPY"].flags == {"from": "build"}
    assert by_keyword["USER"].arguments == "65532:65532"
    assert df.command_of(by_keyword["ENTRYPOINT"].arguments) == ["mpi-operator"]


def test_continuation_lines_join_and_comments_inside_them_are_dropped() -> None:
    instructions = df.parse("FROM a\n# note\nRUN echo 1 \\\n  # inner\n  && echo 2\n")
    assert [(i.keyword, i.arguments, i.line) for i in instructions] == [
        ("FROM", "a", 1),
        ("RUN", "echo 1 && echo 2", 3),
    ]


def test_unsupported_instruction_is_an_error_not_skipped() -> None:
    with pytest.raises(df.DockerfileError, match="HEALTHCHECK is not supported"):
        df.parse("FROM a\nHEALTHCHECK CMD true\n")


def test_only_arg_may_precede_the_first_from() -> None:
    with pytest.raises(df.DockerfileError, match="only ARG"):
        df.stages(df.parse("ENV A=1\nFROM a\n"), {})


def test_variables_expand_with_defaults_and_alternatives() -> None:
    variables = {"PATH": "/bin", "EMPTY": ""}
    assert df.expand("/opt/venv/bin:$PATH", variables) == "/opt/venv/bin:/bin"
    assert df.expand("${EMPTY:-fallback} ${PATH:+set} ${MISSING}x", variables) == "fallback set x"


def test_env_accepts_both_forms_and_quoted_values() -> None:
    assert df.key_values('A=1 B="two words"') == [("A", "1"), ("B", "two words")]
    assert df.key_values("NAME value with spaces") == [("NAME", "value with spaces")]


def test_shell_form_commands_run_under_sh_and_ports_default_to_tcp() -> None:
    assert df.command_of("mpi-operator --help") == ["/bin/sh", "-c", "mpi-operator --help"]
    assert df.command_of('["a", "b"]') == ["a", "b"]
    assert [df.exposed_port(p) for p in ("8080", "53/udp")] == ["8080/tcp", "53/udp"]


def test_dockerignore_excludes_directories_with_their_contents_and_allows_exceptions() -> None:
    rules = df.IgnoreRules.parse("# c\n.venv\n**/__pycache__\ndocs/*.md\n!docs/keep.md\n")
    assert rules.ignored(".venv/bin/python")
    assert rules.ignored("mpioperator/kube/__pycache__/x.pyc")
    assert rules.ignored("__pycache__/y.pyc")
    assert rules.ignored("docs/a.md")
    assert not rules.ignored("docs/keep.md")
    assert not rules.ignored("mpioperator/kube/client.py")


def test_operator_image_inputs_are_the_copied_package_files_without_caches_or_the_test_harness() -> None:
    ignore = df.IgnoreRules.parse((REPO_ROOT / ".dockerignore").read_text())
    files = context_files(df.parse(PROJECT_DOCKERFILE), REPO_ROOT, ignore)
    assert {"setup.cfg", "pyproject.toml", "README.md", "mpioperator/__init__.py"} <= set(files)
    assert not any("__pycache__" in f or f.startswith("mpioperator/testing/") for f in files)
    assert not any(f.startswith(("test/", "hack/")) for f in files)


def test_openmpi_hostfile_uses_slots_and_hydra_hostfiles_use_a_colon() -> None:
    hosts = ("w-0.pi.default.svc", "w-1.pi.default.svc")
    assert verify.hostfile("openmpi", hosts, 2) == "w-0.pi.default.svc slots=2\nw-1.pi.default.svc slots=2\n"
    assert verify.hostfile("intel", hosts) == "w-0.pi.default.svc:1\nw-1.pi.default.svc:1\n"
    assert verify.hostfile("mpich", hosts) == verify.hostfile("intel", hosts)


def test_user_sshd_config_uses_the_mounted_key_as_host_key_on_port_2222() -> None:
    config = mpi.user_sshd_config({})
    assert config.splitlines() == [
        "PidFile /home/mpiuser/sshd.pid",
        "HostKey /home/mpiuser/.ssh/id_rsa",
        "StrictModes no",
        "Port 2222",
    ]


def test_intel_sshd_config_hands_the_mpi_environment_to_ranks_started_over_ssh() -> None:
    config = mpi.user_sshd_config(mpi.FLAVOURS["intel"].env)
    setenv = [line for line in config.splitlines() if line.startswith("SetEnv ")]
    assert len(setenv) == 1
    assert "I_MPI_ROOT=/opt/intel/mpi" in setenv[0]
    assert "LD_LIBRARY_PATH=/opt/intel/mpi/lib" in setenv[0]
    assert "PATH=/opt/intel/mpi/bin:" in setenv[0]


def test_mpich_comes_from_its_pinned_wheel_with_its_bin_directory_on_the_path_of_ssh_started_ranks() -> None:
    flavour = mpi.FLAVOURS["mpich"]
    assert flavour.wheels is not None and flavour.wheels.projects == ("mpich",)
    assert "mpich" not in flavour.packages  # Debian's MPICH 4.0 hangs in MPI_Finalize now and then
    assert "/opt/mpich/bin/mpicc" in flavour.compile
    setenv = [line for line in mpi.user_sshd_config(flavour.env).splitlines() if line.startswith("SetEnv ")]
    assert setenv == [
        "SetEnv PATH=/opt/mpich/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    ]


def test_ssh_client_trusts_changing_pod_host_keys_and_dials_2222() -> None:
    lines = mpi.ssh_client_config().splitlines()
    assert {"StrictHostKeyChecking no", "UserKnownHostsFile /dev/null", "Port 2222"} <= set(lines)


def test_wheel_data_installs_under_the_prefix_and_copies_become_symlinks(tmp_path: Path) -> None:
    wheel = tmp_path / "impi_rt-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("libmpi.so", "libmpi.so.12", "libmpi.so.12.0.0"):
            archive.writestr(f"impi_rt-1.data/data/lib/{name}", b"ELF-same")
        archive.writestr("impi_rt-1.data/data/lib/libother.so", b"ELF-other")
        info = zipfile.ZipInfo("impi_rt-1.data/data/bin/mpiexec.hydra")
        info.external_attr = 0o100755 << 16
        archive.writestr(info, b"#!")
        archive.writestr("impi_rt-1.dist-info/METADATA", b"not installed")
    prefix = tmp_path / "opt/intel/mpi"
    wheels.install_wheel_data(wheel, prefix)
    assert wheels.link_duplicates(prefix / "lib") == 2
    lib = prefix / "lib"
    assert not (lib / "libmpi.so.12.0.0").is_symlink()
    assert str((lib / "libmpi.so").readlink()) == "libmpi.so.12.0.0"
    assert (lib / "libmpi.so.12").read_bytes() == b"ELF-same"
    assert not (lib / "libother.so").is_symlink()
    assert (prefix / "bin/mpiexec.hydra").stat().st_mode & 0o111
    assert not (tmp_path / "opt/intel/mpi/impi_rt-1.dist-info").exists()


def test_registry_listens_on_loopback_only_and_stores_in_the_given_directory() -> None:
    config = registry.registry_config(Path("/cache/registry"), 5000)
    assert config["http"] == {"addr": "127.0.0.1:5000"}
    storage = config["storage"]
    assert isinstance(storage, dict)
    assert storage["filesystem"] == {"rootdirectory": "/cache/registry"}


def test_versions_file_pins_the_registry_intel_mpi_and_an_mpich_without_the_finalize_hang() -> None:
    versions = parse_versions((REPO_ROOT / "hack/versions.env").read_text())
    assert versions["REGISTRY_VERSION"].startswith("v3.")
    assert versions["IMPI_VERSION"] == "2021.19.0"
    major, minor = (int(part) for part in versions["MPICH_VERSION"].split(".")[:2])
    assert (major, minor) >= (4, 2)
    assert parse_versions("# c\nA='x'\n\nB = y\n") == {"A": "x", "B": "y"}
