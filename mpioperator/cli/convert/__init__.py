"""`kubectl mpijob convert`: another operator's MPIJob manifest as a `kubeflow.org/v2beta1` MPIJob with the
operator's annotations (docs/migrating.md). Pure: a manifest in, a job and the words about it out.

Known: T9k's MPIJob and FFFFFaraway's. A `kubeflow.org/v2beta1` MPIJob is already what the operator runs and
comes out as it went in; anything else is refused, naming what it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from mpioperator.api import constants as api
from mpioperator.api.defaults import set_defaults
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.validation import validate_mpijob
from mpioperator.cli import yamlread
from mpioperator.cli.convert import ffffaraway, t9k
from mpioperator.cli.convert.common import Conversion, ConversionError

__all__ = ["Conversion", "ConversionError", "convert", "convert_text", "to_yaml"]

CONVERTERS: dict[tuple[str, str], Callable[[Obj, str | None], Conversion]] = {
    (t9k.API_VERSION, "MPIJob"): t9k.convert,
    (ffffaraway.API_VERSION, "MPIJob"): ffffaraway.convert,
}
KNOWN = ", ".join(f"{kind} of {version}" for version, kind in CONVERTERS)


def convert(doc: Any, ssh_auth_mount_path: str | None = None) -> Conversion:
    """One manifest converted; ConversionError for a kind no converter knows or a manifest that is not one
    of its kind. The result is checked with the operator's own validation, so a job it would refuse is
    named in a warning now rather than in a condition later."""
    if not isinstance(doc, dict):
        raise ConversionError(f"expected a Kubernetes object, found {type(doc).__name__}")
    version, kind = str(doc.get("apiVersion") or ""), str(doc.get("kind") or "")
    if (version, kind) == (api.API_VERSION, api.KIND):
        done = Conversion(job=json_copy(doc), notes=["already a kubeflow.org/v2beta1 MPIJob: unchanged"])
        return done
    converter = CONVERTERS.get((version, kind))
    if converter is None:
        raise ConversionError(
            f"cannot convert kind {kind or '(none)'} of {version or '(none)'}: known are {KNOWN}"
        )
    done = converter(doc, ssh_auth_mount_path)
    for problem in validate_mpijob(set_defaults(done.job)):
        done.warnings.append(f"the operator would refuse the converted job: {problem}")
    return done


def convert_text(text: str, ssh_auth_mount_path: str | None = None) -> list[Conversion]:
    """Every document of a YAML stream converted; the first that cannot be stops it, named by position."""
    try:
        documents = yamlread.load_all(text)
    except yamlread.YamlTooCostly as exc:
        raise ConversionError(f"YAML refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConversionError(f"not valid YAML: {str(exc).splitlines()[0]}") from None
    if not documents:
        raise ConversionError("no manifest to convert")
    conversions = []
    for index, doc in enumerate(documents, start=1):
        try:
            conversions.append(convert(doc, ssh_auth_mount_path))
        except ConversionError as exc:
            raise ConversionError(f"document {index}: {exc}") from None
    return conversions


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the MCA parameters) as YAML block literals, as a person writes them; no
    anchors and aliases, which a person would not write either."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def to_yaml(jobs: list[Obj]) -> str:
    # No folding of long values: an mpirun line stays on one line.
    return yaml.dump_all(jobs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1 << 16)
