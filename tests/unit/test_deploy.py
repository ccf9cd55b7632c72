"""The files in deploy/ are well-formed: the Kubernetes manifest parses, wires its pieces
together (Secret, ConfigMap, migration Job, probes) and carries a config unigate loads; the
nginx site passes `nginx -t` with its paths pointed at temporary files; the systemd units have
the keys that matter and pass `systemd-analyze verify` where it is installed."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

from unigate.config_source import load_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NGINX = "/usr/sbin/nginx"


def _manifest() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "unigate.yaml").read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), "one object of each kind"
    return by_kind


def test_kubernetes_manifest_wires_config_secrets_probes_and_migrations(tmp_path: Path) -> None:
    k = _manifest()
    assert set(k) == {"Secret", "ConfigMap", "Job", "Deployment", "Service", "PodDisruptionBudget"}
    secret, config_map = k["Secret"], k["ConfigMap"]
    pod = k["Deployment"]["spec"]["template"]
    [container] = pod["spec"]["containers"]

    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["command"][:2] == ["unigate", "serve"]
    # Secrets reach the process as environment variables, from the Secret that holds them.
    assert container["envFrom"] == [{"secretRef": {"name": secret["metadata"]["name"]}}]
    assert {"UNIGATE_DATABASE_URL", "UNIGATE_REDIS_URL", "UNIGATE_ADMIN_KEY"} <= set(secret["stringData"])
    # The config file is the ConfigMap's key, mounted where --config points.
    config_path = Path(container["command"][container["command"].index("--config") + 1])
    [mount] = [m for m in container["volumeMounts"] if Path(m["mountPath"]) == config_path.parent]
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert config_path.name in config_map["data"]
    # ... and it is a config unigate accepts, with the Secret's values for ${VAR}.
    config_file = tmp_path / config_path.name
    config_file.write_text(config_map["data"][config_path.name])
    config = load_config(config_file, env=secret["stringData"])
    assert config.providers and config.models
    # The Service finds the pods; the migration Job runs `unigate migrate` on the same secrets.
    labels = pod["metadata"]["labels"]
    assert k["Service"]["spec"]["selector"].items() <= labels.items()
    assert k["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [migrate] = k["Job"]["spec"]["template"]["spec"]["containers"]
    assert migrate["command"] == ["unigate", "migrate"] and migrate["image"] == container["image"]
    assert migrate["envFrom"] == container["envFrom"]


def _substituted_site(tmp_path: Path) -> Path:
    """deploy/nginx/unigate.conf with its certificate, snippet and log paths in tmp_path."""
    ca = trustme.CA()
    cert = ca.issue_cert("gw.example.com")
    chain, key = tmp_path / "fullchain.pem", tmp_path / "privkey.pem"
    cert.private_key_pem.write_to_path(str(key))
    with chain.open("wb") as out:
        for blob in cert.cert_chain_pems:
            out.write(blob.bytes())
    site = (DEPLOY / "nginx" / "unigate.conf").read_text()
    for old, new in {
        "/etc/ssl/unigate/fullchain.pem": str(chain),
        "/etc/ssl/unigate/privkey.pem": str(key),
        "/etc/nginx/snippets/unigate-proxy.conf": str(DEPLOY / "nginx" / "unigate-proxy.conf"),
        "/var/log/nginx/": f"{tmp_path}/",
    }.items():
        assert old in site, old
        site = site.replace(old, new)
    path = tmp_path / "unigate.conf"
    path.write_text(site)
    return path


@pytest.mark.services
@pytest.mark.skipif(not os.access(NGINX, os.X_OK), reason="nginx not installed (scripts/test.sh installs it)")
def test_nginx_site_passes_nginx_t(tmp_path: Path) -> None:
    site = _substituted_site(tmp_path)
    temp = "".join(
        f"    {name}_temp_path {tmp_path / name};\n"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"pid {tmp_path / 'nginx.pid'};\nerror_log {tmp_path / 'error.log'};\nevents {{}}\n"
        f"http {{\n{temp}    access_log {tmp_path / 'access.log'};\n    include {site};\n}}\n"
    )
    run = subprocess.run(
        [NGINX, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 0 and "test is successful" in run.stderr, run.stderr
    assert "[warn]" not in run.stderr and "[emerg]" not in run.stderr, run.stderr


def _unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parser.read_string((DEPLOY / "systemd" / name).read_text())
    return parser


def test_systemd_units_have_the_keys_that_matter(tmp_path: Path) -> None:
    serve = _unit("unigate.service")
    assert serve["Unit"]["Description"] and serve["Install"]["WantedBy"] == "multi-user.target"
    service = serve["Service"]
    assert " serve " in service["ExecStart"] and "--config" in service["ExecStart"]
    assert service["EnvironmentFile"] and service["Restart"] in ("always", "on-failure")
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"  # a config reload without a restart
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes"}.items():
        assert service[key] == value, key
    assert service["StateDirectory"] == "unigate"  # the data dir, writable under ProtectSystem=strict
    migrate = _unit("unigate-migrate.service")["Service"]
    assert migrate["Type"] == "oneshot" and migrate["ExecStart"].endswith("unigate migrate")
    assert migrate["EnvironmentFile"] == service["EnvironmentFile"]
    # The environment file example names every setting the replicas must share.
    example = (DEPLOY / "systemd" / "unigate.env.example").read_text()
    for name in ("UNIGATE_DATABASE_URL", "UNIGATE_REDIS_URL", "UNIGATE_ADMIN_KEY", "UNIGATE_PUBLIC_URL"):
        assert f"\n{name}=" in example, name


@pytest.mark.services
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
@pytest.mark.parametrize("name", ["unigate.service", "unigate-migrate.service"])
def test_systemd_analyze_verify_finds_nothing(tmp_path: Path, name: str) -> None:
    # The binary must exist for verify: the unigate command of this environment stands in.
    unigate = Path(sys.executable).parent / "unigate"
    text = (DEPLOY / "systemd" / name).read_text().replace("/opt/unigate/.venv/bin/unigate", str(unigate))
    unit = tmp_path / name
    unit.write_text(text)
    run = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    # verify exits 0 even for keys it ignores; what it says about this file is the finding.
    said = [line for line in (run.stdout + run.stderr).splitlines() if str(unit) in line]
    assert not said, "\n".join(said)
