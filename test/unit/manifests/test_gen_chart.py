"""hack/gen_chart.py keeps the chart's copies (CRD, dashboard, alert rules) equal to their sources."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from test.unit.manifests.hack_scripts import load_hack_script

REPO = Path(__file__).resolve().parents[3]


gen_chart = load_hack_script("gen_chart")


def test_committed_chart_copies_are_the_generators_output() -> None:
    stale = [str(path) for path, wanted in gen_chart.outputs().items() if path.read_text() != wanted]
    assert stale == [], "run python hack/gen_chart.py"


def test_check_mode_reports_a_stale_copy_with_a_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = tmp_path / "dashboard.json"
    edited.write_text("{}\n")
    real = gen_chart.outputs

    def with_edited_copy() -> dict[Path, str]:
        return {edited if path.name == "dashboard.json" else path: text for path, text in real().items()}

    monkeypatch.setattr(gen_chart, "outputs", with_edited_copy)
    assert gen_chart.main(["--check"]) == 1
    said = capsys.readouterr()
    assert f"--- {edited}\n+++ generated\n" in said.out
    assert said.err == f"gen_chart: {edited} is stale; run python hack/gen_chart.py\n"
    assert edited.read_text() == "{}\n"


def test_crd_template_keeps_the_spec_verbatim_and_templates_only_metadata() -> None:
    source = (REPO / "manifests/base/kubeflow.org_mpijobs.yaml").read_text()
    template = gen_chart.crd_template(source)
    assert template.startswith("{{- /* Generated")
    spec_text = source[source.index("\nspec:\n") :]
    assert spec_text in template
    assert '{{- include "mpi-operator.labels" . | nindent 4 }}' in template
    assert template.rstrip().endswith("{{- end }}")


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("name: mpijobs.kubeflow.org", "name: other.kubeflow.org"),
        lambda text: text.replace("kind: MPIJob\n", "kind: MPIJob\n    # {{ not a template }}\n", 1),
    ],
    ids=["other-metadata", "template-braces"],
)
def test_crd_template_refuses_a_source_it_cannot_wrap_safely(edit: object) -> None:
    source = (REPO / "manifests/base/kubeflow.org_mpijobs.yaml").read_text()
    with pytest.raises(gen_chart.GenerationError):
        gen_chart.crd_template(edit(source))  # type: ignore[operator]


def test_alerts_file_is_the_prometheus_rules_spec() -> None:
    source = (REPO / "manifests/components/prometheus/prometheus-rule.yaml").read_text()
    assert yaml.safe_load(gen_chart.alerts_file(source)) == yaml.safe_load(source)["spec"]
    with pytest.raises(gen_chart.GenerationError):
        gen_chart.alerts_file("kind: ConfigMap\n")
