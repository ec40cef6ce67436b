"""cluster/'s KubeRay manifests against KubeRay's CRD schema, and what they promise.

The schema is vendored (tests/fixtures/kuberay/, its header says from where and what is
trimmed) and walked with jsonschema the way the API server takes a manifest under
kubectl's strict field validation: every field known, of its type and integer format,
the required fields present, the keys of a list-map unique (after defaults). The CEL
rules (x-kubernetes-validations) are the API server's alone and are not evaluated.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.support import REPO
from tests.test_jobs import assert_no_secrets

CLUSTER = REPO / "cluster"
SCHEMA_FILE = REPO / "tests" / "fixtures" / "kuberay" / "raycronjobs.ray.io-v1.openapi.yaml"
MANIFESTS = sorted(CLUSTER.glob("kuberay-*.yaml"))
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# KubeRay's own checks on a RayJob's name (ValidateRayJobMetadata): a DNS-1035 label
# short enough for the cluster name made from it (MaxRayJobNameLength).
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_RAYJOB_NAME = 47
GENERATED_SUFFIX = 5  # what generateName adds


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def schema_for(kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of `kind`: RayCronJob's own, or the RayJobSpec / RayClusterSpec
    it embeds as the spec of a RayJob / RayCluster (the fixture's header says why)."""
    cron = load(SCHEMA_FILE)["openAPIV3Schema"]
    job_spec = cron["properties"]["spec"]["properties"]["jobTemplate"]
    spec = {
        "RayCronJob": cron["properties"]["spec"],
        "RayJob": job_spec,
        "RayCluster": job_spec["properties"]["rayClusterSpec"],
    }[kind]
    properties = {name: cron["properties"][name] for name in ("apiVersion", "kind", "metadata")}
    return {"type": "object", "properties": {**properties, "spec": spec}, "required": ["spec"]}


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A structural schema with unknown fields refused, as kubectl's strict field validation
    refuses them (left alone, the API server would drop them without a word)."""
    schema = dict(schema)
    if "properties" in schema:
        schema["properties"] = {name: strict(sub) for name, sub in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            schema[key] = strict(schema[key])
    return schema


def list_map_keys(
    validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """x-kubernetes-list-type: map — no two items with the same keys (defaults applied)."""
    if not validator.is_type(instance, "array"):
        return
    fields = schema.get("items", {}).get("properties", {})
    seen: set[tuple[Any, ...]] = set()
    for item in instance:
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(name, fields.get(name, {}).get("default")) for name in keys)
        if key in seen:
            yield jsonschema.ValidationError(f"duplicate entry {dict(zip(keys, key, strict=True))}")
        seen.add(key)


Validator = jsonschema.validators.extend(
    jsonschema.Draft7Validator, {"x-kubernetes-list-map-keys": list_map_keys}
)
FORMATS = jsonschema.FormatChecker(formats=())
for _name, (_low, _high) in INT_RANGES.items():
    FORMATS.checks(_name)(
        lambda value, low=_low, high=_high: not isinstance(value, int) or low <= value <= high
    )


def crd_errors(manifest: dict[str, Any]) -> list[str]:
    """One line per place the manifest breaks its kind's schema (none: it passes)."""
    validator = Validator(strict(schema_for(manifest["kind"])), format_checker=FORMATS)
    lines = []
    for error in sorted(validator.iter_errors(manifest), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(part) for part in error.absolute_path) or "(top)"
        line = f"{where}: {error.message}"
        if error.validator == "additionalProperties" and str(
            error.schema.get("description", "")
        ).startswith("TRIMMED"):
            line += " — not in the vendored (trimmed) schema: if the CRD has it, copy its schema"
        lines.append(line)
    return lines


def rayjob() -> dict[str, Any]:
    return load(CLUSTER / "kuberay-rayjob.yaml")


# --- every manifest passes the CRD schema ------------------------------------------------


def test_cluster_holds_a_raycluster_a_rayjob_and_a_raycronjob() -> None:
    assert sorted(load(path)["kind"] for path in MANIFESTS) == [
        "RayCluster",
        "RayCronJob",
        "RayJob",
        "RayJob",  # kuberay-rayjob-gpu.yaml: the model on the cluster's own GPUs
    ]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_each_kuberay_manifest_passes_its_crd_schema(path: Path) -> None:
    manifest = load(path)
    assert manifest["apiVersion"] == "ray.io/v1"
    assert crd_errors(manifest) == []
    assert_no_secrets(manifest)


def spec_of(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda m: m["spec"].update(shutdownAfterJobFinish=True), "spec: Additional properties"),
        (
            lambda m: m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(replicas="2"),
            "spec.rayClusterSpec.workerGroupSpecs.0.replicas: '2' is not of type 'integer'",
        ),
        (
            lambda m: m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].pop("template"),
            "spec.rayClusterSpec.workerGroupSpecs.0: 'template' is a required property",
        ),
        (
            lambda m: m["spec"].update(ttlSecondsAfterFinished=2**31),
            "spec.ttlSecondsAfterFinished: 2147483648 is not a 'int32'",
        ),
        (
            lambda m: m["spec"]["rayClusterSpec"].update(authOptions={"mode": "tokens"}),
            "spec.rayClusterSpec.authOptions.mode: 'tokens' is not one of",
        ),
        (
            lambda m: m["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"][
                "containers"
            ][0]["ports"].append({"containerPort": 8265, "name": "again"}),
            "spec.rayClusterSpec.headGroupSpec.template.spec.containers.0.ports: duplicate entry",
        ),
        (
            lambda m: m["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"][
                "containers"
            ][0]["resources"]["requests"].update(memory="8 GiB"),
            "requests.memory: '8 GiB' does not match",
        ),
    ],
    ids=["misspelt-field", "wrong-type", "missing-required", "int32", "enum", "list-map", "qty"],
)
def test_the_schema_walk_refuses_what_the_api_server_refuses(change: Any, expected: str) -> None:
    manifest = copy.deepcopy(rayjob())
    change(manifest)
    errors = crd_errors(manifest)
    assert any(expected in line for line in errors), errors


def test_a_pod_field_the_trimmed_schema_lacks_is_named_as_such() -> None:
    manifest = copy.deepcopy(rayjob())
    manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["affinity"] = {}
    [line] = crd_errors(manifest)
    assert "'affinity' was unexpected" in line and "trimmed" in line


# --- the RayJob: extract to S3 on a cluster of its own, then shut down -------------------


def entrypoint_args(spec: dict[str, Any]) -> list[str]:
    words = shlex.split(spec["entrypoint"])
    assert words[:3] == ["python", "jobs/extract.py", "extract"], words
    return words[3:]


def test_the_rayjob_runs_extract_to_s3_with_the_fleets_worker_flags() -> None:
    from taguru_ray.cli.extract import build_parser

    spec = rayjob()["spec"]
    args = build_parser().parse_args(entrypoint_args(spec))  # every flag is extract's
    assert args.out.startswith("s3://") and all(p.startswith("s3://") for p in args.paths)
    [group] = spec["rayClusterSpec"]["workerGroupSpecs"]
    declared = yaml.safe_load(yaml.safe_load(group["rayStartParams"]["resources"]))
    assert args.worker_resource in declared  # the segment workers land on the spot group
    assert int(args.workers) >= group["replicas"]  # at least one per spot pod


def test_the_rayjob_shuts_its_cluster_down_and_passes_kuberays_own_checks() -> None:
    manifest = rayjob()
    spec = manifest["spec"]
    assert spec["shutdownAfterJobFinishes"] is True
    assert 0 <= spec["ttlSecondsAfterFinished"] <= 3600
    assert spec.get("activeDeadlineSeconds", 1) > 0
    assert "clusterSelector" not in spec  # a cluster of its own, deleted with the job
    # A name per run; the longest it gets still passes ValidateRayJobMetadata.
    prefix = manifest["metadata"]["generateName"]
    assert DNS_1035.match(prefix + "x2k9p")
    assert len(prefix) + GENERATED_SUFFIX <= MAX_RAYJOB_NAME


def test_the_rayjob_runs_jobs_runtime_env_from_the_images_checkout() -> None:
    from ray.runtime_env import RuntimeEnv

    spec = rayjob()["spec"]
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    # Ray's own validation; it checks that the working dir exists: in the image it does,
    # here the checkout stands in for it.
    RuntimeEnv(**{**runtime_env, "working_dir": str(REPO)})
    shipped = load(REPO / "jobs" / "runtime_env.yaml")
    assert {**runtime_env, "working_dir": "."} == shipped
    # The working dir is a path in the submitter's image (its upload needs K8sJobMode:
    # HTTPMode would hand Ray a path no node has).
    assert spec["submissionMode"] == "K8sJobMode"
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    assert f" {runtime_env['working_dir']}\n" in dockerfile  # COPY … /home/ray/taguru-ray


def test_the_rayjob_keeps_the_key_in_a_secret_and_the_cluster_behind_a_token() -> None:
    cluster = rayjob()["spec"]["rayClusterSpec"]
    # KubeRay's own token: it gives it to every pod, the submitter and its own polling.
    assert cluster["authOptions"] == {"mode": "token"}
    (head,) = cluster["headGroupSpec"]["template"]["spec"]["containers"]
    sources = {next(iter(ref)): ref[next(iter(ref))]["name"] for ref in head["envFrom"]}
    assert sources == {"configMapRef": "taguru-extract", "secretRef": "taguru-extract"}
    assert "TAGURU_EXTRACT_API_KEY" not in yaml.safe_dump(rayjob())


def without_token_env(cluster: dict[str, Any]) -> dict[str, Any]:
    """A cluster spec with its hand-made token setup taken out."""
    cluster = copy.deepcopy(cluster)
    cluster.pop("authOptions", None)
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for container in (c for g in groups for c in g["template"]["spec"]["containers"]):
        env = [e for e in container.get("env", []) if not e["name"].startswith("RAY_AUTH_")]
        container.pop("env", None)
        if env:
            container["env"] = env
    return cluster


def test_the_rayjobs_cluster_has_the_rayclusters_shape() -> None:
    raycluster = load(CLUSTER / "kuberay-raycluster.yaml")["spec"]
    # The same head, spot group, image and resources; only the token differs: a
    # RayCluster you manage takes yours from a Secret, KubeRay makes the RayJob's.
    assert without_token_env(rayjob()["spec"]["rayClusterSpec"]) == without_token_env(raycluster)


# --- the nightly RayCronJob -----------------------------------------------------------


def test_the_nightly_raycronjob_runs_the_rayjob_spec_once_a_day() -> None:
    cron = load(CLUSTER / "kuberay-raycronjob.yaml")
    assert cron["kind"] == "RayCronJob"
    spec = rayjob()["spec"]
    template = cron["spec"]["jobTemplate"]
    assert {**template, "entrypoint": spec["entrypoint"]} == spec
    # The night's job: the RayJob's extract with --prune, then import into a server (ADR 0083).
    words = shlex.split(template["entrypoint"])
    assert words[:2] == ["python", "jobs/nightly.py"]
    spec_ = importlib.util.spec_from_file_location("jobs_nightly", REPO / "jobs" / "nightly.py")
    assert spec_ is not None and spec_.loader is not None
    nightly = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(nightly)
    extract, target = nightly.split(words[2:])
    assert extract == ["--prune", *entrypoint_args(spec)]
    assert target[0] == "--url"
    minute, hour, *every = cron["spec"]["schedule"].split()
    assert minute.isdigit() and hour.isdigit() and every == ["*", "*", "*"]
    assert DNS_1035.match(cron["metadata"]["name"])
    # Nights never overlap: a run still going is failed well before the next one.
    assert cron["spec"]["jobTemplate"]["activeDeadlineSeconds"] < 20 * 3600
    assert len(cron["metadata"]["name"]) < MAX_RAYJOB_NAME  # room for the run's suffix


def test_the_image_is_the_ray_version_every_manifest_names() -> None:
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    launcher = load(CLUSTER / "aws-spot.yaml")
    assert f"FROM {launcher['docker']['image']}\n" in dockerfile
    for path in MANIFESTS:
        text = path.read_text()
        assert 'rayVersion: "2.60.0"' in text, path.name
        assert "taguru-ray:0.1.0-ray2.60.0-py311" in text, path.name


# --- the GPU RayJob: the model's own replicas on an autoscaled spot GPU group -----------


def gpu_rayjob() -> dict[str, Any]:
    return load(CLUSTER / "kuberay-rayjob-gpu.yaml")


def test_the_gpu_rayjob_starts_its_engine_on_the_gpu_group_it_declares() -> None:
    from taguru_ray.cli.extract import build_parser
    from taguru_ray.settings.resolve import resolve_settings

    spec = gpu_rayjob()["spec"]
    flags = vars(build_parser().parse_args(entrypoint_args(spec)))  # every flag is extract's
    env = yaml.safe_load(spec["runtimeEnvYAML"])["env_vars"]
    settings = resolve_settings(flags, env, lambda path: {})  # no URL, no key: the engine's
    serving = settings.serving
    assert serving.engine == "vllm" and settings.transport.model == env["TAGURU_EXTRACT_MODEL"]
    assert serving.engine_args == "--max-model-len 16384"
    cluster = spec["rayClusterSpec"]
    assert cluster["enableInTreeAutoscaling"] is True
    assert cluster["headGroupSpec"]["rayStartParams"]["num-gpus"] == "0"  # no replica there
    [gpu] = [g for g in cluster["workerGroupSpecs"] if "num-gpus" in g["rayStartParams"]]
    assert int(gpu["rayStartParams"]["num-gpus"]) == serving.engine_gpus
    declared = yaml.safe_load(yaml.safe_load(gpu["rayStartParams"]["resources"]))
    assert declared == {f"accelerator_type:{serving.engine_accelerator}": 1}
    (container,) = gpu["template"]["spec"]["containers"]
    for side in ("requests", "limits"):
        assert container["resources"][side]["nvidia.com/gpu"] == str(serving.engine_gpus)
    # From nothing, and room for every replica (and one replaced) at once.
    assert gpu["minReplicas"] == 0 == gpu["replicas"]
    assert gpu["maxReplicas"] > serving.engine_replicas
    assert "TAGURU_EXTRACT_API_KEY" not in yaml.safe_dump(gpu_rayjob())


def test_the_gpu_rayjob_is_the_rayjob_with_its_engine() -> None:
    spec, cpu = gpu_rayjob()["spec"], rayjob()["spec"]
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    shipped = yaml.safe_load(cpu["runtimeEnvYAML"])
    model = runtime_env["env_vars"].pop("TAGURU_EXTRACT_MODEL")
    assert runtime_env == shipped and "/" in model  # a Hugging Face id the replicas load
    for key in ("submissionMode", "shutdownAfterJobFinishes", "ttlSecondsAfterFinished"):
        assert spec[key] == cpu[key]
    [spot] = [g for g in spec["rayClusterSpec"]["workerGroupSpecs"] if g["groupName"] == "spot"]
    assert spot["rayStartParams"] == cpu["rayClusterSpec"]["workerGroupSpecs"][0]["rayStartParams"]
    dockerfile = (CLUSTER / "Dockerfile.gpu").read_text()
    assert "FROM rayproject/ray:2.60.0-py311-gpu\n" in dockerfile and " vllm\n" in dockerfile
